"""Session layer: the broker-to-client half of the session core, as a mixin of SessionCore. Stdlib, codec and routing only.

:class:`~actorbroker.session.core.SessionCore` handles what the client sends
(inbound) and the lifecycle of its connections; this mixin holds the other
direction, driven by the rest of the broker rather than by the client: a
delivery from a topic, the connection's output backing up or draining, and
the registry's answers to SUBSCRIBE and UNSUBSCRIBE (SUBACK, then retained
messages; UNSUBACK), and the actor's report of PUBLISHes it never wrote.
It lives apart so that the core stays one readable module (docs/style.md:
under 400 lines); the methods are found on the class like any other, so :meth:`~OutboundRules.deliver`, the fan-out hot path, costs
no extra call.

:func:`send_effects` is the core's shared "a Send, then these effects"
helper; it lives here because the core imports this module, not the reverse.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from actorbroker.codec import Packet

from .config import coalesce
from .effects import DropReason, Dropped, Effect, Send
from .lifecycle import SessionState
from .link import Link
from .message import AppMessage, Delivery
from .outbox import Outbox
from .queue import OutboundQueue
from .subscriptions import SubscribeConfirmed, SubscriptionBook

__all__ = ["OutboundRules", "send_effects"]

_S = SessionState


def send_effects(packets: Sequence[Packet], extra: Iterable[Effect] = ()) -> list[Effect]:
    """A Send of ``packets`` (none if empty) followed by ``extra``."""
    effects: list[Effect] = [Send(tuple(packets))] if packets else []
    effects.extend(extra)
    return effects


class OutboundRules:
    """The broker-to-client half of :class:`~actorbroker.session.core.SessionCore` (see the module doc)."""

    # SessionCore's state, declared for the type checker (SessionCore sets it).
    protocol_level: int
    _state: SessionState
    _closing: bool
    _link: Link | None
    _book: SubscriptionBook
    _outbox: Outbox

    if TYPE_CHECKING:
        @property
        def attached(self) -> bool: ...

        def _outgoing(self, packets: Sequence[Packet]) -> Sequence[Packet]: ...

        def _deliver_retained(self, confirmed: SubscribeConfirmed,
                              retained: Sequence[AppMessage], now: float) -> list[Effect]: ...

    def deliver(
        self, message: AppMessage, qos: int, now: float, *, retain: bool = False
    ) -> list[Effect]:
        """Deliver ``message`` to this client through a subscription granted ``qos``.

        The delivery QoS is the lower of the two (section 3.8.4). ``retain`` is
        the RETAIN flag to send: False when forwarding a live message
        ([MQTT-3.3.1-9]), True for a retained message sent because of a new
        subscription ([MQTT-3.3.1-8]). Sent at once when attached and the
        window allows, else queued or dropped (see :mod:`.queue`).
        """
        delivery = Delivery(message, min(message.qos, qos), retain)
        if self._state is _S.ENDED:
            return [Dropped(message, delivery.qos, DropReason.SESSION_ENDED)]
        packets, dropped = self._outbox.deliver(delivery, now, online=self.attached)
        link = self._link  # MQTT 5 only: Topic Aliases (inline: the MQTT 3 hot path)
        return send_effects(packets if link is None else link.outgoing(packets), dropped)

    def deliver_now(
        self, messages: Sequence[AppMessage], qos: int, now: float
    ) -> list[Packet] | None:
        """The PUBLISHes to write at once for ``messages``, or None: :meth:`deliver` each.

        The fan-out fast path: the same packets as :meth:`deliver` would send,
        without its effects, when it would send each message at once and
        report nothing else: every delivery is QoS 0 (``qos`` or the
        message's is 0), the client is attached and its output not held, no
        message has expired, and (MQTT 5) no Topic Alias or Maximum Packet
        Size applies. Each PUBLISH is the message's shared one (RETAIN 0,
        [MQTT-3.3.1-9]). Nothing changes state here.
        """
        link = self._link
        outbox = self._outbox
        if (outbox.held or self._state is not _S.CONNECTED or self._closing  # not attached
                or (link is not None and (link.outbound.maximum or outbox.fits is not None))):
            return None
        packets: list[Packet] = []
        for message in messages:
            if (qos and message.qos) or message.expired(now):
                return None
            packets.append(message.to_publish(qos=0, now=now))
        return packets

    def unsent(self, packet_ids: Iterable[int]) -> list[int]:
        """The actor never wrote the first PUBLISH of these flows (its connection closed first).

        Their next send (the resend when a connection attaches) is then the
        first attempt, DUP=0 ([MQTT-3.3.1-1]); a flow whose PUBLISH was
        written keeps DUP=1. Returns the ids it marked: those still in
        flight before their PUBREL stage.
        """
        inflight = self._outbox.inflight
        return [packet_id for packet_id in packet_ids if inflight.unsent(packet_id)]

    @property
    def queue(self) -> OutboundQueue:
        """The queue itself: ``pressed`` and ``elastic`` are the session actor's backpressure
        (docs/architecture.md); the same object for the core's lifetime."""
        return self._outbox.queue

    def hold_output(self) -> None:
        """The connection is congested: queue every delivery (QoS 0 too, within the limits).

        The transport reports congestion; QoS 0 then waits instead of being
        written into a connection that cannot take it, and a full queue drops
        (and reports) like any other ([MQTT-4.6.0-6] order is kept).
        """
        self._outbox.held = True

    def release_output(self, now: float, limit: int | None = None) -> list[Effect]:
        """The connection drained: send up to ``limit`` queued deliveries the window takes.

        Call :meth:`hold_output` again if the connection congests meanwhile.
        """
        self._outbox.held = False
        if not self.attached:
            return []
        packets, dropped = self._outbox.drain(now, limit)
        return send_effects(self._outgoing(packets), dropped)

    def subscribed(
        self,
        packet_id: int,
        results: Sequence[int] | None,
        retained: Sequence[AppMessage],
        now: float,
    ) -> list[Effect]:
        """The registry added the subscriptions of SUBSCRIBE ``packet_id``.

        ``results``: one code per subscription of the RequestSubscribe (the
        granted QoS, or >= 0x80 refused), None for "all as asked";
        ``retained``: the retained messages matching the granted filters.
        Sends the SUBACK, then each retained message with RETAIN=1 at the
        highest QoS granted to a filter of this SUBSCRIBE matching its topic
        ([MQTT-3.8.4-3], [MQTT-3.3.1-8]), among the filters whose Retain
        Handling asks for it (MQTT 5: 1 only for a new subscription, 2 never,
        [MQTT-3.3.1-9], [MQTT-3.3.1-10]); with the SUBSCRIBE's Subscription
        Identifier if it had one.
        """
        if self._state is _S.ENDED:
            return []
        confirmed = self._book.subscribed(packet_id, results)
        effects: list[Effect] = []
        if confirmed.reply and self.attached:
            effects.append(Send((confirmed.suback,)))
        if not confirmed.granted:
            return effects  # refused, or answered after its session state was discarded
        effects += self._deliver_retained(confirmed, retained, now)
        return coalesce(effects)

    def unsubscribed(self, packet_id: int, now: float) -> list[Effect]:
        """The registry removed the filters of UNSUBSCRIBE ``packet_id``: send UNSUBACK."""
        if self._state is _S.ENDED:
            return []
        unsuback, reply = self._book.unsubscribed(packet_id, level=self.protocol_level)
        return [Send((unsuback,))] if reply and self.attached else []
