"""Persistence layer: reading a commit log from another process (the data pipeline). Imports the stdlib and actorbroker.errors only.

    from actorbroker.persistence.reader import LogReader
    reader = LogReader("data/log")
    end = reader.end_offset()                # the committed offset, read once
    for entry in reader.read(start, end):    # LogEntry(offset, next_offset, record)
        ...
    resume_from = end                        # store it with your output

The broker may be appending meanwhile; the reader takes no lock and changes
nothing. By default it reads only below the ``written`` offset of the
committed file (:mod:`.committed`): those frames are complete and will not
change, so an offset always names the same record (exactly-once consumers
store offsets). With ``committed_only=False`` it reads every complete,
CRC-valid frame: never a torn one, but after a machine crash the broker may
truncate a tail it had not synced and reuse those offsets.

Segments deleted by retention while reading are skipped; records of unknown
types (a newer broker) are skipped by default; damaged frames below the
committed offset are skipped with the rest of their segment and listed in
:attr:`LogReader.problems`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from actorbroker.errors import CorruptRecordError

from .committed import read_committed
from .records import Record, UnknownRecord, decode_record
from .segment import FRAME, HEADER, FrameScan, check_header, file_reader, parse_segment_name

__all__ = ["LogEntry", "LogReader", "SegmentRef", "entries"]

_log = logging.getLogger("actorbroker.persistence")


@dataclass(frozen=True, slots=True)
class LogEntry:
    """A record read back, its offset and the offset just after it (where to resume)."""

    offset: int
    next_offset: int
    record: Record


@dataclass(frozen=True, slots=True)
class SegmentRef:
    """A segment file as listed: base offset, path, data bytes at listing time."""

    base: int
    path: Path
    size: int

    @property
    def end(self) -> int:
        return self.base + self.size


def entries(base: int, frames: Iterable[tuple[int, bytes]]) -> Iterator[LogEntry]:
    """Decode ``(position, payload)`` frames of the segment ``base`` into entries."""
    for position, payload in frames:
        offset = base + position
        yield LogEntry(offset, offset + FRAME.size + len(payload), decode_record(payload))


class LogReader:
    """Read-only access to a commit log directory (see the module docstring)."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        committed_only: bool = True,
        skip_unknown: bool = True,
    ) -> None:
        self.directory = Path(directory)
        self.committed_only = committed_only
        self.skip_unknown = skip_unknown
        #: What was skipped because it was damaged, one line each.
        self.problems: list[str] = []

    def end_offset(self) -> int | None:
        """Where a read without ``stop`` ends: the committed offset (None: the last valid frame).

        None too when ``committed_only`` is set but the log has no committed
        file (e.g. written by a broker in mode memory... or never opened).
        """
        if not self.committed_only:
            return None
        found = read_committed(self.directory)
        return None if found is None else found.written

    def segments(self) -> list[SegmentRef]:
        """The segment files present now, oldest first."""
        found = []
        for name in os.listdir(self.directory):
            base = parse_segment_name(name)
            if base is None:
                continue
            path = self.directory / name
            try:
                size = max(0, path.stat().st_size - HEADER.size)
            except FileNotFoundError:
                continue
            found.append(SegmentRef(base, path, size))
        return sorted(found, key=lambda s: s.base)

    def read(self, start: int | None = None, stop: int | None = None) -> Iterator[LogEntry]:
        """Entries with ``start <= offset < stop``; ``stop`` defaults to :meth:`end_offset`.

        ``start`` must be a record boundary (an ``offset`` or ``next_offset``
        read before); None means the oldest record still present.
        """
        if stop is None:
            stop = self.end_offset()
        listed = self.segments()
        for index, segment in enumerate(listed):
            if stop is not None and segment.base >= stop:
                return
            following = listed[index + 1].base if index + 1 < len(listed) else None
            if start is not None and following is not None and following <= start:
                continue
            yield from self.read_segment(segment.base, start, stop, last=following is None)

    def read_segment(
        self, base: int, start: int | None = None, stop: int | None = None, *, last: bool = True
    ) -> Iterator[LogEntry]:
        """Entries of one segment in ``[start, stop)``: one partition of a parallel read.

        ``last`` says the segment may still be growing, so that an incomplete
        frame at its end is not a problem when ``stop`` is None.
        """
        path = self.directory / f"{base:020d}.log"
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return  # deleted by retention
        try:
            problem = check_header(os.pread(fd, HEADER.size, 0), base)
            if problem is not None:
                if not (last and os.fstat(fd).st_size < HEADER.size):  # not just being created
                    self._problem(f"{path.name}: {problem}")
                return
            limit = os.fstat(fd).st_size - HEADER.size
            if stop is not None:
                limit = min(limit, stop - base)
            first = 0 if start is None else max(0, start - base)
            if first >= limit:
                return  # nothing of this segment is wanted (or left)
            scan = FrameScan(file_reader(fd), first, limit)
            for position, payload in scan:
                offset = base + position
                try:
                    record = decode_record(payload)
                except CorruptRecordError as exc:
                    self._problem(f"{path.name}: record at offset {offset} skipped: {exc}")
                    continue
                if not (isinstance(record, UnknownRecord) and self.skip_unknown):
                    yield LogEntry(offset, offset + FRAME.size + len(payload), record)
            self._check_end(path.name, base, scan, stop, last)
        finally:
            os.close(fd)

    def _check_end(self, name: str, base: int, scan: FrameScan, stop: int | None, last: bool) -> None:
        end = scan.end
        assert end is not None
        if end.clean or (stop is None and last):
            return  # the end of the data, or a frame still being written
        if stop is not None and base + end.position >= stop:
            return
        self._problem(f"{name}: {end.stop.value} frame at offset {base + end.position}; "
                      "the rest of the segment is skipped")

    def _problem(self, text: str) -> None:
        self.problems.append(text)
        _log.warning("commit log reader: %s", text)
