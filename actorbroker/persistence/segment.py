"""Persistence layer: segment files and the frames inside them. Imports the stdlib and actorbroker.errors only.

A segment file ``NNNNNNNNNNNNNNNNNNNN.log`` (the base offset, 20 digits) is a
16-byte header followed by frames:

    header: 4s magic b"ABLG" | u8 format 1 | u8 reserved 0 | u16 header size 16 | u64 base offset
    frame:  u32 length n | u32 crc | n bytes of payload (one record)

``crc`` is zlib's CRC-32 of the 4 length bytes followed by the payload, so a
damaged length is caught as well. Offsets are byte positions in the log's
data: the frame at ``base + p`` starts ``16 + p`` bytes into the file of the
segment whose base is ``base``, and a segment's successor starts at
``base + (file size - 16)``.

:class:`FrameScan` reads frames through a ``read_at(position, count)``
function, so it serves files (``os.pread``), buffers in memory and files
another process is appending to: it yields only complete, CRC-valid frames
and records in :attr:`FrameScan.end` where and why it stopped.
"""

from __future__ import annotations

import os
import re
import struct
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import Enum

from .records import ENVELOPE

__all__ = [
    "FRAME",
    "HEADER",
    "MAGIC",
    "MAX_PAYLOAD",
    "MIN_PAYLOAD",
    "FrameScan",
    "ScanEnd",
    "Stop",
    "check_header",
    "encode_frame",
    "encode_header",
    "file_reader",
    "memory_reader",
    "parse_segment_name",
    "segment_name",
]

MAGIC = b"ABLG"
FORMAT_VERSION = 1
HEADER = struct.Struct(">4sBBHQ")
FRAME = struct.Struct(">II")
_LENGTH = struct.Struct(">I")
#: A payload holds at least a record envelope.
MIN_PAYLOAD = ENVELOPE.size
#: Largest payload accepted: a 256 MiB MQTT payload plus its topic and properties.
MAX_PAYLOAD = 320 * 1024 * 1024
SUFFIX = ".log"
_NAME = re.compile(r"(\d{20})\.log")
_CHUNK = 1 << 20

ReadAt = Callable[[int, int], bytes]


def segment_name(base: int) -> str:
    """File name of the segment whose first frame has offset ``base``."""
    return f"{base:020d}{SUFFIX}"


def parse_segment_name(name: str) -> int | None:
    """The base offset a segment file name stands for, or None for another file."""
    match = _NAME.fullmatch(name)
    return int(match.group(1)) if match else None


def encode_header(base: int) -> bytes:
    """The 16-byte header of a segment."""
    return HEADER.pack(MAGIC, FORMAT_VERSION, 0, HEADER.size, base)


def check_header(data: bytes, base: int) -> str | None:
    """Why ``data`` is not a valid header for the segment ``base``, or None if it is."""
    if len(data) < HEADER.size:
        return f"header is {len(data)} bytes, not {HEADER.size}"
    magic, version, _, size, stored_base = HEADER.unpack_from(data)
    if magic != MAGIC:
        return f"bad magic {magic!r}"
    if version != FORMAT_VERSION or size != HEADER.size:
        return f"unknown segment format {version} (header size {size})"
    if stored_base != base:
        return f"header says base {stored_base}, file name says {base}"
    return None


def encode_frame(payload: bytes) -> bytes:
    """Length, CRC and ``payload``, ready to append."""
    size = len(payload)
    if not MIN_PAYLOAD <= size <= MAX_PAYLOAD:
        raise ValueError(f"frame payload of {size} bytes is outside {MIN_PAYLOAD}..{MAX_PAYLOAD}")
    length = _LENGTH.pack(size)
    return length + _LENGTH.pack(zlib.crc32(payload, zlib.crc32(length))) + payload


