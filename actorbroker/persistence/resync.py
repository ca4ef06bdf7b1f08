"""Persistence layer: finding the valid frames of a damaged segment (resynchronising after damage). Imports the stdlib and actorbroker.errors only.

Frames carry no offset or marker of their own (docs/storage.md, "Segment
files"), so after a bad frame the next good one has to be found by
content. A position ``q`` is taken as the start of a frame (an *anchor*)
only when everything a frame promises holds there:

* a length in ``MIN_PAYLOAD..MAX_PAYLOAD`` whose frame ends inside the data;
* a record envelope of a type and version this code knows (an
  :class:`~.records.UnknownRecord` is no anchor: filler records and zeros
  would pass for one);
* a body that decodes;
* the CRC over length and payload.

Random bytes pass the first two and the CRC about once in 2**47 positions,
before the length has to fit and the body to decode. What can pass is a
real frame stored *inside* the payload of another record (a segment file
published as an MQTT payload): found only when that record's own header is
the damaged part, since a search stops at the first anchor and an intact
record's header comes before its payload. When the damaged frame's length
field is intact (damage in its payload), the search tries the position that
length points at first, so the payload of the damaged record is never
searched in that case.

:func:`map_frames` walks ``[start, limit)`` with :class:`~.segment.FrameScan`
and, at each damaged spot, resumes at the next anchor: the result is the
runs of valid frames and the damaged ranges between them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from actorbroker.errors import CorruptRecordError

from .records import RECORD_TYPES, UnknownRecord, decode_record
from .segment import FRAME, MAX_PAYLOAD, MIN_PAYLOAD, FrameScan, ReadAt, ScanEnd, Stop

__all__ = ["Damage", "FrameMap", "Run", "find_anchor", "is_anchor", "map_frames", "next_frame",
           "resume_after"]

_CHUNK = 1 << 20
#: Bytes a candidate needs to be told by the pattern: length, CRC, type, version.
_PEEK = FRAME.size + 2
# A length's first byte is at most MAX_PAYLOAD >> 24; the type and version follow the CRC.
# The pattern runs in C, so runs of zeros or garbage cost little (no type code is 0).
_CANDIDATE = re.compile(
    b"(?=[\\x00-" + re.escape(bytes([MAX_PAYLOAD >> 24])) + b"].{7}["
    + b"".join(re.escape(bytes([code])) for code in sorted(RECORD_TYPES)) + b"]\\x01)",
    re.DOTALL,
)


@dataclass(frozen=True, slots=True)
class Run:
    """Consecutive valid frames at data positions ``[start, end)``."""

    start: int
    end: int
    frames: int


@dataclass(frozen=True, slots=True)
class Damage:
    """Data positions ``[start, end)`` skipped: no valid frame starts in them.

    ``frames`` is how many frames the range held when that is known (a bad
    CRC whose length field led to a valid frame: exactly 1), else None.
    ``stop`` is what was wrong with the frame at ``start``.
    """

    start: int
    end: int
    stop: Stop
    frames: int | None

    @property
    def size(self) -> int:
        return self.end - self.start


@dataclass(frozen=True, slots=True)
class FrameMap:
    """The valid runs of ``[start, limit)`` and the damage between (and after) them.

    ``tail`` is the last damage when no valid frame follows it (it runs to
    ``limit``), else None.
    """

    runs: tuple[Run, ...]
    damage: tuple[Damage, ...]

    @property
    def tail(self) -> Damage | None:
        if self.damage and (not self.runs or self.damage[-1].start >= self.runs[-1].end):
            return self.damage[-1]
        return None

    @property
    def frames(self) -> int:
        return sum(run.frames for run in self.runs)


def is_anchor(read_at: ReadAt, position: int, limit: int) -> bool:
    """True when a whole frame validates at ``position`` (see the module doc)."""
    if position + FRAME.size + MIN_PAYLOAD > limit:
        return False
    length, _ = FRAME.unpack(read_at(position, FRAME.size))
    end = position + FRAME.size + length
    if not MIN_PAYLOAD <= length <= MAX_PAYLOAD or end > limit:
        return False
    # FrameScan checks the length and the CRC, and reads a large payload in one go.
    for _, payload in FrameScan(read_at, position, end):
        try:
            return not isinstance(decode_record(payload), UnknownRecord)
        except CorruptRecordError:
            return False
    return False


def find_anchor(read_at: ReadAt, start: int, limit: int) -> int | None:
    """The first position in ``[start, limit)`` where a frame validates, or None."""
    position = start
    while position + FRAME.size + MIN_PAYLOAD <= limit:
        chunk = read_at(position, min(_CHUNK, limit - position))
        if not chunk:
            return None
        for match in _CANDIDATE.finditer(chunk):
            if is_anchor(read_at, position + match.start(), limit):
                return position + match.start()
        # the last _PEEK - 1 bytes could not be told yet: look at them again with the next chunk
        position += max(1, len(chunk) - (_PEEK - 1))
    return None


def map_frames(read_at: ReadAt, start: int, limit: int) -> FrameMap:
    """Walk ``[start, limit)``, resuming after each damaged spot at the next anchor."""
    runs: list[Run] = []
    damage: list[Damage] = []
    position = start
    while position < limit:
        scan = FrameScan(read_at, position, limit)
        frames = sum(1 for _ in scan)
        end = scan.end
        assert end is not None
        if frames:
            runs.append(Run(position, end.position, frames))
        if end.clean:
            break
        resume, known = resume_after(read_at, end, limit)
        damage.append(Damage(end.position, limit if resume is None else resume, end.stop, known))
        if resume is None:
            break
        position = resume
    return FrameMap(tuple(runs), tuple(damage))


def next_frame(read_at: ReadAt, position: int, limit: int) -> tuple[int | None, int | None]:
    """Where reading goes on when the frame at ``position`` is damaged: the next frame
    (None: none before ``limit``), and how many frames that skips (None: not known)."""
    scan = FrameScan(read_at, position, limit)
    for _ in scan:
        return position, 0  # not damaged after all
    assert scan.end is not None
    if scan.end.clean:
        return None, 0
    return resume_after(read_at, scan.end, limit)


def resume_after(read_at: ReadAt, end: ScanEnd, limit: int) -> tuple[int | None, int | None]:
    """Where to go on after the bad frame ``end`` describes, and how many frames that skips.

    A bad CRC whose length leads to a valid frame (or to the end of the data)
    most often means damage in the payload: exactly one frame is lost, and
    its payload is not searched, except for frames that tile it up to where
    its length leads: then the length field was the damaged part, and those
    frames are real ones it hid.
    """
    after = end.position + 1
    if end.stop is Stop.BAD_CRC and end.frame_end <= limit and (
            end.frame_end == limit or is_anchor(read_at, end.frame_end, limit)):
        hidden = _tiling_anchor(read_at, after, end.frame_end)
        if hidden is not None:
            return hidden, None
        return (end.frame_end if end.frame_end < limit else None), 1
    return find_anchor(read_at, after, limit), None


def _tiling_anchor(read_at: ReadAt, start: int, stop: int) -> int | None:
    """The first anchor in ``[start, stop)`` from which valid frames end exactly at ``stop``."""
    while (found := find_anchor(read_at, start, stop)) is not None:
        scan = FrameScan(read_at, found, stop)
        for _ in scan:
            pass
        if scan.end is not None and scan.end.clean:
            return found
        start = found + 1
    return None
