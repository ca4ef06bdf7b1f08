"""Session layer: the QoS 2 flow from client to broker, as a transition table. Stdlib and codec only.

The broker is the receiver and follows "Method B" of section 4.3.3 (figure
4.3): it passes the message on (routes it) when the PUBLISH first arrives,
stores the packet identifier, and answers PUBREC. Until the PUBREL comes, a
PUBLISH with the same identifier is the sender's retry of the same message:
it is acknowledged with PUBREC again and *not* routed again
([MQTT-4.3.3-9] (3.1.1: [MQTT-4.3.3-2])). PUBREL frees the identifier and is
answered with PUBCOMP, also when the identifier is unknown (the PUBCOMP was
lost and the client retries its PUBREL after a reconnect).

    UNKNOWN --PUBLISH--> AWAIT_PUBREL        route, PUBREC
    AWAIT_PUBREL --PUBLISH--> AWAIT_PUBREL   duplicate: PUBREC only
    AWAIT_PUBREL --PUBREL--> COMPLETE        PUBCOMP; the id may be used again
    UNKNOWN --PUBREL--> COMPLETE             PUBCOMP (MQTT 5: reason 0x92)

:class:`InboundQoS2` keeps the identifiers in AWAIT_PUBREL; every other
identifier is UNKNOWN (COMPLETE is UNKNOWN again, a fresh flow may start).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from enum import Enum
from types import MappingProxyType
from typing import Final

from actorbroker.codec import ProtocolError

__all__ = [
    "CHART_NAME",
    "CHART_TITLE",
    "INITIAL",
    "PUBLISH",
    "PUBREL",
    "TRANSITIONS",
    "InboundQoS2",
    "InboundState",
    "advance",
]


class InboundState(Enum):
    """Where one client-to-broker QoS 2 packet identifier stands."""

    UNKNOWN = "unknown"  # no QoS 2 flow uses the id
    AWAIT_PUBREL = "await_pubrel"  # message routed, PUBREC sent
    COMPLETE = "complete"  # PUBREL answered with PUBCOMP


PUBLISH: Final = "PUBLISH"
PUBREL: Final = "PUBREL"

CHART_NAME: Final = "qos_inbound"
CHART_TITLE: Final = "QoS 2 client to broker, per packet id, method B (actorbroker.session.qos_inbound)"
INITIAL: Final = InboundState.UNKNOWN

_S = InboundState
TRANSITIONS: Final[Mapping[tuple[InboundState, str], InboundState]] = MappingProxyType({
    (_S.UNKNOWN, PUBLISH): _S.AWAIT_PUBREL,
    (_S.AWAIT_PUBREL, PUBLISH): _S.AWAIT_PUBREL,
    (_S.AWAIT_PUBREL, PUBREL): _S.COMPLETE,
    (_S.UNKNOWN, PUBREL): _S.COMPLETE,
})


def advance(state: InboundState, event: str) -> InboundState:
    """The state after ``event``; ProtocolError if ``state`` does not accept it."""
    try:
        return TRANSITIONS[(state, event)]
    except KeyError:
        raise ProtocolError(f"(section 4.3.3) {event} in QoS 2 state {state.name}") from None


class InboundQoS2:
    """The packet identifiers of QoS 2 PUBLISHes received and not yet released."""

    __slots__ = ("_awaiting",)

    def __init__(self) -> None:
        self._awaiting: set[int] = set()

    def _state(self, packet_id: int) -> InboundState:
        return _S.AWAIT_PUBREL if packet_id in self._awaiting else _S.UNKNOWN

    def publish(self, packet_id: int) -> bool:
        """A QoS 2 PUBLISH arrived: True on first receipt (route it), False for a retry."""
        before = self._state(packet_id)
        advance(before, PUBLISH)
        self._awaiting.add(packet_id)
        return before is _S.UNKNOWN

    def release(self, packet_id: int) -> bool:
        """A PUBREL arrived: True if the identifier was awaiting it."""
        before = self._state(packet_id)
        advance(before, PUBREL)
        self._awaiting.discard(packet_id)
        return before is _S.AWAIT_PUBREL

    def clear(self) -> None:
        """Forget every identifier (the session state was discarded)."""
        self._awaiting.clear()

    def __contains__(self, packet_id: object) -> bool:
        return packet_id in self._awaiting

    def __iter__(self) -> Iterator[int]:
        return iter(sorted(self._awaiting))

    def __len__(self) -> int:
        return len(self._awaiting)