class Stop(Enum):
    """Why a scan stopped."""

    END = "end"  # at the limit, on a frame boundary
    INCOMPLETE = "incomplete"  # a frame header or payload runs past the limit
    BAD_LENGTH = "bad length"  # a length outside MIN_PAYLOAD..MAX_PAYLOAD
    BAD_CRC = "bad crc"  # a complete frame whose CRC does not match


@dataclass(frozen=True, slots=True)
class ScanEnd:
    """Where the valid frames end (``position``) and why the scan stopped there.

    ``frame_end`` is where the invalid frame would end by its length field
    (for BAD_CRC and INCOMPLETE), else ``position``.
    """

    position: int
    stop: Stop
    frame_end: int

    @property
    def clean(self) -> bool:
        return self.stop is Stop.END


class FrameScan:
    """Iterate ``(position, payload)`` over the frames in ``[start, limit)``.

    Positions are relative to the first byte after the segment header.
    Stops at the first frame that is incomplete or invalid; afterwards
    :attr:`end` says where and why. ``limit`` is how many data bytes exist
    (the file size minus the header, or a committed offset); a frame that
    ends past it is INCOMPLETE.
    """

    __slots__ = ("_limit", "_read_at", "_start", "end")

    def __init__(self, read_at: ReadAt, start: int, limit: int) -> None:
        self._read_at = read_at
        self._start = start
        self._limit = limit
        self.end: ScanEnd | None = None

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        limit = self._limit
        pos = self._start
        buf = b""
        view = memoryview(buf)
        buf_at = buf_end = pos  # buf holds the data bytes [buf_at, buf_end); never past limit
        unpack = FRAME.unpack_from
        crc32 = zlib.crc32
        while True:
            if pos + FRAME.size > buf_end:
                if pos >= limit:
                    self.end = ScanEnd(pos, Stop.END if pos == limit else Stop.INCOMPLETE, pos)
                    return
                buf, buf_at = self._refill(buf, buf_at, pos, FRAME.size)
                view, buf_end = memoryview(buf), buf_at + len(buf)
                if pos + FRAME.size > buf_end:
                    self.end = ScanEnd(pos, Stop.INCOMPLETE, limit)
                    return
            head = pos - buf_at
            length, crc = unpack(buf, head)
            if not MIN_PAYLOAD <= length <= MAX_PAYLOAD:
                self.end = ScanEnd(pos, Stop.BAD_LENGTH, pos)
                return
            end = pos + FRAME.size + length
            if end > buf_end:
                if end <= limit:
                    buf, buf_at = self._refill(buf, buf_at, pos, end - pos)
                    view, buf_end = memoryview(buf), buf_at + len(buf)
                    head = 0
                if end > buf_end:  # past the limit, or the source is shorter than it said
                    self.end = ScanEnd(pos, Stop.INCOMPLETE, end)
                    return
            start = head + FRAME.size
            if crc32(view[start:start + length], crc32(view[head:head + 4])) != crc:
                self.end = ScanEnd(pos, Stop.BAD_CRC, end)
                return
            yield pos, buf[start:start + length]
            pos = end

    def _refill(self, buf: bytes, buf_at: int, pos: int, need: int) -> tuple[bytes, int]:
        """A buffer that starts at ``pos`` and holds ``need`` bytes if the source has them."""
        keep = buf[pos - buf_at:] if pos < buf_at + len(buf) else b""
        want = min(max(need, _CHUNK) - len(keep), self._limit - pos - len(keep))
        more = self._read_at(pos + len(keep), want) if want > 0 else b""
        return keep + more, pos


def file_reader(fd: int, header: int = HEADER.size) -> ReadAt:
    """A ``read_at`` over the data of an open segment file (positions after the header)."""

    def read_at(position: int, count: int) -> bytes:
        return os.pread(fd, count, header + position)

    return read_at


def memory_reader(data: bytes | bytearray) -> ReadAt:
    """A ``read_at`` over data held in memory (no header)."""

    def read_at(position: int, count: int) -> bytes:
        return bytes(data[position:position + count])

    return read_at
