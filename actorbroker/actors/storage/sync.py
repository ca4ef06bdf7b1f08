"""Actors layer: the storage actor's sync thread (mode fsync): the disk syncs while the actor writes on. Stdlib, persistence.

Why: an fdatasync takes 0.2 ms on a quiet disk and, on a shared one, now and
then 100-300 ms (measured: ``bench.run --scenarios latency-q1``). With the
sync on the storage actor's own thread, every Append that arrived meanwhile
waited for it before it was even written, and QoS 1 messages, routed once
written, were late by as much. Here the actor writes each batch at once
(and tells early senders) while a :class:`SyncPipeline` thread runs the
sync of what was written before; one sync at a time, each covering
everything written when it began (group commit without a pause).

The actor owns the pipeline's state; the thread only runs
:class:`~actorbroker.persistence.syncjob.SyncJob` s and sleeps, and talks
back through the actor's inbox: :class:`SyncDone` when a job ran,
:class:`SyncDue` when a linger is over. Under load (records written while
the last sync ran) the next sync first lingers ``group_commit_interval``,
so that it covers more: acknowledgements wait for it, routing does not.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from actorbroker.codec.frozen import quick_init
from actorbroker.metrics import Histogram
from actorbroker.persistence import CommitLog
from actorbroker.persistence.records import Record
from actorbroker.persistence.syncjob import SyncJob

from .requests import Append

__all__ = ["Placed", "SyncDone", "SyncDue", "SyncPipeline"]

#: An Append as written: its records (with the actor's own) and their offsets in the log.
Placed = tuple[Append, tuple[Record, ...], tuple[int, ...]]

@quick_init
@dataclass(frozen=True, slots=True)
class SyncDone:
    """The sync thread ran ``job`` (``job.error`` tells how)."""

    job: SyncJob


@quick_init
@dataclass(frozen=True, slots=True)
class SyncDue:
    """A linger is over: start the next sync."""


class SyncPipeline:
    """Written-but-unsynced batches, the sync in flight and the thread that runs it."""

    __slots__ = ("unsynced", "job", "covered", "lingering", "linger", "_tell", "_queue",
                 "_thread", "_latency")

    def __init__(self, tell: Callable[[object], None], linger: float,
                 latency: Histogram | None = None) -> None:
        self.unsynced: list[Placed] = []  # the actor's placed Appends, in log order
        self.job: SyncJob | None = None
        self.covered = 0  # how many of ``unsynced`` the job in flight covers
        self.lingering = False
        self.linger = linger
        self._tell = tell
        self._latency = latency or Histogram()  # each job's seconds (written on the thread only)
        self._queue: queue.SimpleQueue[SyncJob | float | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="storage-sync", daemon=True)
        self._thread.start()

    @property
    def idle(self) -> bool:
        """Neither a sync nor a linger under way: the next write starts a sync at once."""
        return self.job is None and not self.lingering

    def start(self, current: CommitLog) -> SyncJob:
        """A job over every unsynced batch (flushed already), not submitted yet."""
        self.job, self.covered = current.start_sync(), len(self.unsynced)
        return self.job

    def submit(self, job: SyncJob) -> None:
        self._queue.put(job)

    def wait_linger(self) -> None:
        """Sleep ``linger`` on the thread, then tell :class:`SyncDue`."""
        self.lingering = True
        self._queue.put(self.linger)

    def take(self) -> list[Placed]:
        """The batches the finished job covered, removed from ``unsynced``."""
        done = self.unsynced[:self.covered]
        del self.unsynced[:self.covered]
        self.job, self.covered = None, 0
        return done

    def stop(self) -> None:
        """End the thread once what it was given is done (a job in flight finishes)."""
        self._queue.put(None)
        self._thread.join()

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            if isinstance(item, SyncJob):
                began = time.perf_counter()
                item.run()
                self._latency.observe(time.perf_counter() - began)
                self._tell(SyncDone(item))
            else:
                time.sleep(item)
                self._tell(SyncDue())
