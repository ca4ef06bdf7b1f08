"""Durability layer: a compact queue of log offsets, the RAM index of an offline session's messages. Stdlib only.

An offline durable session's messages live in the commit log; RAM holds
only where they are. :class:`OffsetQueue` keeps one entry per message in
four typed arrays (17 bytes an entry, against about 200 for a queued
``AppMessage`` and its ``Delivery``):

* ``offset`` (8 bytes): where the ``PublishAccepted`` record is in the log;
* ``meta`` (1 byte): the delivery QoS (bits 0-1), the RETAIN flag to send
  (bit 2), and the removed mark (bit 7);
* ``size`` (4 bytes): payload bytes, for ``max_queued_bytes``;
* ``topic`` (4 bytes): an id in the owner's topic table (0: unknown), so
  that an UNSUBSCRIBE can drop what no filter matches any more.

Two uses: the fold keeps every durable session's entries sorted by offset
(:meth:`insert`, :meth:`remove` by offset, both O(log n) to find, removal
marks and compacts lazily); a session actor drains a copy from the head as
a FIFO (:meth:`append`, :meth:`pop`).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterator
from typing import NamedTuple

__all__ = ["Entry", "OffsetQueue"]

_REMOVED = 0x80
_RETAIN = 0x04


class Entry(NamedTuple):
    """One queued message: log offset, delivery QoS, RETAIN to send, payload bytes, topic id."""

    offset: int
    qos: int
    retain: bool
    size: int
    topic: int = 0


def _meta(qos: int, retain: bool) -> int:
    return (qos & 3) | (_RETAIN if retain else 0)


class OffsetQueue:
    """Queued messages as log offsets (see the module doc). ``len()`` counts live entries."""

    __slots__ = ("_dead", "_head", "_meta", "_offsets", "_sizes", "_topics", "bytes", "count")

    def __init__(self) -> None:
        self._offsets = array("q")
        self._meta = array("B")
        self._sizes = array("I")
        self._topics = array("I")
        self._head = 0  # entries before it are gone
        self._dead = 0  # removed entries at or after the head
        #: Live entries, and their payload bytes.
        self.count = 0
        self.bytes = 0

    # -- FIFO use (a session actor's spool) ---------------------------------------

    def append(self, entry: Entry) -> None:
        """Add ``entry`` at the tail, whatever its offset."""
        self._offsets.append(entry.offset)
        self._meta.append(_meta(entry.qos, entry.retain))
        self._sizes.append(min(entry.size, 0xFFFFFFFF))
        self._topics.append(entry.topic)
        self.count += 1
        self.bytes += entry.size

    def pop(self) -> Entry:
        """Remove and return the entry at the head (IndexError when empty)."""
        self._skip_removed()
        if self._head >= len(self._offsets):
            raise IndexError("pop from an empty OffsetQueue")
        entry = self._entry(self._head)
        self._head += 1
        self.count -= 1
        self.bytes -= entry.size
        self._maybe_compact()
        return entry

    def peek(self) -> Entry | None:
        """The entry at the head, None when empty."""
        self._skip_removed()
        return self._entry(self._head) if self._head < len(self._offsets) else None

    # -- sorted use (the fold) ------------------------------------------------------

    def insert(self, entry: Entry) -> bool:
        """Add ``entry`` in offset order; False (nothing changed) if its offset is queued."""
        offsets = self._offsets
        if not offsets or entry.offset > offsets[-1]:
            self.append(entry)
            return True
        index = bisect_left(offsets, entry.offset, self._head)
        if index < len(offsets) and offsets[index] == entry.offset:
            if not self._meta[index] & _REMOVED:
                return False
            self._meta[index] = _meta(entry.qos, entry.retain)  # revive a removed slot
            self._sizes[index] = min(entry.size, 0xFFFFFFFF)
            self._topics[index] = entry.topic
            self._dead -= 1
        else:
            offsets.insert(index, entry.offset)
            self._meta.insert(index, _meta(entry.qos, entry.retain))
            self._sizes.insert(index, min(entry.size, 0xFFFFFFFF))
            self._topics.insert(index, entry.topic)
        self.count += 1
        self.bytes += entry.size
        return True

    def remove(self, offset: int) -> bool:
        """Remove the entry of ``offset`` (sorted use only); False if it is not queued."""
        index = self._find(offset)
        if index < 0:
            return False
        self._kill(index)
        self._skip_removed()
        self._maybe_compact()
        return True

    def take(self, offset: int) -> Entry | None:
        """Remove and return the entry of ``offset`` (sorted use only), None if it is not queued."""
        index = self._find(offset)
        if index < 0:
            return None
        entry = self._entry(index)
        self._kill(index)
        self._skip_removed()
        self._maybe_compact()
        return entry

    def __contains__(self, offset: object) -> bool:
        return isinstance(offset, int) and self._find(offset) >= 0

    def _find(self, offset: int) -> int:
        offsets = self._offsets
        index = bisect_left(offsets, offset, self._head)
        if index < len(offsets) and offsets[index] == offset and not self._meta[index] & _REMOVED:
            return index
        return -1

    # -- both -------------------------------------------------------------------------

    def first_offset(self) -> int | None:
        """The offset at the head (sorted use: the lowest queued), None when empty."""
        head = self.peek()
        return None if head is None else head.offset

    def prune(self, keep: Callable[[int], bool]) -> list[Entry]:
        """Remove every entry whose topic id ``keep`` refuses (id 0 is always kept); return them."""
        gone = []
        for index in range(self._head, len(self._offsets)):
            topic = self._topics[index]
            if topic and not self._meta[index] & _REMOVED and not keep(topic):
                gone.append(self._entry(index))
                self._kill(index)
        self._skip_removed()
        self._maybe_compact()
        return gone

    def clear(self) -> list[Entry]:
        """Remove every entry; return them, oldest first."""
        entries = list(self)
        for name in ("_offsets", "_meta", "_sizes", "_topics"):
            setattr(self, name, array(getattr(self, name).typecode))
        self._head = self._dead = self.count = self.bytes = 0
        return entries

    def copy(self) -> OffsetQueue:
        """An independent queue of the live entries."""
        twin = OffsetQueue()
        for entry in self:
            twin.append(entry)
        return twin

    def __iter__(self) -> Iterator[Entry]:
        for index in range(self._head, len(self._offsets)):
            if not self._meta[index] & _REMOVED:
                yield self._entry(index)

    def __len__(self) -> int:
        return self.count

    def __bool__(self) -> bool:
        return self.count > 0

    # -- internals --------------------------------------------------------------------

    def _entry(self, index: int) -> Entry:
        meta = self._meta[index]
        return Entry(self._offsets[index], meta & 3, bool(meta & _RETAIN), self._sizes[index],
                     self._topics[index])

    def _kill(self, index: int) -> None:
        self._meta[index] |= _REMOVED
        self._dead += 1
        self.count -= 1
        self.bytes -= self._sizes[index]

    def _skip_removed(self) -> None:
        meta, head, end = self._meta, self._head, len(self._offsets)
        while head < end and meta[head] & _REMOVED:
            head += 1
            self._dead -= 1
        self._head = head

    def _maybe_compact(self) -> None:
        total = len(self._offsets)
        if self._head + self._dead <= max(32, total // 2):
            return
        keep = [i for i in range(self._head, total) if not self._meta[i] & _REMOVED]
        for name in ("_offsets", "_meta", "_sizes", "_topics"):
            old = getattr(self, name)
            setattr(self, name, array(old.typecode, (old[i] for i in keep)))
        self._head = self._dead = 0
