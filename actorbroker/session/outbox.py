"""Session layer: everything on its way from the broker to one client. Stdlib and codec only.

:class:`Outbox` combines the inflight window (:class:`~.inflight.Inflight`)
and the queue (:class:`~.queue.OutboundQueue`) under one
:class:`~.queue.QueuePolicy`: a delivery is sent when the client is
connected and the window allows, queued otherwise, dropped (and reported)
when the policy says so. It returns packets to send and ``Dropped`` effects;
whether a connection is attached is the caller's to say.

``held`` is set while the client's connection is congested (its output is
backing up): every delivery then waits in the queue, QoS 0 included, within
the same limits (Mosquitto queues QoS 0 for a slow online client the same
way), and nothing is drained until the caller releases it.

MQTT 5 (set per connection by the core): ``window`` is the inflight limit,
the broker's ``max_inflight`` lowered to the client's Receive Maximum
([MQTT-3.3.4-9]); ``fits``, when set, says whether a delivery is within
the client's Maximum Packet Size: one that is not is dropped for this
client (``too_large``) before it takes a packet identifier, as if it had
been sent ([MQTT-3.1.2-25]). :meth:`Outbox.take_shared` hands back what
came through a shared subscription and the client does not have yet. A
reconnect whose window is smaller than what is in flight resends the
flows the window takes and holds the others (``deferred``) until acks
free room: never more unacknowledged than the client allows.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator

from actorbroker.codec import Packet, PubAck, PubComp, PubRec, Publish

from .effects import DropReason, Dropped
from .inflight import Inflight
from .message import Delivery, Delivery5
from .qos_outbound import OutboundState
from .queue import OutboundQueue, QueuePolicy

__all__ = ["Outbox"]


class Outbox:
    """The inflight window and the queue of one session."""

    __slots__ = ("deferred", "fits", "held", "inflight", "policy", "queue", "window")

    def __init__(self, policy: QueuePolicy) -> None:
        self.policy = policy
        self.inflight = Inflight()
        self.queue = OutboundQueue(policy)
        self.held = False
        self.window = policy.max_inflight
        self.fits: Callable[[Delivery], bool] | None = None
        self.deferred: deque[Packet] = deque()  # resends the window did not take yet

    def deliver(
        self, delivery: Delivery, now: float, *, online: bool
    ) -> tuple[list[Packet], list[Dropped]]:
        """Send, queue or drop ``delivery``: (packets to send, drops)."""
        message = delivery.message
        if message.expired(now):
            return [], [Dropped(message, delivery.qos, DropReason.EXPIRED)]
        if online and not self.held:
            fits = self.fits
            if fits is not None and not fits(delivery):
                return [], [Dropped(message, delivery.qos, DropReason.TOO_LARGE)]
            if delivery.qos == 0:
                return [delivery.to_publish(now=now)], []
            if not self.queue and len(self.inflight) < self.window:
                return [self.inflight.start(delivery, now)], []
        reason = self.queue.offer(delivery, online=online)
        return [], ([] if reason is None else [Dropped(message, delivery.qos, reason)])

    def drain(self, now: float, limit: int | None = None) -> tuple[list[Packet], list[Dropped]]:
        """Move queued deliveries into the window, oldest first: (packets to send, drops).

        Nothing while ``held``; at most ``limit`` deliveries when given.
        """
        packets: list[Packet] = []
        dropped: list[Dropped] = []
        if self.held:
            return packets, dropped
        queue, inflight, window, fits = self.queue, self.inflight, self.window, self.fits
        left = -1 if limit is None else limit
        while queue and len(inflight) < window and left:
            left -= 1
            delivery = queue.pop()
            if delivery.message.expired(now):
                dropped.append(Dropped(delivery.message, delivery.qos, DropReason.EXPIRED))
            elif fits is not None and not fits(delivery):
                dropped.append(Dropped(delivery.message, delivery.qos, DropReason.TOO_LARGE))
            elif delivery.qos == 0:
                packets.append(delivery.to_publish(now=now))
            else:
                packets.append(inflight.start(delivery, now))
        return packets, dropped

    def ack(
        self, packet: PubAck | PubRec | PubComp, now: float, *, level: int
    ) -> tuple[list[Packet], list[Dropped]]:
        """Apply an acknowledgement; refill the window if it freed a slot.

        Raises ProtocolError when the client acknowledged a known packet id
        with the wrong packet (see :mod:`.qos_outbound`).
        """
        result = self.inflight.ack(packet, level=level)
        packets = list(result.reply)
        deferred = self.deferred
        if deferred:  # the client acknowledged a flow whose resend still waits: not needed
            self.deferred = deferred = deque(
                p for p in deferred if getattr(p, "packet_id", None) != packet.packet_id)
        if result.completed is None:
            return packets, []
        if deferred:  # resend one if the client has fewer unacknowledged than its maximum
            if len(self.inflight) - len(deferred) < self.window:
                resent = deferred.popleft()
                if isinstance(resent, Publish) and not resent.dup and resent.packet_id is not None:
                    self.inflight.handed(resent.packet_id)
                packets.append(resent)
            return packets, []
        drained, dropped = self.drain(now)
        return packets + drained, dropped

    def resume(self, now: float) -> tuple[list[Packet], list[Dropped]]:
        """On reconnect: every unacknowledged PUBLISH (DUP=1, or 0 if it was never written)
        and PUBREL, then the queue."""
        self.held = False  # a new connection: nothing backs up yet
        too_large: list[Dropped] = []
        fits = self.fits
        if fits is not None:  # the new connection may take smaller packets
            for delivery in self.inflight.take(lambda d, _: not fits(d)):
                too_large.append(Dropped(delivery.message, delivery.qos, DropReason.TOO_LARGE))
        packets = self.inflight.resend(now)
        self.deferred = deque(packets[self.window:])  # [MQTT-3.3.4-9]
        for packet in self.deferred:  # not handed over yet: a first send stays one
            if isinstance(packet, Publish) and not packet.dup and packet.packet_id is not None:
                self.inflight.unsent(packet.packet_id)
        packets = packets[:self.window]
        drained, dropped = self.drain(now)
        return packets + drained, too_large + dropped

    def take_shared(self) -> list[Delivery5]:
        """Remove and return the QoS 1/2 deliveries of shared subscriptions the client lacks.

        That is every queued one and each QoS 1 one in flight (no PUBACK
        yet), oldest first. A QoS 2 delivery in flight stays: it must be
        completed with this client ([MQTT-4.8.2-4]) and never sent to
        another ([MQTT-4.8.2-5]).
        """
        def shared(delivery: Delivery, state: OutboundState) -> bool:
            return (isinstance(delivery, Delivery5) and delivery.group is not None
                    and state is OutboundState.AWAIT_PUBACK)
        taken = self.inflight.take(shared)
        taken += self.queue.take(lambda d: shared(d, OutboundState.AWAIT_PUBACK) and d.qos > 0)
        return [d for d in taken if isinstance(d, Delivery5)]

    def discard(self) -> list[Dropped]:
        """Forget everything; report each delivery the client has not acknowledged."""
        self.deferred.clear()
        return [
            Dropped(d.message, d.qos, DropReason.SESSION_ENDED)
            for d in (*self.inflight.clear(), *self.queue.clear())
        ]

    def flights(self) -> Iterator[tuple[int, Delivery, OutboundState]]:
        """(packet id, delivery, state) of each flow, in resend order."""
        for packet_id in self.inflight:
            state = self.inflight.state(packet_id)
            assert state is not None
            yield packet_id, self.inflight.delivery(packet_id), state
