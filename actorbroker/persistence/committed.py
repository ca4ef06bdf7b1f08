"""Persistence layer: the ``committed`` side file of a commit log. Imports the stdlib and actorbroker.errors only.

The writer publishes two offsets in a 32-byte file next to the segments:

    4s magic b"ABCM" | u8 version 1 | u8 0 | u16 0 | u64 synced | u64 written | u32 crc | u32 0

* ``synced``: every frame below it has been fsynced (mode ``fsync``: after
  each group commit; mode ``os``: at segment roll, close and recovery).
  Recovery treats damage below it as corruption of acknowledged data
  (quarantine) and damage above it as a torn tail (truncate).
* ``written``: every frame below it has been handed to the OS and
  acknowledged; equal to ``synced`` in mode ``fsync``. Readers in other
  processes read up to it and never further: a frame above it may still be
  torn, or vanish in a crash and have its offset reused.

The file is rewritten in place with one ``pwrite`` of 32 bytes after every
sync and is not fsynced each time: after a crash it may hold an older value,
which is safe (both offsets are lower bounds). ``crc`` (zlib CRC-32 of the
first 24 bytes) lets a reader detect a read that raced a write; it reads again.
"""

from __future__ import annotations

import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

__all__ = ["COMMITTED_NAME", "Committed", "CommittedFile", "read_committed"]

COMMITTED_NAME = "committed"
_MAGIC = b"ABCM"
_LAYOUT = struct.Struct(">4sBBHQQII")
_ATTEMPTS = 100


@dataclass(frozen=True, slots=True)
class Committed:
    """The two offsets of the side file."""

    synced: int
    written: int


def _encode(committed: Committed) -> bytes:
    head = struct.pack(">4sBBHQQ", _MAGIC, 1, 0, 0, committed.synced, committed.written)
    return head + struct.pack(">II", zlib.crc32(head), 0)


def _decode(data: bytes) -> Committed | None:
    if len(data) < _LAYOUT.size:
        return None
    magic, version, _, _, synced, written, crc, _ = _LAYOUT.unpack_from(data)
    if magic != _MAGIC or version != 1 or crc != zlib.crc32(data[:24]):
        return None
    return Committed(synced, written)


def read_committed(directory: str | os.PathLike[str]) -> Committed | None:
    """The offsets published in ``directory``, or None when the file is missing or invalid.

    A read that races the writer's ``pwrite`` fails its CRC and is retried.
    """
    path = Path(directory) / COMMITTED_NAME
    for _ in range(_ATTEMPTS):
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        found = _decode(data)
        if found is not None:
            return found
    return None


class CommittedFile:
    """The writer's handle on the side file."""

    __slots__ = ("_fd", "path")

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.path = Path(directory) / COMMITTED_NAME
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)

    def write(self, committed: Committed, *, durable: bool = False) -> None:
        """Publish ``committed``; with ``durable``, fsync it too."""
        os.pwrite(self._fd, _encode(committed), 0)
        if durable:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
