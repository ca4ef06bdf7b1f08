"""Persistence layer: checking and repairing a commit log directory when it is opened. Imports the stdlib and actorbroker.errors only.

Rules (docs/storage.md, "Recovery"): the broker always starts.

* A segment's frames are scanned up to the first invalid one. Damage at or
  above the ``synced`` offset of the committed file is a **torn tail** (data
  never acknowledged as durable): the file is truncated at the last complete
  frame and a warning logged. Without a committed file, the same holds for
  damage at the end of the last segment (an incomplete frame, a bad frame
  that ends the file, or zeros up to the end).
* Any other damage is **corruption**: the segment is moved to
  ``quarantine/`` (with a ``.reason`` file next to it), its valid prefix is
  copied back under the original name so that no good record is lost, and
  an error is logged. The records after the damage stay in the quarantined
  copy only.
* A segment with an unreadable header is quarantined whole, unless it is the
  last one and empty or all zeros (created just before a crash): removed.
* Offsets missing between two segments (a deleted or quarantined segment, a
  truncated middle segment) are a **gap**: reported; readers skip it.
* Offsets are never reused: the next append goes at or above the end of
  every segment seen, quarantined ones included, and the synced offset.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from .segment import (
    HEADER,
    FrameScan,
    ScanEnd,
    Stop,
    check_header,
    file_reader,
    parse_segment_name,
    segment_name,
)

__all__ = [
    "QUARANTINE_DIR",
    "Event",
    "RecoveredSegment",
    "RecoveryEvent",
    "RecoveryReport",
    "fsync_dir",
    "recover",
]

QUARANTINE_DIR = "quarantine"
_SALVAGE = ".salvage"
_log = logging.getLogger("actorbroker.persistence")


class Event(Enum):
    """What recovery found (and did)."""

    TORN_TAIL = "torn tail truncated"
    QUARANTINED = "segment quarantined"
    REMOVED_EMPTY = "empty segment removed"
    GAP = "gap between segments"
    COMMITTED_LOST = "committed data missing"


@dataclass(frozen=True, slots=True)
class RecoveryEvent:
    """One finding: the segment (base), the offset concerned, bytes lost, details."""

    event: Event
    base: int
    offset: int
    lost_bytes: int
    detail: str

    def __str__(self) -> str:
        return (f"{self.event.value}: segment {segment_name(self.base)} at offset "
                f"{self.offset}, {self.lost_bytes} bytes: {self.detail}")


@dataclass(frozen=True, slots=True)
class RecoveredSegment:
    """A live segment after recovery: its base and its valid data size."""

    base: int
    size: int


@dataclass(frozen=True, slots=True)
class RecoveryReport:
    """The live segments in order, what was found, and where the next append goes."""

    segments: tuple[RecoveredSegment, ...]
    events: tuple[RecoveryEvent, ...]
    next_offset: int

    @property
    def clean(self) -> bool:
        return not self.events

    def of(self, event: Event) -> list[RecoveryEvent]:
        return [e for e in self.events if e.event is event]


def fsync_dir(path: Path) -> None:
    """Make renames, creations and deletions in ``path`` durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def recover(directory: Path, synced: int | None, *, verify_all: bool = True) -> RecoveryReport:
    """Check every segment of ``directory``, repair what must be, report the rest.

    ``synced`` is the synced offset of the committed file (None when there is
    none). With ``verify_all`` False, segments that end at or below
    ``synced`` are trusted without reading them.
    """
    _finish_salvages(directory)
    bases = sorted(b for b in (parse_segment_name(n) for n in os.listdir(directory)) if b is not None)
    events: list[RecoveryEvent] = []
    live: list[RecoveredSegment] = []
    seen_end = 0  # end of every segment seen, quarantined ones included
    for index, base in enumerate(bases):
        path = directory / segment_name(base)
        found = _check_segment(directory, path, base, synced, index == len(bases) - 1,
                               verify_all, live)
        size: int | None = None
        if isinstance(found, RecoveryEvent):
            events.append(found)
            seen_end = max(seen_end, found.offset + found.lost_bytes)
            if found.event is Event.QUARANTINED and found.offset > base:
                size = found.offset - base  # the salvaged prefix stays live
        elif isinstance(found, tuple):
            size = found[0]
            events.append(found[1])
        else:
            size = found
        if size is not None:
            live.append(RecoveredSegment(base, size))
            seen_end = max(seen_end, base + size)
    for before, after in zip(live, live[1:]):
        if before.base + before.size < after.base:
            gap = after.base - before.base - before.size
            events.append(_report(Event.GAP, before.base, before.base + before.size, gap,
                                  f"no data until segment {segment_name(after.base)}"))
    if synced is not None and synced > seen_end:
        events.append(_report(Event.COMMITTED_LOST, live[-1].base if live else 0, seen_end,
                              synced - seen_end,
                              f"the log ends at {seen_end} but {synced} was committed"))
    return RecoveryReport(tuple(live), tuple(events), max(seen_end, synced or 0))


