"""Persistence layer: one fdatasync of an open commit log, runnable on another thread; the write probe. Imports the stdlib and the persistence layer only.

:meth:`~.log.CommitLog.start_sync` (on the log's owner thread) writes what
is buffered and returns a :class:`SyncJob`: duplicates of the touched
segments' file descriptors with how many bytes of each were written, and
whether the directory needs an fsync (a segment was created). Any thread may
:meth:`~SyncJob.run` it; the owner then ends it with
:meth:`~.log.CommitLog.end_sync` or :meth:`~.log.CommitLog.fail_sync`.

The descriptors are duplicates so that the owner may close a segment (or
write more to it) while the sync runs: fdatasync on a duplicate syncs the
same file, and bytes written after the marks are not counted as synced.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

from .livesegment import LiveSegment, write_all
from .recovery import fsync_dir

__all__ = ["SyncJob", "probe_write"]

_log = logging.getLogger("actorbroker.persistence")


class SyncJob:
    """The fdatasyncs that make a log durable up to ``end`` (see the module doc)."""

    __slots__ = ("marks", "end", "directory", "error", "_fds", "_done")

    def __init__(self, marks: list[tuple[LiveSegment, int]], fds: list[int], end: int,
                 directory: Path | None) -> None:
        self.marks = marks          # (segment, bytes written when the job began)
        self.end = end              # the log's next offset when the job began
        self.directory = directory  # fsync it too (a segment file was created)
        self.error: OSError | None = None
        self._fds = fds
        self._done = threading.Event()

    @classmethod
    def start(cls, marks: list[tuple[LiveSegment, int]], end: int,
              directory: Path | None) -> SyncJob:
        """A job over ``marks`` with duplicated descriptors; one that cannot be made (no
        descriptor left) is returned as run and failed."""
        fds: list[int] = []
        try:
            for segment, _ in marks:
                fds.append(os.dup(segment.fd()))
        except OSError as exc:
            job = cls(marks, fds, end, directory)
            job.error = exc
            job.close()
            job._done.set()
            return job
        return cls(marks, fds, end, directory)

    def run(self) -> None:
        """fdatasync every descriptor, then the directory; keeps the first error (``error``)."""
        if self.error is not None:
            return  # made failed (see start)
        try:
            for fd in self._fds:
                os.fdatasync(fd)
            if self.directory is not None:
                fsync_dir(self.directory)
        except OSError as exc:
            self.error = exc
        finally:
            self.close()
            self._done.set()

    def wait(self) -> None:
        """Block until :meth:`run` has finished (on whatever thread runs it)."""
        self._done.wait()

    def close(self) -> None:
        """Close the duplicated descriptors (idempotent: a job never run must still close)."""
        fds, self._fds = self._fds, []
        for fd in fds:
            os.close(fd)


def probe_write(path: Path, size: int) -> bool:
    """True when ``size`` bytes can be written to a scratch file at ``path`` and fsynced."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            write_all(fd, bytearray(size), 0)
            os.fsync(fd)
        finally:
            os.close(fd)
            os.unlink(path)
    except OSError as exc:
        _log.debug("commit log probe: %s", exc)
        return False
    return True
