"""Pipeline layer: finding, planning and walking a commit log's frames for Spark. Imports the stdlib, numpy and actorbroker.persistence only.

What the data source needs from the log, without Spark in the way (so it is
unit-tested alone):

* :func:`find_log_dir`: ``DATA_DIR`` or ``DATA_DIR/log``, with a clear error
  when neither holds a log;
* :class:`Snapshot`: the segments listed and the committed offset, read
  once (committed first, then the listing, so every committed frame is in a
  listed segment unless retention deleted it); :meth:`Snapshot.ranges` cuts
  ``[start, stop)`` into one :class:`Range` per segment (one Spark partition
  each); :meth:`Snapshot.lost_before` says whether records at an offset were
  deleted; :meth:`Snapshot.normalize` moves an offset over a gap;
* :func:`read_chunks`: the frames of a range, a few MiB at a time, as
  :class:`Chunk` (bytes and the positions of the frames in them), CRC-checked;
  it never returns a torn frame: a range ends at the committed offset, or at
  the last complete valid frame when there is no committed file;
* :func:`advance`: the offset after at most N frames (admission control).

Offsets are the log's byte offsets (docs/storage.md, "Offsets").
"""

from __future__ import annotations

import logging
import os
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from actorbroker.persistence.committed import read_committed
from actorbroker.persistence.reader import LogReader, SegmentRef
from actorbroker.persistence.resync import next_frame
from actorbroker.persistence.segment import (
    FRAME,
    HEADER,
    MAX_PAYLOAD,
    MIN_PAYLOAD,
    check_header,
    file_reader,
    parse_segment_name,
)

from .errors import DataLossError, PipelineError

__all__ = ["Chunk", "Range", "SegmentGoneError", "Snapshot", "advance", "find_log_dir",
           "read_chunks"]

_log = logging.getLogger("actorbroker.pipeline")
_FRAME = struct.Struct(">II")
_LENGTH = struct.Struct(">I")
DEFAULT_CHUNK_BYTES = 8 << 20


class SegmentGoneError(DataLossError):
    """A planned segment file was deleted (retention) before it was read."""


def find_log_dir(path: str | os.PathLike[str]) -> Path:
    """The commit log directory of the data dir ``path`` (``path/log``), or ``path`` itself."""
    root = Path(path)
    if not root.exists():
        raise PipelineError(f"data dir {str(root)!r} does not exist (give the broker's "
                            "[node] data_dir, e.g. --data-dir ./data)")
    if not root.is_dir():
        raise PipelineError(f"data dir {str(root)!r} is not a directory")
    if (root / "log").is_dir():
        return root / "log"
    names = os.listdir(root)
    if "committed" in names or any(parse_segment_name(n) is not None for n in names):
        return root
    raise PipelineError(f"{str(root)!r} holds no commit log: expected {str(root / 'log')!r} with "
                        "segment files and a committed file (is it the broker's data_dir?)")


