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
"""

from __future__ import annotations

from collections.abc import Iterator

from actorbroker.codec import Packet, PubAck, PubComp, PubRec

from .effects import DropReason, Dropped
from .inflight import Inflight
from .message import Delivery
from .qos_outbound import OutboundState
from .queue import OutboundQueue, QueuePolicy

__all__ = ["Outbox"]


class Outbox:
    """The inflight window and the queue of one session."""

    __slots__ = ("held", "inflight", "policy", "queue")

    def __init__(self, policy: QueuePolicy) -> None:
        self.policy = policy
        self.inflight = Inflight()
        self.queue = OutboundQueue(policy)
        self.held = False

    def deliver(
        self, delivery: Delivery, now: float, *, online: bool
    ) -> tuple[list[Packet], list[Dropped]]:
        """Send, queue or drop ``delivery``: (packets to send, drops)."""
        message = delivery.message
        if message.expired(now):
            return [], [Dropped(message, delivery.qos, DropReason.EXPIRED)]
        if online and not self.held:
            if delivery.qos == 0:
                return [delivery.to_publish(now=now)], []
            if not self.queue and self.policy.window_open(len(self.inflight)):
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
        queue, inflight, window_open = self.queue, self.inflight, self.policy.window_open
        left = -1 if limit is None else limit
        while queue and window_open(len(inflight)) and left:
            left -= 1
            delivery = queue.pop()
            if delivery.message.expired(now):
                dropped.append(Dropped(delivery.message, delivery.qos, DropReason.EXPIRED))
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
        if result.completed is None:
            return packets, []
        drained, dropped = self.drain(now)
        return packets + drained, dropped

    def resume(self, now: float) -> tuple[list[Packet], list[Dropped]]:
        """On reconnect: every unacknowledged PUBLISH (DUP=1) and PUBREL, then the queue."""
        self.held = False  # a new connection: nothing backs up yet
        packets = self.inflight.resend(now)
        drained, dropped = self.drain(now)
        return packets + drained, dropped

    def discard(self) -> list[Dropped]:
        """Forget everything; report each delivery the client has not acknowledged."""
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
