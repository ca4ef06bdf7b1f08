"""Persistence layer: checking and repairing a commit log directory when it is opened. Imports the stdlib and actorbroker.errors only.

Rules (docs/storage.md, "Recovery"): the broker always starts, and loses no
more than the damaged bytes.

* A segment's frames are scanned; at a damaged frame the scan resumes at the
  next frame that validates (:mod:`.resync`), so the segment is known as
  runs of intact frames and the damaged ranges between them.
* Damage at or above the ``synced`` offset of the committed file is a
  **torn tail** (data never acknowledged as durable): the file is truncated
  there and a warning logged. Without a committed file, the same holds for
  damage in the last segment that no valid frame follows (a crash
  mid-write leaves a partial frame, zeros or garbage up to the end).
* Any other damage is **corruption**: the segment is moved to
  ``quarantine/`` (with a ``.reason`` file) for forensics, and each run of
  intact frames is written back as a segment of its own, under the offset
  of its first frame (:mod:`.quarantine`): only the damaged ranges are lost,
  and they become gaps. Each range is logged as an error with its offsets,
  its size and the frames lost when that is known.
* A segment with an unreadable header is searched for frames the same way;
  it is quarantined whole only when none is found, unless it is the last one
  and empty or all zeros (created just before a crash): removed.
* Offsets missing between two segments (a deleted segment, a damaged range)
  are a **gap**: reported; readers skip it.
* Offsets are never reused: the next append goes at or above the end of
  every segment seen, quarantined ones included, and the synced offset.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from .quarantine import QUARANTINE_DIR, finish_salvages, fsync_dir, quarantine
from .resync import Damage, FrameMap, Run, find_anchor, map_frames
from .segment import HEADER, Stop, check_header, file_reader, parse_segment_name, segment_name

__all__ = [
    "QUARANTINE_DIR",
    "Event",
    "RecoveredSegment",
    "RecoveryEvent",
    "RecoveryReport",
    "fsync_dir",
    "recover",
]

_log = logging.getLogger("actorbroker.persistence")


class Event(Enum):
    """What recovery found (and did)."""

    TORN_TAIL = "torn tail truncated"
    QUARANTINED = "segment quarantined"
    DAMAGED = "damaged range skipped"
    REMOVED_EMPTY = "empty segment removed"
    GAP = "gap between segments"
    COMMITTED_LOST = "committed data missing"


@dataclass(frozen=True, slots=True)
class RecoveryEvent:
    """One finding: the segment (base), the offset concerned, bytes lost, details.

    ``frames`` is how many frames were lost when that is known (a damaged
    range whose frame length led to the next frame: 1), else None.
    """

    event: Event
    base: int
    offset: int
    lost_bytes: int
    detail: str
    frames: int | None = None

    def __str__(self) -> str:
        return (f"{self.event.value}: segment {segment_name(self.base)} at offset "
                f"{self.offset}, {self.lost_bytes} bytes: {self.detail}")


@dataclass(frozen=True, slots=True)
class RecoveredSegment:
    """A live segment after recovery: its base and its valid data size."""

    base: int
    size: int

    @property
    def end(self) -> int:
        return self.base + self.size


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


@dataclass(slots=True)
class _Found:
    """What checking one segment gave: the live pieces, the events, the offsets it spanned."""

    pieces: list[RecoveredSegment]
    events: list[RecoveryEvent]
    end: int


def recover(directory: Path, synced: int | None, *, verify_all: bool = True) -> RecoveryReport:
    """Check every segment of ``directory``, repair what must be, report the rest.

    ``synced`` is the synced offset of the committed file (None when there is
    none). With ``verify_all`` False, segments that end at or below
    ``synced`` are trusted without reading them.
    """
    finish_salvages(directory)
    bases = sorted(b for b in (parse_segment_name(n) for n in os.listdir(directory)) if b is not None)
    events: list[RecoveryEvent] = []
    live: list[RecoveredSegment] = []
    seen_end = 0  # end of every segment seen, quarantined ones included
    for index, base in enumerate(bases):
        found = _check_segment(directory, base, synced, index == len(bases) - 1, verify_all,
                               live[-1].end if live else None)
        live += found.pieces
        events += found.events
        seen_end = max(seen_end, found.end)
    for before, after in zip(live, live[1:]):
        if before.end < after.base:
            events.append(_report(Event.GAP, before.base, before.end, after.base - before.end,
                                  f"no data until segment {segment_name(after.base)}"))
    if synced is not None and synced > seen_end:
        events.append(_report(Event.COMMITTED_LOST, live[-1].base if live else 0, seen_end,
                              synced - seen_end,
                              f"the log ends at {seen_end} but {synced} was committed"))
    return RecoveryReport(tuple(live), tuple(events), max(seen_end, synced or 0))


def _check_segment(directory: Path, base: int, synced: int | None, is_last: bool,
                   verify_all: bool, live_end: int | None) -> _Found:
    """The live pieces of one segment and what was found in it."""
    path = directory / segment_name(base)
    fd = os.open(path, os.O_RDWR)
    try:
        file_size = os.fstat(fd).st_size
        limit = max(0, file_size - HEADER.size)
        problem = check_header(os.pread(fd, HEADER.size, 0), base)
        if problem is not None and is_last and (file_size < HEADER.size or _zeros(fd, 0, file_size)):
            os.close(fd)
            fd = -1
            os.unlink(path)
            fsync_dir(directory)
            return _Found([], [_report(Event.REMOVED_EMPTY, base, base, 0, problem)], base)
        if live_end is not None and live_end > base:
            why = "overlaps the segment before it"
            return _Found([], [_quarantine(directory, path, fd, base, base, [], why, limit)[0]],
                          base + limit)
        if problem is None and not verify_all and synced is not None and base + limit <= synced:
            return _Found([RecoveredSegment(base, limit)], [], base + limit)
        read_at = file_reader(fd)
        if problem is None:
            frames = map_frames(read_at, 0, limit)
        else:  # the header says nothing: look for frames from the first data byte on
            first = find_anchor(read_at, 0, limit)
            frames = map_frames(read_at, first, limit) if first is not None else FrameMap((), ())
            frames = FrameMap(frames.runs, (Damage(0, limit if first is None else first,
                                                   Stop.BAD_LENGTH, None), *frames.damage))
        return _settle(directory, path, fd, base, frames, limit, synced, is_last, problem)
    finally:
        if fd >= 0:
            os.close(fd)


def _settle(directory: Path, path: Path, fd: int, base: int, frames: FrameMap, limit: int,
            synced: int | None, is_last: bool, problem: str | None) -> _Found:
    """Truncate a torn tail, quarantine around corruption, keep every intact run."""
    torn = next((d for d in frames.damage if d.size and _is_torn(d, frames, base, synced, is_last)),
                None)
    corrupt = [d for d in frames.damage if d.size and (torn is None or d.start < torn.start)]
    keep = frames.runs if torn is None else tuple(r for r in frames.runs if r.end <= torn.start)
    end = limit if torn is None else torn.start
    events = []
    if not corrupt and problem is None:
        if torn is not None:
            os.ftruncate(fd, HEADER.size + torn.start)
            os.fsync(fd)
            events.append(_torn(base, torn, frames, synced, limit))
        return _Found([RecoveredSegment(base, end)], events, base + end)  # the file stays
    why = "; ".join([*([problem] if problem else []), *(_describe(base, d, synced) for d in corrupt)])
    first = base if problem is not None else base + corrupt[0].start
    quarantined, moved = _quarantine(directory, path, fd, base, first, list(keep), why, limit)
    if not moved:  # read only up to the first damage
        prefix = keep[0].end if keep and keep[0].start == 0 and problem is None else 0
        return _Found([RecoveredSegment(base, prefix)] if prefix else [], [quarantined], base + limit)
    events = [quarantined]
    for damage in corrupt:
        events.append(_report(Event.DAMAGED, base, base + damage.start, damage.size,
                              _describe(base, damage, synced), damage.frames))
    if torn is not None:
        events.append(_torn(base, torn, frames, synced, limit))
    pieces = [RecoveredSegment(base + r.start, r.end - r.start) for r in keep]
    return _Found(pieces, events, base + (limit if torn is None else torn.start))


def _is_torn(damage: Damage, frames: FrameMap, base: int, synced: int | None,
             is_last: bool) -> bool:
    """Damage never acknowledged as durable: at or above ``synced``; without a committed
    file, damage that ends the last segment with no valid frame after it."""
    if synced is not None:
        return base + damage.start >= synced
    return is_last and damage is frames.tail


def _torn(base: int, torn: Damage, frames: FrameMap, synced: int | None,
          limit: int) -> RecoveryEvent:
    after = sum(r.frames for r in frames.runs if r.start >= torn.end)
    detail = f"{torn.stop.value} frame; truncated there"
    if synced is not None:
        detail += f" (above the synced offset {synced}"
        detail += f", {after} valid frames after it dropped too)" if after else ")"
    return _report(Event.TORN_TAIL, base, base + torn.start, limit - torn.start, detail)


def _describe(base: int, damage: Damage, synced: int | None) -> str:
    """One damaged range in words: where, how big, what was lost, where reading resumed."""
    text = (f"{damage.stop.value} frame at offset {base + damage.start}: offsets "
            f"{base + damage.start}..{base + damage.end} ({damage.size} bytes) lost")
    if damage.frames is not None:
        text += f", {damage.frames} frame{'s' if damage.frames != 1 else ''}"
    if synced is not None:
        text += f", below the synced offset {synced}"
    return text


def _quarantine(directory: Path, path: Path, fd: int, base: int, offset: int, keep: list[Run],
                why: str, limit: int) -> tuple[RecoveryEvent, bool]:
    """Quarantine the segment keeping ``keep`` (True), or say why it stays where it is (a full disk).

    A segment left in place is read only up to its first damage, appends go
    after its end, and the next opening tries again: the log starts either way.
    """
    kept = sum(r.end - r.start for r in keep)
    try:
        quarantine(directory, path, fd, base, [(r.start, r.end) for r in keep], why)
        moved, where = True, f"moved to {QUARANTINE_DIR}/"
    except OSError as exc:
        moved = False
        where = f"could not be moved to {QUARANTINE_DIR}/ ({exc.strerror or exc}), left in place"
    frames = sum(r.frames for r in keep)
    detail = (f"{why}; {where}; {frames} intact frames ({kept} bytes) in {len(keep)} "
              f"run{'s' if len(keep) != 1 else ''} stay live" if keep else
              f"{why}; {where}; nothing salvaged")
    return _report(Event.QUARANTINED, base, offset, limit - kept, detail), moved


def _zeros(fd: int, position: int, count: int) -> bool:
    """True when the file bytes [position, position + count) are all zero."""
    while count > 0:
        chunk = os.pread(fd, min(count, 1 << 20), position)
        if not chunk or chunk.strip(b"\0"):
            return not chunk
        position += len(chunk)
        count -= len(chunk)
    return True


def _report(event: Event, base: int, offset: int, lost: int, detail: str,
            frames: int | None = None) -> RecoveryEvent:
    found = RecoveryEvent(event, base, offset, lost, detail, frames)
    level = logging.WARNING if event in (Event.TORN_TAIL, Event.REMOVED_EMPTY, Event.GAP) else logging.ERROR
    _log.log(level, "commit log recovery: %s", found)
    return found
