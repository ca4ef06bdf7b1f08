"""Persistence layer: one segment of an open commit log, on disk or in memory. Imports the stdlib and actorbroker.errors only.

A :class:`LiveSegment` knows its base offset, how many data bytes are in its
file (``written``) and known fsynced (``synced``), and the frames appended
but not written yet (``pending``). Reads see all three as one run of bytes.
The file is created when its first frames are written, with ``O_EXCL``;
writes use ``pwrite`` at the expected position, so a tail left by a failed
write is overwritten, never appended after.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .segment import HEADER, ReadAt, encode_header, memory_reader, segment_name

__all__ = ["LiveSegment", "quietly", "write_all"]

_log = logging.getLogger("actorbroker.persistence")


@dataclass(slots=True)
class LiveSegment:
    """One segment of an open log; ``data`` holds it in memory mode (no file)."""

    base: int
    directory: Path | None
    written: int = 0
    synced: int = 0
    pending: bytearray = field(default_factory=bytearray)
    created: bool = False
    data: bytearray | None = None
    last_write: float = 0.0  # memory mode; files use their mtime
    _fd: int = -1

    @property
    def size(self) -> int:
        """Data bytes, buffered ones included."""
        return self.written + len(self.pending)

    @property
    def end(self) -> int:
        """Offset after its last frame."""
        return self.base + self.size

    @property
    def path(self) -> Path:
        assert self.directory is not None
        return self.directory / segment_name(self.base)

    def fd(self) -> int:
        """The file descriptor (read-write), opened on first use; creates nothing."""
        if self._fd < 0:
            self._fd = os.open(self.path, os.O_RDWR)
        return self._fd

    def write_pending(self) -> bool:
        """Write the buffered frames (creating the file first); True if the file is new.

        Raises OSError, leaving ``written`` as it was; :meth:`truncate` undoes
        what reached the file.
        """
        new = False
        if not self.created:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
            self.created = new = True
            write_all(self._fd, bytearray(encode_header(self.base)), 0)
        if self.pending:
            write_all(self.fd(), self.pending, HEADER.size + self.written)
            self.written += len(self.pending)
            self.pending.clear()
        return new

    def datasync(self) -> None:
        """fdatasync what was written; then it counts as synced."""
        if self.synced < self.written:
            os.fdatasync(self.fd())
            self.synced = self.written

    def truncate(self, keep: int) -> None:
        """Forget buffered frames and every data byte from ``keep`` on."""
        self.pending.clear()
        keep = min(keep, self.written)
        if self.data is not None:
            del self.data[keep:]
        elif self.created:  # always: a failed write may have left bytes past ``written``
            quietly(os.ftruncate, self.fd(), HEADER.size + keep)
        self.written = keep
        self.synced = min(self.synced, keep)

    def remove(self) -> None:
        """Close and delete the file (memory: drop the data)."""
        self.close()
        self.pending.clear()
        if self.created:
            quietly(os.unlink, self.path)
            self.created = False
        self.data = None

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def mtime(self, clock: Callable[[], float]) -> float:
        """Time of its last write: the file's mtime, or the clock for memory and unwritten ones."""
        if self.data is not None:
            return self.last_write
        return os.fstat(self.fd()).st_mtime if self.created else clock()

    def reader(self) -> ReadAt:
        """``read_at`` over written and buffered data as one run of bytes."""
        if self.data is not None:
            return memory_reader(self.data)

        def read_at(position: int, count: int) -> bytes:
            data = b""
            if position < self.written:
                data = os.pread(self.fd(), min(count, self.written - position), HEADER.size + position)
            if len(data) < count and self.pending:
                at = position + len(data) - self.written
                data += bytes(self.pending[at:at + count - len(data)])
            return data

        return read_at


def write_all(fd: int, data: bytearray, position: int) -> None:
    """pwrite all of ``data`` at ``position``.

    The view is released even when a write fails, so that ``data`` (a
    bytearray) can be cleared afterwards.
    """
    done = 0
    with memoryview(data) as view:
        while done < len(view):
            done += os.pwrite(fd, view[done:], position + done)


def quietly(action: Callable[..., object], *args: object) -> None:
    """Undo a step of a failed write; a failure here is logged and left to recovery."""
    try:
        action(*args)
    except OSError as exc:
        _log.error("commit log: cannot undo a failed write (%s); recovery will repair it", exc)