@dataclass(frozen=True, slots=True)
class Range:
    """The frames of segment ``base`` that start at log offsets in ``[start, stop)``.

    ``stop`` None: up to the last complete, valid frame (a log without
    committed file). A piece of a segment (:meth:`Snapshot.ranges` with
    ``pieces``) has ``aligned`` false: ``start`` need not be a frame
    boundary, the reader finds the first frame at or after it, and its last
    frame may end after ``stop``, up to ``limit``.
    """

    base: int
    start: int
    stop: int | None
    aligned: bool = True
    limit: int | None = None

    def pieces(self, count: int) -> list[Range]:
        """This range cut into ``count`` pieces of about equal size (itself if it cannot be)."""
        if count <= 1 or self.stop is None or self.stop - self.start < count * 1024:
            return [self]
        step = (self.stop - self.start) // count
        cuts = [self.start + i * step for i in range(count)] + [self.stop]
        return [Range(self.base, cuts[i], cuts[i + 1], i == 0, self.stop) for i in range(count)]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The log as seen at one instant: its segments and committed offset."""

    directory: Path
    segments: tuple[SegmentRef, ...]
    #: The committed (``written``) offset; None when the log has no committed file.
    end: int | None

    @classmethod
    def take(cls, directory: Path, *, committed_only: bool = True) -> Snapshot:
        """List the log; the committed offset is read before the listing (see module doc)."""
        found = read_committed(directory) if committed_only else None
        segments = tuple(LogReader(directory).segments())
        return cls(directory, segments, None if found is None else found.written)

    @property
    def first(self) -> int | None:
        """The offset of the oldest record present (None: no segment)."""
        return self.segments[0].base if self.segments else None

    def head(self) -> int:
        """Where the readable data ends: the committed offset, else the end of the last segment."""
        if self.end is not None:
            return self.end
        return self.segments[-1].end if self.segments else 0

    def ranges(self, start: int | None, stop: int | None, *, min_ranges: int = 0) -> list[Range]:
        """One range per segment holding offsets in ``[start, stop)`` (None: no bound).

        With ``min_ranges``, segments are cut into pieces (up to 4 each) when
        there are fewer segments than that, so that every core has work.
        """
        out = []
        for index, segment in enumerate(self.segments):
            following = self.segments[index + 1].base if index + 1 < len(self.segments) else None
            low = segment.base if start is None else max(start, segment.base)
            high = stop if following is None else following if stop is None else min(stop, following)
            if high is None or low < high:
                out.append(Range(segment.base, low, high))
        if out and len(out) < min_ranges:
            count = min(4, -(-min_ranges // len(out)))
            out = [piece for rng in out for piece in rng.pieces(count)]
        return out

    def lost_before(self, offset: int) -> int | None:
        """When the records at ``offset`` were deleted: the next offset present; else None.

        Nothing is lost at an offset inside a segment, at its end, or past
        the last segment (the head of the log).
        """
        later = None
        for segment in self.segments:
            if segment.base <= offset <= segment.end:
                return None
            if segment.base > offset:
                later = segment.base if later is None else min(later, segment.base)
        return later

    def normalize(self, offset: int) -> int:
        """``offset``, moved to the next segment's base when it ends a segment before a gap."""
        for index, segment in enumerate(self.segments[:-1]):
            if offset == segment.end and self.segments[index + 1].base > offset:
                return self.segments[index + 1].base
        return offset

    def segment_of(self, offset: int) -> int:
        """Base of the segment ``offset`` is in (or starts); ``offset`` itself when none."""
        for segment in reversed(self.segments):
            if segment.base <= offset:
                return segment.base if offset <= segment.end else offset
        return offset

    def check_lost(self, offset: int, *, fail: bool, what: str) -> int:
        """``offset``, or where reading resumes when its records were deleted.

        Raises DataLossError when ``fail`` (the failOnDataLoss option) is set.
        """
        resume = self.lost_before(offset)
        if resume is None:
            return offset
        message = (f"{what}: records at log offsets [{offset}, {resume}) of "
                   f"{str(self.directory)!r} were deleted (retention) before they were read")
        if fail:
            raise DataLossError(message + "; set the option failOnDataLoss=false to skip them")
        _log.warning("%s; skipped (failOnDataLoss=false)", message)
        return resume


@dataclass(frozen=True, slots=True)
class Chunk:
    """Complete, valid frames: ``buf`` holds the log's bytes from offset ``offset``;
    frame ``i`` starts at ``buf[starts[i]]`` and its payload has ``lengths[i]`` bytes."""

    buf: bytes
    offset: int
    starts: np.ndarray
    lengths: np.ndarray

    def __len__(self) -> int:
        return len(self.starts)


def read_chunks(directory: Path, rng: Range, *, chunk_bytes: int = DEFAULT_CHUNK_BYTES,
                verify: bool = True) -> Iterator[Chunk]:
    """The frames of ``rng``, in order, a chunk of about ``chunk_bytes`` at a time.

    Raises SegmentGoneError when the segment file no longer exists. A frame
    that is damaged below ``rng.stop`` is skipped with a warning, up to the
    next frame that validates (as LogReader does; persistence.resync).
    """
    path = directory / f"{rng.base:020d}.log"
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        raise SegmentGoneError(f"segment {path.name} of {str(directory)!r} was deleted (retention) "
                               "before it was read") from None
    try:
        header = os.pread(fd, HEADER.size, 0)
        problem = check_header(header, rng.base)
        if problem is not None:
            if rng.stop is not None or len(header) >= HEADER.size:
                _log.warning("commit log %s: %s; segment skipped", path.name, problem)
            return
        size = os.fstat(fd).st_size - HEADER.size
        bound = rng.limit if rng.limit is not None else rng.stop
        limit = size if bound is None else min(size, bound - rng.base)
        owned = limit if rng.stop is None else min(limit, rng.stop - rng.base)
        pos = rng.start - rng.base
        if not rng.aligned:
            pos = _first_frame_at(fd, pos, limit)
        want = chunk_bytes
        while pos < owned:
            buf = os.pread(fd, min(want, limit - pos), HEADER.size + pos)
            starts, lengths, used, why = walk(buf, verify, owned - pos)
            if starts:
                yield Chunk(buf, rng.base + pos, np.array(starts, np.int64),
                            np.array(lengths, np.int64))
            pos += used
            want = chunk_bytes
            if why == "end":
                continue
            if why == "partial":
                head = os.pread(fd, FRAME.size, HEADER.size + pos)
                length = _LENGTH.unpack_from(head)[0] if len(head) == FRAME.size else -1
                if pos + FRAME.size + length <= limit and length >= 0:
                    want = max(chunk_bytes, FRAME.size + length)  # read on from this frame
                    continue
                why = "incomplete"
                if bound is None:
                    return  # a frame still being written, at the end of a log without committed file
            resume, _ = next_frame(file_reader(fd), pos, limit)  # damage: on at the next frame
            _log.warning("commit log %s: %s frame at offset %d; offsets %d..%d skipped",
                         path.name, why, rng.base + pos, rng.base + pos,
                         rng.base + (limit if resume is None else resume))
            if resume is None:
                return
            pos = resume
    finally:
        os.close(fd)


