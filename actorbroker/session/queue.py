"""Session layer: the outbound queue policy of one session. Stdlib and codec only.

A delivery to a client goes out at once when it can: QoS 0 whenever the
client is connected; QoS 1/2 when the client is connected, nothing is queued
ahead of it, and fewer than ``max_inflight`` deliveries await
acknowledgement (Mosquitto's ``max_inflight_messages``, default 20). Anything
else waits in one FIFO queue, which is drained into the window as
acknowledgements free it and when the client reconnects. FIFO over the whole
queue keeps the order of every topic ([MQTT-4.6.0-6]).

Drop policy (Mosquitto's): the queue holds at most ``max_queued_messages``
deliveries and ``max_queued_bytes`` payload bytes (0 means no limit); a
delivery that does not fit is dropped, the queue is kept. QoS 0 to an
offline client is dropped unless ``queue_qos0`` (then it counts against the
same limits). Every drop is reported by the session as a
:class:`~actorbroker.session.effects.Dropped` effect with its reason.

Backpressure (docs/architecture.md): the queue is *pressed* at its
high-water mark, :data:`HIGH_WATER` messages or half of
``max_queued_messages`` if that is fewer, and half of ``max_queued_bytes``
when set; the session actor then holds back the publishers whose
messages it takes. While ``elastic`` is set (the actor sets it around a
delivery whose publisher it can hold back) the limits admit the delivery
anyway: what such publishers can still send is bounded by their read
credit, and the session holds them until the queue is below the mark again.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from .effects import DropReason
from .message import Delivery
from .packet_ids import MAX_PACKET_ID

__all__ = ["HIGH_WATER", "OutboundQueue", "QueuePolicy"]

#: The high-water mark in messages (or half the limit, if lower): enough to keep a
#: subscriber busy while its publishers resume (a loop turn or two), few enough that a
#: message waits about as long as in Mosquitto's short queues.
HIGH_WATER = 100


@dataclass(frozen=True, slots=True)
class QueuePolicy:
    """Limits of one session's outbound window and queue (0 means unlimited for the queue)."""

    max_inflight: int = 20
    max_queued_messages: int = 1000
    max_queued_bytes: int = 0
    queue_qos0: bool = False

    def __post_init__(self) -> None:
        if not 1 <= self.max_inflight <= MAX_PACKET_ID:
            raise ValueError(f"max_inflight must be in 1..{MAX_PACKET_ID}, not {self.max_inflight}")
        if self.max_queued_messages < 0 or self.max_queued_bytes < 0:
            raise ValueError("queue limits must be >= 0 (0 means unlimited)")


class OutboundQueue:
    """FIFO of deliveries waiting for the client or for the inflight window."""

    __slots__ = ("_bytes", "_items", "_mark", "_mark_bytes", "elastic", "policy", "popped",
                 "pressed")

    def __init__(self, policy: QueuePolicy = QueuePolicy()) -> None:
        self.policy = policy
        #: Admit deliveries beyond the limits (their publishers are held back instead).
        self.elastic = False
        #: Deliveries taken out of the queue so far (the session's progress).
        self.popped = 0
        #: At or above the high-water mark (see the module doc); kept current on every change,
        #: a plain attribute because the session reads it once per delivery.
        self.pressed = False
        limit = policy.max_queued_messages
        self._mark = min(HIGH_WATER, limit // 2) if limit else HIGH_WATER
        self._mark_bytes = policy.max_queued_bytes // 2 if policy.max_queued_bytes else 0
        # An empty deque is ~760 bytes and most sessions never queue anything (one per
        # client: 7 MiB for 10,000 clients): the deque comes with the first delivery queued.
        self._items: deque[Delivery] | tuple[()] = ()
        self._bytes = 0

    def offer(self, delivery: Delivery, *, online: bool) -> DropReason | None:
        """Append ``delivery``, or return why it is dropped instead (the queue is unchanged)."""
        policy = self.policy
        if delivery.qos == 0 and not online and not policy.queue_qos0:
            return DropReason.OFFLINE_QOS0
        size = delivery.message.size
        if not self.elastic and self.refuses(size):
            return DropReason.QUEUE_FULL
        items = self._items
        if not isinstance(items, deque):
            items = self._items = deque()
        items.append(delivery)
        self._bytes += size
        if not self.pressed:
            self.pressed = self._above()
        return None

    def refuses(self, size: int, count: int = 1) -> bool:
        """True if the limits refuse ``count`` more deliveries of ``size`` payload bytes in all
        now (whatever ``elastic`` says: the caller asks that first)."""
        policy = self.policy
        return bool((policy.max_queued_messages
                     and len(self._items) + count > policy.max_queued_messages)
                    or (policy.max_queued_bytes and self._bytes + size > policy.max_queued_bytes))

    def pop(self) -> Delivery:
        """The oldest delivery, removed (IndexError if empty)."""
        items = self._items
        if not isinstance(items, deque):
            raise IndexError("pop from an empty queue")
        delivery = items.popleft()
        self._bytes -= delivery.message.size
        self.popped += 1
        if self.pressed:
            self.pressed = self._above()
        return delivery

    def clear(self) -> list[Delivery]:
        """Remove and return every delivery, oldest first."""
        items = list(self._items)
        self._items = ()
        self._bytes = 0
        self.pressed = False
        return items

    def take(self, which: Callable[[Delivery], bool]) -> list[Delivery]:
        """Remove and return the deliveries ``which`` picks, oldest first; keep the others in order."""
        taken = [d for d in self._items if which(d)]
        if taken:
            kept = [d for d in self._items if not which(d)]
            self._items = deque(kept)
            self._bytes = sum(d.message.size for d in kept)
            self.pressed = self._above()
        return taken

    def _above(self) -> bool:
        return len(self._items) >= self._mark or bool(
            self._mark_bytes and self._bytes >= self._mark_bytes)

    @property
    def bytes(self) -> int:
        """Payload bytes queued."""
        return self._bytes

    def __iter__(self) -> Iterator[Delivery]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)
