"""Actors layer: the storage actor's failure in force and its probes; log offsets that subscribers saw before a sync that failed, never given out again. Stdlib, persistence, session.

Runs on the storage actor's thread only.

In mode fsync the storage actor tells the senders of early Appends
``Durable(token, offsets, synced=False)`` once their batch is written and
before its fdatasync, and they route their QoS 1 messages with those
offsets. Should that fdatasync fail, the log rolls the batch back
(:meth:`~actorbroker.persistence.CommitLog.sync`) and would give the same
offsets to the next records, while subscribers hold messages that carry them
and may journal them (``OutboundSent``, ``SessionQueued``,
``SessionDropped``...). Two things keep such a record from ever naming
another message:

* :meth:`LostOffsets.pad`: before anything else is appended, filler records
  cover the lost range (type 0, an ``UnknownRecord`` that every reader and
  the fold skip), so no later record gets an offset in it;
* :meth:`LostOffsets.keep`: records that refer to the message at an offset
  in a lost range are left out of the log (the message was never stored;
  the subscriber's copy lives in its memory only, and the publisher, refused,
  sends it again).

Both are free until a sync fails after an early answer, which only an I/O
error at fdatasync time does (a full disk fails the write, before).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from actorbroker.errors import StorageError
from actorbroker.persistence import CommitLog
from actorbroker.persistence.records import Record, SessionCursor, UnknownRecord
from actorbroker.session.backoff import Backoff, BackoffPolicy

__all__ = ["FILLER_TYPE", "LostOffsets", "Outage"]

log = logging.getLogger("actorbroker.storage")

#: Type code of the filler records (no record type has it; readers skip unknown types).
FILLER_TYPE = 0
_FRAME_OVERHEAD = 8 + 12  # frame length + CRC, record envelope
_MAX_FILLER = 1 << 20  # body bytes per filler record


class LostOffsets:
    """The offset ranges given out early and lost with a failed sync (see the module doc)."""

    __slots__ = ("ranges", "until")

    def __init__(self) -> None:
        self.ranges: list[tuple[int, int]] = []
        self.until = 0  # no record may be appended below it

    def lost(self, start: int, end: int) -> None:
        """Offsets ``start`` to ``end`` were told early and then rolled back."""
        if end > start:
            self.ranges.append((start, end))
            self.until = max(self.until, end)

    def pad(self, log: CommitLog, timestamp_us: int) -> None:
        """Append fillers until the log's next offset is past every lost range.

        Raises what ``log.append`` raises (a full log): nothing else may be
        appended then.
        """
        while log.next_offset < self.until:
            gap = self.until - log.next_offset
            body = bytes(min(_MAX_FILLER, max(0, gap - _FRAME_OVERHEAD)))
            log.append([UnknownRecord(FILLER_TYPE, 1, body, timestamp_us=timestamp_us)])

    def _refers(self, record: Record) -> bool:
        offset = getattr(record, "offset", None)
        if offset is None or type(record) is SessionCursor:  # a cursor names no message
            return False
        return any(start <= offset < end for start, end in self.ranges)

    def keep(self, records: tuple[Record, ...]) -> tuple[tuple[Record, ...], list[int] | None]:
        """``records`` without those naming a lost message, and the positions of the kept ones
        (None when all are kept)."""
        if not self.ranges:
            return records, None
        positions = [i for i, record in enumerate(records) if not self._refers(record)]
        if len(positions) == len(records):
            return records, None
        return tuple(records[i] for i in positions), positions

    @staticmethod
    def align(count: int, positions: list[int] | None, offsets: list[int]) -> tuple[int, ...]:
        """Offsets for all ``count`` records of an Append (-1: left out), from the offsets of
        the kept ones at ``positions`` (None: all kept)."""
        if positions is None:
            return tuple(offsets)
        out = [-1] * count
        for position, offset in zip(positions, offsets):
            out[position] = offset
        return tuple(out)


class Outage:
    """The write or fsync failure in force (``error``), and probes for the end of it.

    While ``error`` is set every batch is refused without touching the disk,
    until a probe (a scratch file written and fsynced, retried with
    exponential backoff on batches and ticks) succeeds.
    """

    __slots__ = ("error", "_probe", "_next")

    def __init__(self, probe: BackoffPolicy) -> None:
        self.error: StorageError | None = None
        self._probe = Backoff(probe)
        self._next = 0.0

    def failed(self, error: StorageError) -> None:
        if self.error is None:
            log.error("storage: %s; QoS 1/2 publishes are refused until it can write again",
                      error)
        self.error = error
        self._next = time.monotonic() + self._probe.next()

    def writable(self, current: CommitLog, retain: Callable[[], object]) -> bool:
        """After a failure: probe when due (``retain`` first: it may free room)."""
        if time.monotonic() < self._next:
            return False
        retain()
        if current.probe():
            log.warning("storage: writing works again after %d probe(s); accepting publishes",
                        self._probe.attempt)
            self.error = None
            self._probe.reset()
            return True
        self._next = time.monotonic() + self._probe.next()
        return False
