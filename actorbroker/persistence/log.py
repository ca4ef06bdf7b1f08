"""Persistence layer: the commit log, an append-only sequence of records in segment files. Imports the stdlib and actorbroker.errors only.

Used by one thread (the storage actor, a blocking actor off the event loop).
Group commit: call :meth:`CommitLog.append` for every record of a batch, then
:meth:`CommitLog.sync` once; acknowledge (PUBACK, PUBREC) only after ``sync``
returned. ``append`` only encodes and buffers; ``sync`` writes, fsyncs (mode
``fsync``) and publishes the committed offset for readers in other processes.
``sync`` in three steps lets another thread wait for the disk while appends
go on: :meth:`CommitLog.start_sync` here, :meth:`~.syncjob.SyncJob.run`
there, then :meth:`CommitLog.end_sync` (or ``fail_sync``) here again.

Modes: ``fsync`` (durable when ``sync`` returns), ``os`` (written to the OS
when ``sync`` returns, fsynced at segment roll and close), ``memory`` (no
files; the same offsets and reads, gone at exit).

A failed write or fsync raises :class:`~actorbroker.errors.DiskFullError`
(ENOSPC, EDQUOT, or ``max_bytes`` reached) or
:class:`~actorbroker.errors.StorageIOError`, after putting the log back as
it was after the last successful ``sync`` (mode ``os``: the last write):
the partial write is truncated away and the failed batch's offsets are
given out again. Nothing else is lost, and appends work again once there is
room (:meth:`CommitLog.probe` tells when).
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import time
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from actorbroker.errors import (
    CorruptRecordError,
    DiskFullError,
    LogLockedError,
    StorageError,
    StorageIOError,
)

from .committed import COMMITTED_NAME, Committed, CommittedFile, read_committed
from .livesegment import LiveSegment
from .reader import LogEntry, entries
from .records import Record, decode_record, encode_record
from .recovery import RecoveryReport, fsync_dir, recover
from .retention import RetentionPlan, RetentionPolicy, SegmentInfo, plan_retention
from .segment import HEADER, FrameScan, encode_frame
from .syncjob import SyncJob, probe_write

__all__ = ["DEFAULT_SEGMENT_BYTES", "MODES", "CommitLog", "LogEntry"]

MODES = ("fsync", "os", "memory")
DEFAULT_SEGMENT_BYTES = 64 * 1024 * 1024
LOCK_NAME = "lock"
_PROBE_NAME = ".probe"
_FULL = (errno.ENOSPC, errno.EDQUOT)
_log = logging.getLogger("actorbroker.persistence")


def _storage_error(exc: OSError, doing: str) -> StorageError:
    if exc.errno in _FULL:
        return DiskFullError(f"disk full while {doing}: {exc.strerror}")
    return StorageIOError(f"I/O error while {doing}: {exc.strerror or exc}")


class CommitLog:
    """An append-only log of records in ``directory`` (see the module docstring).

    Opening recovers the directory (``recovery`` holds the report) and never
    fails on damaged data; it raises LogLockedError when another process has
    the directory open, and StorageIOError when the directory is unusable.
    ``max_bytes`` (0: unlimited) bounds the log's disk (or memory) use:
    appends beyond it raise DiskFullError until retention frees room; below
    twice ``segment_bytes``, segments are made smaller. ``verify_all=False`` trusts
    segments below the synced offset without reading them (faster opening).
    """

    def __init__(
        self,
        directory: str | os.PathLike[str] | None,
        *,
        mode: str = "fsync",
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        max_bytes: int = 0,
        verify_all: bool = True,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        if segment_bytes < 1024:
            raise ValueError("segment_bytes must be at least 1024")
        if max_bytes and max_bytes < 2048:
            raise ValueError("max_bytes must be 0 or at least 2048")
        segment_bytes = min(segment_bytes, max_bytes // 2) if max_bytes else segment_bytes
        if mode != "memory" and directory is None:
            raise ValueError(f"mode {mode!r} needs a directory")
        self.mode = mode
        self.segment_bytes = segment_bytes
        self.max_bytes = max_bytes
        self.directory = None if directory is None or mode == "memory" else Path(directory)
        #: What opening found and repaired (None in memory mode).
        self.recovery: RecoveryReport | None = None
        #: The last write failure, until a sync or probe succeeds.
        self.failure: StorageError | None = None
        self._clock = clock
        self._segments: list[LiveSegment] = []
        self._next = self._written = self._synced = 0
        self._dir_dirty = False
        self._lock_fd = -1
        self._committed: CommittedFile | None = None
        if self.directory is not None:
            self._open(self.directory, verify_all)

    # -- opening and closing -------------------------------------------------

    def _open(self, directory: Path, verify_all: bool) -> None:
        try:
            directory.mkdir(parents=True, exist_ok=True)
            self._lock_fd = os.open(directory / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise LogLockedError(f"{directory} is open in another process") from None
            found = read_committed(directory)
            self.recovery = recover(directory, None if found is None else found.synced,
                                    verify_all=verify_all)
            for item in self.recovery.segments:
                segment = LiveSegment(item.base, directory, item.size, item.size, created=True)
                self._segments.append(segment)
                if found is None or segment.end > found.synced:  # a tail that survived
                    os.fsync(segment.fd())
            self._next = self._written = self._synced = self.recovery.next_offset
            self._publish(self._next, self._next, durable=True)
        except OSError as exc:
            self._release()
            raise StorageIOError(f"cannot open the commit log in {directory}: {exc}") from exc
        except BaseException:
            self._release()
            raise

    def close(self) -> None:
        """Write and fsync everything appended, then release the directory."""
        try:
            if self.directory is not None and self._lock_fd >= 0:
                self.sync()
                for segment in self._segments:
                    segment.datasync()
                self._synced = self._next
                self._publish(self._next, self._next, durable=True)
        except OSError as exc:
            raise _storage_error(exc, "closing") from exc
        finally:
            self._release()

    def _release(self) -> None:
        for segment in self._segments:
            segment.close()
        if self._committed is not None:
            self._committed.close()
        if self._lock_fd >= 0:
            os.close(self._lock_fd)  # releases the flock
            self._lock_fd = -1

    def __enter__(self) -> CommitLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- offsets ---------------------------------------------------------------

    @property
    def next_offset(self) -> int:
        """The offset the next appended record will have."""
        return self._next

    @property
    def committed_offset(self) -> int:
        """Records below it were acknowledged by :meth:`sync` (fsynced in mode fsync)."""
        return self._synced if self.mode == "fsync" else self._written

    @property
    def first_offset(self) -> int:
        """The lowest offset still in the log."""
        return self._segments[0].base if self._segments else self._next

    @property
    def segment_count(self) -> int:
        """Live segments (cheap: :meth:`segments` stats every file)."""
        return len(self._segments)

    @property
    def size_bytes(self) -> int:
        """Bytes the log takes on disk (memory mode: in memory), buffered appends included."""
        return sum(HEADER.size + s.size for s in self._segments)

    # -- writing ---------------------------------------------------------------

    def append(self, records: Iterable[Record]) -> list[int]:
        """Buffer ``records``; return their offsets. Durable only after :meth:`sync`.

        Raises ValueError for a record that cannot be encoded and
        DiskFullError beyond ``max_bytes``, in both cases appending nothing.
        """
        frames = [encode_frame(encode_record(record)) for record in records]
        if self.max_bytes:
            added = sum(len(f) for f in frames) + HEADER.size
            if self.size_bytes + added > self.max_bytes:
                raise DiskFullError(f"the commit log would exceed its limit of {self.max_bytes} bytes")
        offsets = []
        for frame in frames:
            segment = self._active(len(frame))
            offsets.append(segment.end)
            if segment.data is not None:
                segment.data += frame
                segment.written = segment.synced = segment.written + len(frame)
                segment.last_write = self._clock()
            else:
                segment.pending += frame
            self._next = segment.end
        if self.directory is None:
            self._written = self._synced = self._next
        return offsets

    def _active(self, frame_size: int) -> LiveSegment:
        last = self._segments[-1] if self._segments else None
        if last is None or last.end != self._next or (
                last.size and HEADER.size + last.size + frame_size > self.segment_bytes):
            last = LiveSegment(self._next, self.directory,
                               data=bytearray() if self.directory is None else None)
            self._segments.append(last)
        return last

    def flush(self) -> int:
        """Write buffered records to the OS (no fsync); return the written offset."""
        if self._written == self._next:
            return self._next
        try:
            for segment in self._segments:
                if segment.pending or not segment.created:
                    self._dir_dirty |= segment.write_pending()
        except OSError as exc:
            self._rollback(self._written)
            raise self._failed(_storage_error(exc, "writing")) from exc
        self._written = self._next
        return self._next

    def sync(self) -> int:
        """Group commit: flush, fsync (mode fsync), publish the committed offset; return it.

        Mode os fsyncs only segments that are no longer active.
        """
        if self.directory is None:
            return self._next
        job = self.start_sync()
        job.run()
        if job.error is not None:
            raise self.fail_sync(job, job.error)
        return self.end_sync(job)

    def start_sync(self) -> SyncJob:
        """Flush; describe the fsyncs :meth:`sync` would make (any thread may run them).

        End the job here with :meth:`end_sync` or :meth:`fail_sync`, one job at a time.
        """
        self.flush()
        marks = [(s, s.written) for s in self._segments
                 if s.synced < s.written and (self.mode == "fsync" or s.end != self._next)]
        directory, self._dir_dirty = (self.directory if self._dir_dirty else None), False
        return SyncJob.start(marks, self._next, directory)

    def end_sync(self, job: SyncJob) -> int:
        """The job ran without error: what it covered is durable; return the committed offset."""
        for segment, mark in job.marks:
            segment.synced = max(segment.synced, min(mark, segment.written))
        self._synced = next((s.base + s.synced for s in self._segments if s.synced < s.size), self._next)
        self.failure = None
        self._publish(self._synced, self._written)
        return self.committed_offset

    def fail_sync(self, job: SyncJob, error: OSError) -> StorageError:
        """The job failed: mode fsync forgets everything not synced before it; the error to raise."""
        self._dir_dirty |= job.directory is not None
        if self.mode == "fsync":
            self._rollback(self._synced)
        return self._failed(_storage_error(error, "fsyncing"))

    def _publish(self, synced: int, written: int, *, durable: bool = False) -> None:
        """Update the committed file. A failure (a full disk) is logged, not raised:
        the data is safe, readers lag until an update succeeds."""
        assert self.directory is not None
        try:
            if self._committed is None:
                self._committed = CommittedFile(self.directory)
            self._committed.write(Committed(synced, written), durable=durable)
        except OSError as exc:
            _log.warning("cannot update %s/%s: %s", self.directory, COMMITTED_NAME, exc)

    def _rollback(self, offset: int) -> None:
        """Forget everything at and above ``offset``: buffers, file tails, new segments."""
        for segment in reversed(list(self._segments)):
            if segment.base >= offset:
                self._segments.remove(segment)
                self._dir_dirty |= segment.created
                segment.remove()
            elif segment.end >= offset:  # the one a failed write may have left bytes in
                segment.truncate(offset - segment.base)
        self._next = self._written = offset
        self._synced = min(self._synced, offset)

    def _failed(self, error: StorageError) -> StorageError:
        self.failure = error
        _log.error("commit log: %s; the failed batch was dropped", error)
        return error

    def probe(self) -> bool:
        """True when writing works now (a 64 KiB test file can be written and fsynced)."""
        if self.max_bytes and self.size_bytes + self.segment_bytes > self.max_bytes:
            return False
        if self.directory is not None and not probe_write(self.directory / _PROBE_NAME,
                                                          min(self.segment_bytes, 1 << 16)):
            return False
        self.failure = None
        return True

    # -- reading ---------------------------------------------------------------

    def read(self, start: int | None = None, stop: int | None = None) -> Iterator[LogEntry]:
        """Entries from offset ``start`` (default: the first) up to ``stop`` (default: all appended).

        Appended records are readable before they are written or synced.
        ``start`` must be an offset this log gave out (a record boundary);
        gaps are skipped. Raises CorruptRecordError at a damaged frame.
        """
        start = self.first_offset if start is None else start
        stop = self._next if stop is None else stop
        for segment in list(self._segments):
            if segment.end <= start or segment.size == 0:
                continue
            if segment.base >= stop:
                return
            scan = FrameScan(segment.reader(), max(start, segment.base) - segment.base,
                             min(segment.size, stop - segment.base))
            yield from entries(segment.base, scan)
            assert scan.end is not None
            if not scan.end.clean:
                raise CorruptRecordError(f"{scan.end.stop.value} frame at offset "
                                         f"{segment.base + scan.end.position}")

    def read_at(self, offset: int) -> Record:
        """The record at ``offset`` (e.g. a queued message). ValueError if none starts there."""
        index = bisect_right([s.base for s in self._segments], offset) - 1
        if index < 0 or offset >= self._segments[index].end:
            raise ValueError(f"no record at offset {offset}")
        segment = self._segments[index]
        for _, payload in FrameScan(segment.reader(), offset - segment.base, segment.size):
            return decode_record(payload)
        raise CorruptRecordError(f"no valid record at offset {offset}")

    # -- segments and retention -----------------------------------------------

    def segments(self) -> list[SegmentInfo]:
        """Every live segment, oldest first. ``active`` marks the one appends go to and
        any other holding records not synced yet: retention leaves those alone."""
        return [
            SegmentInfo(s.base, s.size, HEADER.size + s.size, s.mtime(self._clock),
                        s.end == self._next or s.synced < s.size)
            for s in self._segments
        ]

    def apply_retention(
        self, policy: RetentionPolicy, *, needed_from: int | None, now: float | None = None
    ) -> RetentionPlan:
        """Delete the segments ``policy`` allows (see :mod:`.retention`); return the plan.

        Under ``max_disk_bytes`` it keeps one segment's worth of room free,
        so that appends go on; ``over_limit`` in the plan means it could not.
        """
        plan = plan_retention(self.segments(), policy, now=self._clock() if now is None else now,
                              needed_from=needed_from, reserve=self.segment_bytes)
        doomed = set(plan.delete)
        for segment in [s for s in self._segments if s.base in doomed]:
            self._segments.remove(segment)
            segment.remove()
        if doomed and self.directory is not None:
            fsync_dir(self.directory)
        if plan.over_limit:
            _log.warning("commit log holds %d bytes, above its limit, and sessions need them",
                         plan.kept_bytes)
        return plan