def _check_segment(
    directory: Path, path: Path, base: int, synced: int | None, is_last: bool,
    verify_all: bool, live: list[RecoveredSegment],
) -> int | RecoveryEvent | tuple[int, RecoveryEvent]:
    """The valid size of one segment, an event that replaces it, or both (size, torn tail)."""
    fd = os.open(path, os.O_RDWR)
    try:
        file_size = os.fstat(fd).st_size
        head = os.pread(fd, HEADER.size, 0)
        problem = check_header(head, base)
        if problem is not None:
            if is_last and (file_size < HEADER.size or _zeros(fd, 0, file_size)):
                os.close(fd)
                fd = -1
                os.unlink(path)
                fsync_dir(directory)
                return _report(Event.REMOVED_EMPTY, base, base, 0, problem)
            lost = max(0, file_size - HEADER.size)
            moved = _try_quarantine(directory, path, fd, 0, f"{problem}; nothing salvaged")
            return _report(Event.QUARANTINED, base, base, lost, f"{problem}; {moved}")
        limit = file_size - HEADER.size
        if live and live[-1].base + live[-1].size > base:
            moved = _try_quarantine(directory, path, fd, 0, "overlaps the segment before it")
            return _report(Event.QUARANTINED, base, base, limit,
                           f"overlaps the segment before it; {moved}")
        if not verify_all and synced is not None and base + limit <= synced:
            return limit
        scan = FrameScan(file_reader(fd), 0, limit)
        for _ in scan:
            pass
        end = scan.end
        assert end is not None
        if end.clean:
            return limit
        where = base + end.position
        if _is_torn(fd, end, limit, where, synced, is_last):
            os.ftruncate(fd, HEADER.size + end.position)
            os.fsync(fd)
            return end.position, _report(Event.TORN_TAIL, base, where, limit - end.position,
                                         f"{end.stop.value} frame; truncated there")
        why = f"{end.stop.value} frame at offset {where}, below the synced offset {synced}"
        if synced is None:
            why = f"{end.stop.value} frame at offset {where}, followed by more data"
        moved = _try_quarantine(directory, path, fd, end.position, why)
        return _report(Event.QUARANTINED, base, where, limit - end.position,
                       f"{why}; {moved}; the {end.position} bytes before it stay live")
    finally:
        if fd >= 0:
            os.close(fd)


def _is_torn(fd: int, end: ScanEnd, limit: int, where: int, synced: int | None, is_last: bool) -> bool:
    if synced is not None:
        return where >= synced
    if not is_last:
        return False
    if end.stop is Stop.INCOMPLETE or (end.stop is Stop.BAD_CRC and end.frame_end == limit):
        return True
    return _zeros(fd, HEADER.size + end.position, limit - end.position)


def _zeros(fd: int, position: int, count: int) -> bool:
    """True when the file bytes [position, position + count) are all zero."""
    while count > 0:
        chunk = os.pread(fd, min(count, 1 << 20), position)
        if not chunk or chunk.strip(b"\0"):
            return not chunk
        position += len(chunk)
        count -= len(chunk)
    return True


def _try_quarantine(directory: Path, path: Path, fd: int, keep: int, reason: str) -> str:
    """Quarantine, or say why the segment stays where it is (e.g. a full disk).

    A segment left in place is read only up to its damage, appends go after
    its end, and the next opening tries again: the log starts either way.
    """
    try:
        quarantine(directory, path, fd, keep, reason)
    except OSError as exc:
        return f"could not be moved to {QUARANTINE_DIR}/ ({exc.strerror or exc}), left in place"
    return f"moved to {QUARANTINE_DIR}/"


def quarantine(directory: Path, path: Path, fd: int, keep: int, reason: str) -> Path:
    """Move a segment to quarantine/, leaving its first ``keep`` data bytes live.

    Crash-safe: the prefix goes to ``NAME.salvage`` first (fsynced), then the
    segment moves, then the salvage takes its name; a crash in between is
    finished by :func:`_finish_salvages` at the next open.
    """
    qdir = directory / QUARANTINE_DIR
    qdir.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target = qdir / f"{path.name}.{stamp}"
    count = 1
    while target.exists():
        count += 1
        target = qdir / f"{path.name}.{stamp}.{count}"
    salvage = path.with_name(path.name + _SALVAGE)
    try:
        if keep > 0:
            _copy_prefix(fd, salvage, HEADER.size + keep)
        os.rename(path, target)
    except OSError:
        salvage.unlink(missing_ok=True)  # the segment is untouched
        raise
    try:
        (qdir / (target.name + ".reason")).write_text(reason + "\n")
    except OSError as exc:
        _log.error("cannot write %s.reason: %s", target, exc)
    fsync_dir(qdir)
    if keep > 0:
        os.rename(salvage, path)
    fsync_dir(directory)
    return target


def _copy_prefix(fd: int, target: Path, count: int) -> None:
    out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        position = 0
        while position < count:
            chunk = os.pread(fd, min(count - position, 1 << 20), position)
            if not chunk:
                break
            view = memoryview(chunk)
            while view:
                view = view[os.write(out, view):]
            position += len(chunk)
        os.fsync(out)
    finally:
        os.close(out)


def _finish_salvages(directory: Path) -> None:
    """Complete or drop a quarantine that a crash interrupted."""
    for name in os.listdir(directory):
        if not name.endswith(_SALVAGE):
            continue
        salvage = directory / name
        segment = directory / name[: -len(_SALVAGE)]
        if segment.exists():
            salvage.unlink()  # the segment was not moved yet: it will be checked again
        else:
            os.rename(salvage, segment)
        fsync_dir(directory)


def _report(event: Event, base: int, offset: int, lost: int, detail: str) -> RecoveryEvent:
    found = RecoveryEvent(event, base, offset, lost, detail)
    level = logging.ERROR if event in (Event.QUARANTINED, Event.COMMITTED_LOST) else logging.WARNING
    _log.log(level, "commit log recovery: %s", found)
    return found
