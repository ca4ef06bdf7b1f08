"""Session layer: the outbound QoS 1/2 deliveries awaiting acknowledgement. Stdlib and codec only.

:class:`Inflight` owns the broker-to-client packet identifiers of one session:
it allocates one per QoS 1/2 PUBLISH it sends, moves each through the
:mod:`~actorbroker.session.qos_outbound` table as acknowledgements arrive,
and frees it when the flow is done. Entries are kept in the order their
PUBLISHes were sent; an entry whose PUBREC arrived moves to the end, so that
a resend after reconnect writes PUBLISHes in their original order
([MQTT-4.6.0-1]) and PUBRELs in the order of their PUBRECs ([MQTT-4.6.0-3]).
The window size (how many may be in flight) is the caller's policy.

Each flow remembers whether its PUBLISH was handed to a connection
(``sent``): the session's actor reports with :meth:`Inflight.unsent` the
first PUBLISHes it never wrote (held for the commit log when the connection
closed), and their next send is then a first one, DUP=0 ([MQTT-3.3.1-1]).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, KeysView
from dataclasses import dataclass

from actorbroker.codec import Packet, PubAck, PubComp, PubRec, PubRel, Publish, ReasonCode
from actorbroker.codec.frozen import quick_init

from . import qos_outbound as table
from .message import Delivery
from .packet_ids import PacketIdAllocator
from .qos_outbound import OutboundState

__all__ = ["AckResult", "Inflight"]

_S = OutboundState


@dataclass(slots=True)
class _Entry:
    delivery: Delivery
    state: OutboundState
    sent: bool = True  # False: its PUBLISH never reached a connection (see the module doc)


@quick_init
@dataclass(frozen=True, slots=True)
class AckResult:
    """What an acknowledgement did: packets to answer with, and the delivery it completed."""

    reply: tuple[Packet, ...] = ()
    completed: Delivery | None = None


class Inflight:
    """Outbound QoS 1/2 deliveries by packet identifier, in send order."""

    __slots__ = ("_entries", "_ids")

    def __init__(self) -> None:
        self._entries: dict[int, _Entry] = {}
        self._ids = PacketIdAllocator()

    def start(self, delivery: Delivery, now: float) -> Publish:
        """Allocate a packet id for a QoS 1/2 ``delivery``; return the PUBLISH to send."""
        if delivery.qos not in (1, 2):
            raise ValueError(f"only QoS 1 and 2 deliveries go in flight, not QoS {delivery.qos}")
        packet_id = self._ids.allocate()
        event = table.SEND_QOS1 if delivery.qos == 1 else table.SEND_QOS2
        self._entries[packet_id] = _Entry(delivery, table.advance(table.INITIAL, event, packet_id))
        return delivery.to_publish(packet_id, now=now)

    def ack(self, packet: PubAck | PubRec | PubComp, *, level: int = 4) -> AckResult:
        """Apply an acknowledgement from the client.

        Unknown identifiers are tolerated: PUBACK and PUBCOMP are ignored, a
        PUBREC is answered with PUBREL anyway (MQTT 5: reason 0x92), as
        Mosquitto does, so the client can finish its side. Raises
        ProtocolError for a known identifier acknowledged with the wrong packet.
        """
        packet_id = packet.packet_id
        entry = self._entries.get(packet_id)
        if isinstance(packet, PubRec):
            if entry is None:
                code = ReasonCode.PACKET_IDENTIFIER_NOT_FOUND if level == 5 else 0
                return AckResult((PubRel(packet_id, code),))
            if packet.reason_code >= 0x80:
                entry.state = table.advance(entry.state, table.PUBREC_ERROR, packet_id)
                return AckResult((), self._finish(packet_id))
            entry.state = table.advance(entry.state, table.PUBREC, packet_id)
            self._entries[packet_id] = self._entries.pop(packet_id)  # now ordered by PUBREC
            return AckResult((PubRel(packet_id),))
        if entry is None:
            return AckResult()
        event = table.PUBACK if isinstance(packet, PubAck) else table.PUBCOMP
        entry.state = table.advance(entry.state, event, packet_id)
        return AckResult((), self._finish(packet_id))

    def _finish(self, packet_id: int) -> Delivery:
        entry = self._entries.pop(packet_id)
        assert entry.state is _S.DONE
        self._ids.release(packet_id)
        return entry.delivery

    def resend(self, now: float) -> list[Packet]:
        """Every unacknowledged PUBLISH and every PUBREL, in order ([MQTT-4.4.0-1]).

        A PUBLISH is sent again with DUP=1, except one that never reached a
        connection (:meth:`unsent`): DUP=0, the first attempt to send it
        ([MQTT-3.3.1-1]). Each counts as handed to the connection now; the
        caller reports any it keeps back (:meth:`unsent`).
        """
        packets: list[Packet] = []
        for packet_id, entry in self._entries.items():
            entry.state = table.advance(entry.state, table.RESEND, packet_id)
            if entry.state is _S.AWAIT_PUBCOMP:
                packets.append(PubRel(packet_id))
            else:
                # [MQTT-3.3.1-1]: DUP=1 only if the PUBLISH may have been received before.
                packets.append(entry.delivery.to_publish(packet_id, dup=entry.sent, now=now))
                entry.sent = True
        return packets

    def restore(self, packet_id: int, delivery: Delivery, *, released: bool, sent: bool) -> None:
        """Put back a flow the commit log kept, after those restored before it.

        ``released``: the client sent PUBREC (its PUBREL is resent);
        ``sent``: False if its PUBLISH was never written (:meth:`unsent`).
        ValueError for a QoS 0 delivery or a packet id already in use.
        """
        if delivery.qos not in (1, 2):
            raise ValueError(f"packet id {packet_id}: a QoS {delivery.qos} delivery in flight")
        event = table.SEND_QOS1 if delivery.qos == 1 else table.SEND_QOS2
        state = table.advance(table.INITIAL, event, packet_id)
        if released:
            state = table.advance(state, table.PUBREC, packet_id)
        self._ids.reserve(packet_id)
        self._entries[packet_id] = _Entry(delivery, state, sent)

    def unsent(self, packet_id: int) -> bool:
        """The PUBLISH of ``packet_id``'s flow was never written: its next send is a first one.

        False (nothing changes) for an unknown id and for a flow in the
        PUBREL stage (the client had the PUBLISH).
        """
        entry = self._entries.get(packet_id)
        if entry is None or entry.state is _S.AWAIT_PUBCOMP:
            return False
        entry.sent = False
        return True

    def handed(self, packet_id: int) -> None:
        """The PUBLISH of ``packet_id``'s flow goes to the connection now (a deferred resend)."""
        self._entries[packet_id].sent = True

    def clear(self) -> list[Delivery]:
        """Forget every flow; return the deliveries the client has not acknowledged.

        A delivery awaiting PUBCOMP is not among them: the client has it.
        """
        unacknowledged = [
            entry.delivery for entry in self._entries.values() if entry.state is not _S.AWAIT_PUBCOMP
        ]
        self._entries.clear()
        self._ids.clear()
        return unacknowledged

    def take(self, which: Callable[[Delivery, OutboundState], bool]) -> list[Delivery]:
        """Remove the flows ``which(delivery, state)`` picks, freeing their ids; return them in order.

        The caller behaves as if they were completed (MQTT 5: too large for
        a new connection) or gives them to someone else (shared subscriptions).
        """
        taken = [pid for pid, entry in self._entries.items() if which(entry.delivery, entry.state)]
        deliveries = []
        for packet_id in taken:
            deliveries.append(self._entries.pop(packet_id).delivery)
            self._ids.release(packet_id)
        return deliveries

    def state(self, packet_id: int) -> OutboundState | None:
        """The state of ``packet_id``'s flow, None if it has none."""
        entry = self._entries.get(packet_id)
        return None if entry is None else entry.state

    def delivery(self, packet_id: int) -> Delivery:
        """The delivery in flight under ``packet_id`` (KeyError if none)."""
        return self._entries[packet_id].delivery

    def __contains__(self, packet_id: object) -> bool:
        return packet_id in self._entries

    def __iter__(self) -> Iterator[int]:
        """Packet identifiers in resend order."""
        return iter(list(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def ids(self) -> KeysView[int]:
        """A live view of the packet identifiers in flight (testing it costs no Python call)."""
        return self._entries.keys()
