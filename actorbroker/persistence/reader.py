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
types (a newer broker) are skipped by default; a damaged range below the
committed offset is skipped up to the next frame that validates
(:mod:`.resync`) and listed in :attr:`LogReader.problems`.
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
from .resync import find_anchor, resume_after
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
            limit = os.fstat(fd).st_size - HEADER.size
            if stop is not None:
                limit = min(limit, stop - base)
            first = 0 if start is None else max(0, start - base)
            if first >= limit:
                if limit < 0 and not last:  # only the last one may be just being created
                    self._problem(f"{path.name}: shorter than its header")
                return  # nothing of this segment is wanted (or left)
            read_at = file_reader(fd)
            problem = check_header(os.pread(fd, HEADER.size, 0), base)
            if problem is not None:  # the frames may be intact: look for the first one
                anchor = find_anchor(read_at, first, limit)
                skipped = f"{base + first}..{base + (limit if anchor is None else anchor)}"
                self._problem(f"{path.name}: {problem}; offsets {skipped} skipped")
                if anchor is None:
                    return
                first = anchor
            while True:
                scan = FrameScan(read_at, first, limit)
                yield from self._entries(path.name, base, scan)
                end = scan.end
                assert end is not None
                if end.clean or (stop is None and last):
                    return  # the end of the data, or a frame still being written
                if stop is not None and base + end.position >= stop:
                    return
                resume, _ = resume_after(read_at, end, limit)  # damage: go on at the next frame
                skipped = f"{base + end.position}..{base + (limit if resume is None else resume)}"
                self._problem(f"{path.name}: {end.stop.value} frame at offset "
                              f"{base + end.position}; offsets {skipped} skipped")
                if resume is None:
                    return
                first = resume
        finally:
            os.close(fd)

    def _entries(self, name: str, base: int, scan: FrameScan) -> Iterator[LogEntry]:
        for position, payload in scan:
            offset = base + position
            try:
                record = decode_record(payload)
            except CorruptRecordError as exc:
                self._problem(f"{name}: record at offset {offset} skipped: {exc}")
                continue
            if not (isinstance(record, UnknownRecord) and self.skip_unknown):
                yield LogEntry(offset, offset + FRAME.size + len(payload), record)

    def _problem(self, text: str) -> None:
        self.problems.append(text)
        _log.warning("commit log reader: %s", text)
