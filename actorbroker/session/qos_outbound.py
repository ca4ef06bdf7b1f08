"""Session layer: QoS 1 and QoS 2 flows from broker to client, as a transition table. Stdlib and codec only.

One state per outbound packet identifier (sections 4.3.2 and 4.3.3):

    PENDING --SEND_QOS1--> AWAIT_PUBACK --PUBACK--> DONE
    PENDING --SEND_QOS2--> AWAIT_PUBREC --PUBREC--> AWAIT_PUBCOMP --PUBCOMP--> DONE
    AWAIT_PUBREC --PUBREC_ERROR--> DONE           (MQTT 5: PUBREC reason >= 0x80, no PUBREL)
    AWAIT_PUBCOMP --PUBREC--> AWAIT_PUBCOMP       duplicate PUBREC: PUBREL again
    AWAIT_* --RESEND--> same state                reconnect: PUBLISH with DUP=1, or PUBREL
                                                  ([MQTT-4.4.0-1]); DUP=0 for a PUBLISH
                                                  never written ([MQTT-3.3.1-1], inflight.py)

Events are the acknowledgement packet names plus the broker's own
``SEND_QOS1``, ``SEND_QOS2``, ``PUBREC_ERROR`` and ``RESEND``. An
acknowledgement of the wrong kind for a known identifier (PUBACK for a QoS 2
flow, PUBCOMP before PUBREC) is the client's protocol error: :func:`advance`
raises :class:`~actorbroker.codec.ProtocolError` and the connection closes,
as Mosquitto does. Acknowledgements for unknown identifiers never reach this
table: they are tolerated by the caller.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from types import MappingProxyType
from typing import Final

from actorbroker.codec import ProtocolError

__all__ = [
    "CHART_NAME",
    "CHART_TITLE",
    "INITIAL",
    "PUBACK",
    "PUBCOMP",
    "PUBREC",
    "PUBREC_ERROR",
    "RESEND",
    "SEND_QOS1",
    "SEND_QOS2",
    "TRANSITIONS",
    "OutboundState",
    "advance",
]


class OutboundState(Enum):
    """Where one broker-to-client QoS 1/2 delivery stands."""

    PENDING = "pending"  # packet id taken, PUBLISH not yet written
    AWAIT_PUBACK = "await_puback"  # QoS 1 PUBLISH sent
    AWAIT_PUBREC = "await_pubrec"  # QoS 2 PUBLISH sent
    AWAIT_PUBCOMP = "await_pubcomp"  # PUBREC received, PUBREL sent
    DONE = "done"  # acknowledged: packet id free again


SEND_QOS1: Final = "SEND_QOS1"
SEND_QOS2: Final = "SEND_QOS2"
PUBACK: Final = "PUBACK"
PUBREC: Final = "PUBREC"
PUBREC_ERROR: Final = "PUBREC_ERROR"
PUBCOMP: Final = "PUBCOMP"
RESEND: Final = "RESEND"

CHART_NAME: Final = "qos_outbound"
CHART_TITLE: Final = "QoS 1/2 broker to client, per packet id (actorbroker.session.qos_outbound)"
INITIAL: Final = OutboundState.PENDING

_S = OutboundState
TRANSITIONS: Final[Mapping[tuple[OutboundState, str], OutboundState]] = MappingProxyType({
    (_S.PENDING, SEND_QOS1): _S.AWAIT_PUBACK,
    (_S.PENDING, SEND_QOS2): _S.AWAIT_PUBREC,
    (_S.AWAIT_PUBACK, PUBACK): _S.DONE,
    (_S.AWAIT_PUBACK, RESEND): _S.AWAIT_PUBACK,
    (_S.AWAIT_PUBREC, PUBREC): _S.AWAIT_PUBCOMP,
    (_S.AWAIT_PUBREC, PUBREC_ERROR): _S.DONE,
    (_S.AWAIT_PUBREC, RESEND): _S.AWAIT_PUBREC,
    (_S.AWAIT_PUBCOMP, PUBREC): _S.AWAIT_PUBCOMP,
    (_S.AWAIT_PUBCOMP, PUBCOMP): _S.DONE,
    (_S.AWAIT_PUBCOMP, RESEND): _S.AWAIT_PUBCOMP,
})


def advance(state: OutboundState, event: str, packet_id: int = 0) -> OutboundState:
    """The state after ``event``.

    Raises:
        ProtocolError: the client acknowledged ``packet_id`` with the wrong
            packet for where its flow stands (reason 0x82).
    """
    try:
        return TRANSITIONS[(state, event)]
    except KeyError:
        raise ProtocolError(
            f"(section 4.3) {event} for packet identifier {packet_id},"
            f" whose delivery is in state {state.name}"
        ) from None