def walk(buf: bytes, verify: bool, bound: int | None = None) -> tuple[list[int], list[int], int, str]:
    """Frames at the start of ``buf`` that start before ``bound``: (starts, payload lengths,
    bytes used, why it stopped).

    ``why``: "end" (all of ``buf`` used, or ``bound`` reached), "partial" (the
    next frame runs past the end of ``buf``), "bad length" or "bad crc".
    """
    starts: list[int] = []
    lengths: list[int] = []
    add_start, add_length = starts.append, lengths.append
    unpack, crc32 = _FRAME.unpack_from, zlib.crc32
    view = memoryview(buf)
    size = len(buf)
    stop = size if bound is None else min(size, bound)
    pos = 0
    low, high = MIN_PAYLOAD, MAX_PAYLOAD
    seeds: dict[int, int] = {}  # CRC of the 4 length bytes, by length: records repeat sizes
    while pos < stop:
        if pos + 8 > size:
            return starts, lengths, pos, "partial"
        length, crc = unpack(buf, pos)
        if not low <= length <= high:
            return starts, lengths, pos, "bad length"
        end = pos + 8 + length
        if end > size:
            return starts, lengths, pos, "partial"
        if verify:
            seed = seeds.get(length)
            if seed is None:
                seed = seeds[length] = crc32(buf[pos:pos + 4])
            if crc32(view[pos + 8:end], seed) != crc:
                return starts, lengths, pos, "bad crc"
        add_start(pos)
        add_length(length)
        pos = end
    return starts, lengths, pos, "end"


def _first_frame_at(fd: int, target: int, limit: int) -> int:
    """The position of the first frame that starts at or after ``target`` (``limit`` if none),
    found by walking frame lengths from the start of the segment."""
    pos = 0
    while pos < target:
        buf = os.pread(fd, min(4 << 20, limit - pos), HEADER.size + pos)
        used = 0
        while pos + used < target and used + 4 <= len(buf):
            (length,) = _LENGTH.unpack_from(buf, used)
            if not MIN_PAYLOAD <= length <= MAX_PAYLOAD:
                return limit  # damage: the piece that reads it reports it
            if used + 8 + length > len(buf) and used > 0:
                break
            used += 8 + length
        if used == 0:
            return limit
        pos += used
    return min(pos, limit)


def advance(snapshot: Snapshot, start: int, stop: int, max_frames: int) -> int:
    """The offset just after the first ``max_frames`` frames in ``[start, stop)``; ``stop`` if fewer.

    Reads frame lengths only (no CRC): admission control of a stream. A
    damaged frame ends its segment, as in :func:`read_chunks`.
    """
    left = max_frames
    for rng in snapshot.ranges(start, stop):
        end = stop if rng.stop is None else min(stop, rng.stop)
        pos = rng.start
        try:
            fd = os.open(snapshot.directory / f"{rng.base:020d}.log", os.O_RDONLY)
        except FileNotFoundError:
            continue  # deleted: reading the range reports it
        try:
            while pos < end and left > 0:
                buf = os.pread(fd, min(1 << 20, end - pos), HEADER.size + pos - rng.base)
                used = 0
                while left > 0 and used + 4 <= len(buf):
                    (length,) = _LENGTH.unpack_from(buf, used)
                    following = used + FRAME.size + length
                    if not MIN_PAYLOAD <= length <= MAX_PAYLOAD or pos + following > end:
                        used = end - pos  # damaged or incomplete: the segment ends here
                        break
                    if following > len(buf) and used > 0:
                        break  # read on from this frame
                    used = following
                    left -= 1
                if used == 0:
                    used = end - pos  # fewer than 4 bytes left: incomplete
                pos += used
        finally:
            os.close(fd)
        if left == 0:
            return pos
    return stop
