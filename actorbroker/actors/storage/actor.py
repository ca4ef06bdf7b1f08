"""Actors layer: StorageActor, the commit log's only writer, off the event loop. Stdlib, pykka, supervisors, persistence, durable, session.

A thread actor (``supervisors.ThreadActor``): it blocks on disk so the
loop never does. It starts first in the core supervisor: ``on_start``
opens the log (recovery: a torn tail truncated, a damaged segment
quarantined; the broker always starts), folds it into a
:class:`~actorbroker.durable.DurableState` from the latest checkpoint or a
signed snapshot (:mod:`.recovery`), and marks sessions that were
connected at the crash as disconnected (their Wills become due: the
keeper asks for them, ``LoadWills``, and publishes them) and hands what
shared groups still owe to their durable members (``restart_records``). The registry, the
keeper and resumed sessions then load what they need by asking.

**Group commit.** Each ``Append`` (a session's records of one read) is a
tell. The actor takes every ``Append`` already waiting in its inbox and
appends them all; once they are synced it folds their records into its
state and tells each sender ``Durable(token, offsets)``, and the session
releases the PUBACK/PUBREC, SUBACK, PUBREL... it held. Mode fsync syncs on a
thread of its own while the actor writes on (:mod:`.sync`, which
also says when it lingers ``group_commit_interval``); messages that read
the state (``LoadSession``...) first wait for the folding of everything
written. Mode os syncs here, after a linger when appends were waiting.

**Early answers** (mode fsync). Senders of ``Append(early=True)`` (their
held messages are all QoS 1) are told ``Durable(token, offsets, synced=False)``
once the batch is *written*: they route the messages while the disk syncs;
PUBACKs wait for the final answer. Safe for QoS 1: a crash before the sync
leaves the publisher without PUBACK, so it resends, and what a subscriber's
session writes about the message lands after its ``PublishAccepted`` in this
append-only log. A failed fdatasync after an early answer fences the
offsets off (:mod:`.lost`).

**Failures.** A failed write or fsync (``DiskFullError``, 0x97;
``StorageIOError``, 0x80) is answered ``NotDurable`` to every sender the log
rolled back; later batches are refused until a probe succeeds
(:class:`~.lost.Outage`).

**History first come, last served.** Appends nobody waits for that are
history of one client (a clean session's ``Subscribed``) are deferred and
written :data:`~.history.DRAIN_RECORDS` records at a time when the
inbox has no other appends before them (:mod:`.history`, which says
what order is kept): a subscription storm's records no longer delay every
publisher's PUBACK.

**Housekeeping** on ``Tick`` (from the keeper, every second) and after a
segment roll: a checkpoint when the log grew enough since the last one
(:func:`~actorbroker.durable.restate`), then retention with the needed-from
watermark (the lowest offset a durable session or the checkpoint needs).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from actorbroker.durable import DurableState
from actorbroker.errors import StorageError
from actorbroker.persistence import CommitLog
from actorbroker.persistence.records import Record, WillSet
from actorbroker.persistence.syncjob import SyncJob
from supervisors import ThreadActor

from ..names import Singleton
from ..node import Node
from .history import History
from .lost import LostOffsets, Outage
from .reads import load_offline, load_routing, load_session, load_wills, message_at
from .reads import status_figures
from .reads import tell as _tell
from .recovery import Housekeeper, StorageSettings, recover, restart_records
from .requests import (
    Append,
    Durable,
    Fetch,
    Fetched,
    LoadOffline,
    LoadRouting,
    LoadSession,
    LoadWills,
    NotDurable,
    OfflineDropped,
    StorageStatus,
    Tick,
)
from .sync import Placed, SyncDone, SyncDue, SyncPipeline

__all__ = ["StorageActor", "StorageSettings"]

log = logging.getLogger("actorbroker.storage")

#: Appends taken into one batch at most (bounds the time to the first reply).
_MAX_BATCH = 2048
#: An Append of a batch, the records written of it, and their offsets (-1: left out).


class _Drain:
    """To itself: write the next part of the deferred history."""


_DRAIN = _Drain()


def _code(error: StorageError) -> int:
    """The MQTT 5 reason code a refused PUBLISH gets for ``error`` (0x97 or 0x80)."""
    code: int = getattr(error, "reason_code", 0x80)
    return code


class StorageActor(ThreadActor):
    """The commit log and the durable state (see the module doc)."""

    def __init__(self, settings: StorageSettings, node: Node) -> None:
        super().__init__()
        self.settings = settings
        self._node = node
        self.log: CommitLog | None = None
        self.state = DurableState(settings.fold)
        self.house: Housekeeper | None = None
        self._outage = Outage(settings.probe)
        self._busy = False  # appends were waiting when the last sync ended
        self.batches = self.records = 0
        self._cut: dict[str, WillSet] = {}  # loose Wills at start: their connections are gone
        self._lost = LostOffsets()
        self._pipe: SyncPipeline | None = None  # mode fsync: syncs on their own thread
        self._segments = 0  # the log's segment count when housekeeping last looked
        self._history = History()  # deferred appends (see the module doc)
        self._draining = False  # a _DRAIN is in the inbox

    # -- life ------------------------------------------------------------------

    def on_start(self) -> None:
        self.log, self.state, self.house = recover(self.settings)
        # Any start of this actor restarts the sessions too (rest_for_one): no connection
        # of a loose Will survives it. A later LoadWills (the keeper restarted alone) must
        # not take the Wills of connections made since for due.
        self._cut = dict(self.state.loose_wills)
        records = restart_records(self.state)
        if records:
            self._append_now(records)
        self._segments = self.log.segment_count
        if self.settings.mode == "fsync" and self.log.directory is not None:
            self._pipe = SyncPipeline(lambda m: _tell(self.actor_ref, m),
                                      self.settings.group_commit_interval,
                                      self._node.metrics.sync_latency)

    def on_stop(self) -> None:
        self._close(snapshot=True)

    def on_failure(self, exception_type: Any, exception_value: Any, traceback: Any) -> None:
        self._close(snapshot=False)

    def _close(self, *, snapshot: bool) -> None:
        if snapshot and self.log is not None:
            self._write_now(self._history.take_all())
            self._settle()  # answer every Append written; the snapshot is of a folded log
        pipe, self._pipe = self._pipe, None
        if pipe is not None:
            pipe.stop()  # (after a failure) a sync in flight ends first; close() syncs the rest
        current, self.log = self.log, None
        if current is None:
            return
        try:
            if snapshot and self.house is not None and self._outage.error is None:
                self.house.snapshot(current, self.state)
            current.close()
        except (OSError, StorageError) as exc:
            log.error("closing the commit log: %s", exc)

    # -- messages --------------------------------------------------------------

    def on_receive(self, message: Any) -> Any:
        cls = type(message)
        if cls is Append:
            self._write_now(self._history.split(self._take([message])))
        elif cls is _Drain:
            self._draining = False
            self._write_now(self._history.take())
        elif cls is SyncDone:
            self._synced(message.job)
        elif cls is SyncDue:
            self._due()
        elif cls is Fetch:
            _tell(message.reply_to, Fetched(message.token, tuple(
                message_at(self.log, offset) for offset in message.offsets)))
        else:
            # The rest reads the folded state: fold every record written first (and what
            # is deferred: all of it, or the client's; a Tick's housekeeping needs none).
            if cls is LoadSession:
                self._write_now(self._history.of({message.client_id}))
            elif cls is not Tick:
                self._write_now(self._history.take_all())
            self._settle()
            return self._read(message)
        return None

    def _write_now(self, batch: list[Append]) -> None:
        if batch:
            self._commit(batch)
        if self._history and not self._draining:
            self._draining = True
            _tell(self.actor_ref, _DRAIN)

    def _read(self, message: Any) -> Any:
        cls = type(message)
        if cls is LoadSession:
            return load_session(self.log, self.state, message.client_id,
                                self._node.names.whereis(Singleton.KEEPER))
        elif cls is LoadRouting:
            return load_routing(self.log, self.state)
        elif cls is LoadOffline:
            return load_offline(self.state)
        elif cls is LoadWills:
            return load_wills(self.state, self._cut)
        elif cls is Tick:
            self._tick()
        elif cls is StorageStatus:
            return status_figures(self.log, self.state, self.house, self.settings.mode,
                                  self._outage.error, self.batches, self.records)
        else:
            raise TypeError(f"storage: unexpected message {message!r}")
        return None

    def _take(self, batch: list[Append]) -> list[Append]:
        """Move the Appends waiting at the head of the inbox (plain tells only) into ``batch``."""
        inbox: Any = self.actor_inbox
        with inbox.mutex:
            waiting = inbox.queue
            while waiting and len(batch) < _MAX_BATCH:
                envelope = waiting[0]
                if type(envelope.message) is not Append or envelope.reply_to is not None:
                    break
                batch.append(waiting.popleft().message)
        return batch

    # -- group commit ------------------------------------------------------------

    def _commit(self, batch: list[Append]) -> None:
        current = self.log
        assert current is not None
        if self._outage.error is not None and not self._writable(current):
            self._refuse(batch, self._outage.error)
            return
        try:
            self._lost.pad(current, int(time.time() * 1e6))  # nothing to do unless a sync failed
        except StorageError as exc:
            self._outage.failed(exc)
            self._refuse(batch, exc)
            return
        placed = self._place(current, batch)
        pipe = self._pipe
        if pipe is not None:  # mode fsync: write now, sync on the pipeline's thread
            if self._write(current, placed):
                pipe.unsynced += placed
                if pipe.idle:
                    self._begin(pipe)
            return
        if self._busy and self.settings.group_commit_interval > 0 and len(batch) < _MAX_BATCH:
            time.sleep(self.settings.group_commit_interval)  # under load: gather a larger group
            more = self._history.split(self._take([]))
            if more:
                placed += self._place(current, more)
        began = time.perf_counter()
        try:
            current.sync()
        except StorageError as exc:
            self._outage.failed(exc)
            self._refuse([a for a, _, _ in placed], exc)
            return
        self._node.metrics.sync_latency.observe(time.perf_counter() - began)
        self._answer(placed, current.next_offset)
        self._busy = bool(self.actor_inbox.queue)  # type: ignore[attr-defined]
        self._housekeep(current)

    def _begin(self, pipe: SyncPipeline) -> None:
        """Sync on the thread what is written and not synced (the log is flushed)."""
        assert self.log is not None
        pipe.submit(pipe.start(self.log))

    def _synced(self, job: SyncJob) -> None:
        pipe = self._pipe
        if pipe is None or job is not pipe.job:
            return  # _settle took it already
        self._complete(pipe, job)
        assert self.log is not None
        if self._housekeep(self.log) or not pipe.unsynced:
            return
        if pipe.linger > 0:  # written while it synced: under load, gather more
            pipe.wait_linger()
        else:
            self._begin(pipe)

    def _due(self) -> None:
        pipe = self._pipe
        if pipe is not None:
            pipe.lingering = False
            if pipe.unsynced and pipe.job is None:
                self._begin(pipe)

    def _settle(self) -> None:
        """Wait for the sync in flight, then sync the rest here: every record is folded."""
        pipe = self._pipe
        if pipe is None:
            return
        if pipe.job is not None:
            pipe.job.wait()
            self._complete(pipe, pipe.job)
        if pipe.unsynced:
            assert self.log is not None
            job = pipe.start(self.log)
            job.run()
            self._complete(pipe, job)

    def _complete(self, pipe: SyncPipeline, job: SyncJob) -> None:
        """Answer the batches ``job`` covered: Durable once synced; if it failed, every
        batch not synced is refused (the log rolled them back) and its offsets fenced off."""
        current = self.log
        assert current is not None
        if job.error is None:
            current.end_sync(job)
            self._answer(pipe.take(), job.end)
            return
        end = current.next_offset
        error = current.fail_sync(job, job.error)
        self._outage.failed(error)
        lost, pipe.unsynced = pipe.unsynced, []
        pipe.job = None
        if any(a.early and a.reply_to is not None for a, _, _ in lost):
            self._lost.lost(current.next_offset, end)  # routed with these offsets
        self._refuse([a for a, _, _ in lost], error)

    def _answer(self, placed: list[Placed], position: int) -> None:
        """Fold synced batches into the state and tell their senders ``Durable``."""
        state = self.state
        for append, records, offsets in placed:
            for offset, record in zip((o for o in offsets if o >= 0), records):
                state.apply(offset, record)
            if append.reply_to is not None:
                _tell(append.reply_to, Durable(append.token, offsets))
        state.position = position
        self.batches += 1
        self.records += sum(len(r) for _, r, _ in placed)
        if state.drops:
            self._report_drops()

    def _housekeep(self, current: CommitLog) -> bool:
        """After a segment roll or enough growth: checkpoint and retention (on a folded
        state: the rest is synced here first); True if it ran."""
        if self.house is None or (current.segment_count == self._segments
                                  and not self.house.checkpoint_due(current)):
            return False
        self._settle()
        self.house.maintain(current, self.state)
        self._segments = current.segment_count
        return True

    def _place(self, current: CommitLog, batch: list[Append]) -> list[Placed]:
        """Append each Append's records (buffered); one that cannot be is refused alone."""
        lost = self._lost
        placed: list[Placed] = []
        for append in batch:
            try:
                records, kept = lost.keep(append.records)
                offsets = lost.align(len(append.records), kept, current.append(records))
                placed.append((append, records, offsets))
            except StorageError as exc:  # beyond max_disk_bytes: nothing of it was buffered
                self._outage.failed(exc)
                _tell(append.reply_to, NotDurable(append.token, _code(exc), str(exc)))
            except ValueError as exc:  # a record that cannot be encoded (a bug upstream)
                log.error("storage: records refused: %s", exc)
                _tell(append.reply_to, NotDurable(append.token, 0x80, f"cannot store: {exc}"))
        return placed

    def _write(self, current: CommitLog, placed: list[Placed]) -> bool:
        """Write the batch, then tell its early senders (before the fdatasync); False if the
        write failed (then the batch is refused)."""
        try:
            current.flush()  # a full disk fails here, before anything is routed
        except StorageError as exc:
            self._outage.failed(exc)
            self._refuse([a for a, _, _ in placed], exc)
            return False
        for append, _, offsets in placed:
            if append.early and append.reply_to is not None:
                _tell(append.reply_to, Durable(append.token, offsets, False))
        return True

    def _append_now(self, records: list[Record]) -> None:
        """Append and sync records of the actor's own (start-up), folding them in."""
        current = self.log
        assert current is not None
        try:
            offsets = current.append(records)
            current.sync()
        except StorageError as exc:
            self._outage.failed(exc)
            return
        for offset, record in zip(offsets, records):
            self.state.apply(offset, record)
        self.state.position = current.next_offset

    def _refuse(self, batch: list[Append], error: StorageError) -> None:
        for append in batch:
            _tell(append.reply_to, NotDurable(append.token, _code(error), str(error)))

    def _writable(self, current: CommitLog) -> bool:
        house = self.house
        return self._outage.writable(
            current, lambda: None if house is None else house.retain(current, self.state))

    def _report_drops(self) -> None:
        keeper = self._node.names.whereis(Singleton.KEEPER)
        for client_id, reason, topic in self.state.drops:
            _tell(keeper, OfflineDropped(client_id, reason, topic))
        self.state.drops.clear()

    # -- housekeeping ----------------------------------------------------------------

    def _tick(self) -> None:
        current = self.log
        if current is None:
            return
        if self._outage.error is not None:
            self._writable(current)
        elif self.house is not None:
            self.house.tick(current, self.state)
