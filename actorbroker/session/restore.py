"""Session layer: putting a durable session's flows back into a core, and taking one back. Stdlib and codec only.

The commit log keeps what MQTT calls the Session State beyond the
subscriptions (which :meth:`SessionCore.restore` takes back): the outbound
QoS 1/2 flows in flight, by packet identifier and stage, and the inbound
QoS 2 packet identifiers awaiting PUBREL. After a restart (of the broker
or of the session's actor) :func:`restore_flows` puts them back, so that
the next CONNECT resends each PUBLISH with DUP=1 under its old packet
identifier (DUP=0 for one never written before the connection ended), or
its PUBREL when the client already sent PUBREC ([MQTT-4.4.0-1]), and a retried inbound QoS 2 PUBLISH is acknowledged
without being routed twice ([MQTT-4.3.3-9]).

:func:`forget_inbound` undoes the QoS 2 receipt of a PUBLISH the broker
accepted but could not store (a full disk): the client's retry must be
routed, not taken for a duplicate.

These reach into the core's parts (same package); the core stays the only
owner of the state.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from . import qos_outbound as table
from .core import SessionCore
from .inflight import _Entry
from .lifecycle import SessionState
from .message import Delivery

__all__ = ["forget_inbound", "restore_flows"]


def restore_flows(core: SessionCore, flights: Iterable[tuple[int, Delivery, bool]],
                  inbound_qos2: Iterable[int], unsent: Collection[int] = ()) -> None:
    """Put back ``(packet id, delivery, released)`` flows in resend order and the inbound ids.

    ``released``: the client sent PUBREC (QoS 2): PUBREL is resent, never
    the PUBLISH. ``unsent``: packet ids of flows whose PUBLISH was never
    written (``SessionCore.unsent``): sent with DUP=0. Only for a
    DISCONNECTED core (after ``restore``).
    """
    if core.state is not SessionState.DISCONNECTED:
        raise ValueError(f"flows are restored into a DISCONNECTED core, not {core.state.name}")
    inflight = core._outbox.inflight  # noqa: SLF001
    for packet_id, delivery, released in flights:
        if delivery.qos not in (1, 2):
            raise ValueError(f"packet id {packet_id}: a QoS {delivery.qos} delivery in flight")
        event = table.SEND_QOS1 if delivery.qos == 1 else table.SEND_QOS2
        state = table.advance(table.INITIAL, event, packet_id)
        if released:
            state = table.advance(state, table.PUBREC, packet_id)
        inflight._ids.reserve(packet_id)  # noqa: SLF001
        inflight._entries[packet_id] = _Entry(  # noqa: SLF001
            delivery, state, released or packet_id not in unsent)
    qos2 = core._inbox.qos2  # noqa: SLF001
    for packet_id in inbound_qos2:
        qos2.publish(packet_id)


def forget_inbound(core: SessionCore, packet_id: int) -> None:
    """The QoS 2 PUBLISH ``packet_id`` was not stored: its retry is a new message."""
    qos2 = core._inbox.qos2  # noqa: SLF001
    if packet_id in qos2:
        qos2.release(packet_id)
