"""Actors layer: StorageActor, the commit log's only writer, off the event loop. Stdlib, pykka, supervisors, persistence, durable, session.

A thread actor (``supervisors.ThreadActor``): it blocks on disk so the
loop never does. It starts first in the core supervisor: ``on_start``
opens the log (recovery: a torn tail truncated, a damaged segment
quarantined; the broker always starts), folds it into a
:class:`~actorbroker.durable.DurableState` from the latest checkpoint or a
signed snapshot (:mod:`.storage_recovery`), and marks sessions that were
connected at the crash as disconnected (their Wills become due: the
keeper asks for them, ``LoadWills``, and publishes them) and hands what
shared groups still owe to their durable members (``restart_records``). The registry, the
keeper and resumed sessions then load what they need by asking.

**Group commit.** Each ``Append`` (a session's records of one read) is a
tell. The actor takes every ``Append`` already waiting in its inbox,
appends them all, syncs once (mode fsync: one fdatasync), folds the records
into its state, then tells each sender ``Durable(token, offsets)``; the
session releases the PUBACK/PUBREC, SUBACK, PUBREL... it held. Under load
(appends still waiting when a sync ends) it lingers up to
``group_commit_interval`` to gather a larger batch; an isolated publish is
synced at once.

**Early answers** (mode fsync only). Senders of ``Append(early=True)`` (their
held messages are all QoS 1) are told ``Durable(token, offsets, synced=False)``
once the batch is *written*, before the fdatasync: they route the messages
while the disk syncs; PUBACKs wait for the final answer. Safe for QoS 1: a
crash before the sync leaves the publisher without PUBACK, so it resends (at
least once), and what a subscriber's session writes about the message lands
after its ``Publish`` in this append-only log. A failed write fails before
any early answer; a failed fdatasync after one fences its offsets off
(:mod:`.storage_lost`). Mode os has no early answers (nothing to wait for).

**Failures.** A failed write or fsync (``DiskFullError``, 0x97;
``StorageIOError``, 0x80) is answered ``NotDurable`` to every sender of the
batch (the log rolled itself back). Until a probe (a scratch file written
and fsynced, retried with exponential backoff on batches and ticks)
succeeds, later batches are refused at once without touching the disk;
then service resumes by itself.

**Housekeeping** on ``Tick`` (from the keeper, every second) and after a
segment roll: a checkpoint when the log grew enough since the last one
(:func:`~actorbroker.durable.restate`), then retention with the needed-from
watermark (the lowest offset a durable session or the checkpoint needs).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from pykka import ActorDeadError

from actorbroker.durable import DurableState, OffsetQueue, will_due_us
from actorbroker.durable.journal import message_of, subscription_of
from actorbroker.errors import StorageError
from actorbroker.persistence import CommitLog
from actorbroker.persistence.records import Record, WillSet
from actorbroker.session import AppMessage
from actorbroker.session.backoff import Backoff
from supervisors import ThreadActor

from .durable_messages import (
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
    OfflineSession,
    PendingWill,
    RestoredFlight,
    RoutingLoad,
    SessionLoad,
    StorageStatus,
    Tick,
)
from .node import Node
from .storage_lost import LostOffsets
from .storage_recovery import Housekeeper, StorageSettings, recover, restart_records

__all__ = ["StorageActor", "StorageSettings"]

log = logging.getLogger("actorbroker.storage")

#: Appends taken into one batch at most (bounds the time to the first reply).
_MAX_BATCH = 2048
#: An Append of a batch, the records written of it, and their offsets (-1: left out).
_Placed = tuple[Append, tuple[Record, ...], tuple[int, ...]]


def _code(error: StorageError) -> int:
    """The MQTT 5 reason code a refused PUBLISH gets for ``error`` (0x97 or 0x80)."""
    code: int = getattr(error, "reason_code", 0x80)
    return code


def _tell(ref: Any, message: Any) -> None:
    if ref is None:
        return
    try:
        ref.tell(message)
    except ActorDeadError:
        pass  # the session is gone; its records are stored all the same


class StorageActor(ThreadActor):
    """The commit log and the durable state (see the module doc)."""

    def __init__(self, settings: StorageSettings, node: Node) -> None:
        super().__init__()
        self.settings = settings
        self._node = node
        self.log: CommitLog | None = None
        self.state = DurableState(settings.fold)
        self.house: Housekeeper | None = None
        self._failure: StorageError | None = None
        self._probe = Backoff(settings.probe)
        self._next_probe = 0.0
        self._busy = False  # appends were waiting when the last sync ended
        self.batches = self.records = 0
        self._cut: dict[str, WillSet] = {}  # loose Wills at start: their connections are gone
        self._early = settings.mode == "fsync"  # answer early Appends before the fdatasync
        self._lost = LostOffsets()

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

    def on_stop(self) -> None:
        self._close(snapshot=True)

    def on_failure(self, exception_type: Any, exception_value: Any, traceback: Any) -> None:
        self._close(snapshot=False)

    def _close(self, *, snapshot: bool) -> None:
        current, self.log = self.log, None
        if current is None:
            return
        try:
            if snapshot and self.house is not None and self._failure is None:
                self.house.snapshot(current, self.state)
            current.close()
        except (OSError, StorageError) as exc:
            log.error("closing the commit log: %s", exc)

    # -- messages --------------------------------------------------------------

    def on_receive(self, message: Any) -> Any:
        cls = type(message)
        if cls is Append:
            self._commit(self._drain(message))
        elif cls is Fetch:
            _tell(message.reply_to, Fetched(message.token, tuple(
                self._message(offset) for offset in message.offsets)))
        elif cls is LoadSession:
            return self._load_session(message.client_id)
        elif cls is LoadRouting:
            return self._load_routing()
        elif cls is LoadOffline:
            return tuple(OfflineSession(i.client_id, i.expiry, i.since_us / 1e6)
                         for i in self.state.offline())
        elif cls is LoadWills:
            sessions = self.state.sessions
            return tuple(PendingWill(cid, will, due / 1e6, cid in sessions)
                         for cid, will, due in self.state.wills()
                         if cid in sessions or self._cut.get(cid) is will)
        elif cls is Tick:
            self._tick()
        elif cls is StorageStatus:
            return self._status()
        else:
            raise TypeError(f"storage: unexpected message {message!r}")
        return None

    def _drain(self, first: Append) -> list[Append]:
        """``first`` and every Append waiting right behind it (plain tells only)."""
        batch = [first]
        self._take(batch)
        if self._busy and self.settings.group_commit_interval > 0 and len(batch) < _MAX_BATCH:
            time.sleep(self.settings.group_commit_interval)  # under load: gather a larger batch
            self._take(batch)
        return batch

    def _take(self, batch: list[Append]) -> None:
        inbox: Any = self.actor_inbox
        with inbox.mutex:
            waiting = inbox.queue
            while waiting and len(batch) < _MAX_BATCH:
                envelope = waiting[0]
                if type(envelope.message) is not Append or envelope.reply_to is not None:
                    break
                batch.append(waiting.popleft().message)

    # -- group commit ------------------------------------------------------------

    def _commit(self, batch: list[Append]) -> None:
        current = self.log
        assert current is not None
        if self._failure is not None and not self._writable(current):
            self._refuse(batch, self._failure)
            return
        lost = self._lost
        try:
            lost.pad(current, int(time.time() * 1e6))  # nothing to do unless a sync failed
        except StorageError as exc:
            self._failed(exc)
            self._refuse(batch, exc)
            return
        placed: list[_Placed] = []
        for append in batch:
            try:
                records, kept = lost.keep(append.records)
                offsets = lost.align(len(append.records), kept, current.append(records))
                placed.append((append, records, offsets))
            except StorageError as exc:  # beyond max_disk_bytes: nothing of it was buffered
                self._failed(exc)
                _tell(append.reply_to, NotDurable(append.token, _code(exc), str(exc)))
            except ValueError as exc:  # a record that cannot be encoded (a bug upstream)
                log.error("storage: records refused: %s", exc)
                _tell(append.reply_to, NotDurable(append.token, 0x80, f"cannot store: {exc}"))
        segments = current.segment_count
        told = self._tell_written(current, placed) if self._early else False
        if told is None:
            return  # the write failed: refused
        end = current.next_offset
        try:
            current.sync()
        except StorageError as exc:
            self._failed(exc)
            if told:  # QoS 1 messages were routed with these offsets: never give them out again
                lost.lost(current.next_offset, end)
            self._refuse([a for a, _, _ in placed], exc)
            return
        state = self.state
        for append, records, offsets in placed:
            for offset, record in zip((o for o in offsets if o >= 0), records):
                state.apply(offset, record)
            if append.reply_to is not None:
                _tell(append.reply_to, Durable(append.token, offsets))
        state.position = current.next_offset
        self.batches += 1
        self.records += sum(len(r) for _, r, _ in placed)
        if state.drops:
            self._report_drops()
        inbox: Any = self.actor_inbox
        self._busy = bool(inbox.queue)
        if self.house is not None and (current.segment_count != segments
                                       or self.house.checkpoint_due(current)):
            self.house.maintain(current, state)

    def _tell_written(self, current: CommitLog, placed: list[_Placed]) -> bool | None:
        """Write the batch and tell early senders (mode fsync, before the fdatasync); True if
        any was told, None if the write failed (then the batch is refused)."""
        early = [(a, offsets) for a, _, offsets in placed if a.early and a.reply_to is not None]
        if not early:
            return False
        try:
            current.flush()  # a full disk fails here, before anything is routed
        except StorageError as exc:
            self._failed(exc)
            self._refuse([a for a, _, _ in placed], exc)
            return None
        for append, offsets in early:
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
            self._failed(exc)
            return
        for offset, record in zip(offsets, records):
            self.state.apply(offset, record)
        self.state.position = current.next_offset

    def _refuse(self, batch: list[Append], error: StorageError) -> None:
        for append in batch:
            _tell(append.reply_to, NotDurable(append.token, _code(error), str(error)))

    def _failed(self, error: StorageError) -> None:
        if self._failure is None:
            log.error("storage: %s; QoS 1/2 publishes are refused until it can write again",
                      error)
        self._failure = error
        self._next_probe = time.monotonic() + self._probe.next()

    def _writable(self, current: CommitLog) -> bool:
        """After a failure: probe when due (retention first: it may free room)."""
        if time.monotonic() < self._next_probe:
            return False
        if self.house is not None:
            self.house.retain(current, self.state)
        if current.probe():
            log.warning("storage: writing works again after %d probe(s); accepting publishes",
                        self._probe.attempt)
            self._failure = None
            self._probe.reset()
            return True
        self._next_probe = time.monotonic() + self._probe.next()
        return False

    def _report_drops(self) -> None:
        keeper = self._node.refs.keeper
        for client_id, reason, topic in self.state.drops:
            _tell(keeper, OfflineDropped(client_id, reason, topic))
        self.state.drops.clear()

    # -- reading back -------------------------------------------------------------

    def _message(self, offset: int) -> AppMessage | None:
        current = self.log
        if current is None:
            return None
        try:
            record = current.read_at(offset)
        except (ValueError, StorageError) as exc:
            log.error("storage: no message at offset %d: %s", offset, exc)
            return None
        return message_of(record, offset, now=time.monotonic(), wall=time.time())

    def _load_session(self, client_id: str) -> SessionLoad | None:
        image = self.state.sessions.get(client_id)
        if image is None:
            # Only a restarted actor asks for a session the log does not have as durable: a
            # clean session whose connection went with the old actor; its Will is due.
            loose = self.state.loose_wills.get(client_id)
            if loose is not None:
                _tell(self._node.refs.keeper, PendingWill(client_id, loose, 0.0, False))
            return None
        flights = []
        for packet_id, flight in (image.inflight or {}).items():
            message = self._message(flight.offset)
            flights.append(RestoredFlight(packet_id, message, flight.qos, flight.retain,
                                          flight.released))
        return SessionLoad(
            client_id, image.level, image.expiry, image.connected,
            tuple(subscription_of(f, options) for f, (options, _) in image.subs.items()),
            image.will, tuple(sorted(image.inbound or ())), tuple(flights),
            OffsetQueue() if image.queue is None else image.queue.copy(), self.state.position,
            0.0 if image.will is None else will_due_us(  # connected: its connection ends now
                image.will, int(time.time() * 1e6) if image.connected else image.since_us,
                image.expiry) / 1e6,
        )

    def _load_routing(self) -> RoutingLoad:
        subscriptions = tuple(
            (image.client_id, image.level, tuple((subscription_of(f, options), sub_id)
                                                 for f, (options, sub_id) in image.subs.items()))
            for image in self.state.sessions.values() if image.subs)
        retained = [self._message(offset) for offset in self.state.retained.values()]
        return RoutingLoad(subscriptions, tuple(m for m in retained if m is not None))

    # -- housekeeping ----------------------------------------------------------------

    def _tick(self) -> None:
        current = self.log
        if current is None:
            return
        if self._failure is not None:
            self._writable(current)
        elif self.house is not None:
            self.house.tick(current, self.state)

    def _status(self) -> dict[str, Any]:
        current = self.log
        figures: dict[str, Any] = {
            "mode": self.settings.mode, "batches": self.batches, "records": self.records,
            "failure": None if self._failure is None else str(self._failure),
            "sessions": len(self.state.sessions), "queued": self.state.queued_messages(),
            "retained": len(self.state.retained), "checkpoint": self.state.checkpoint,
            "needed_from": self.state.needed_from(),
        }
        if current is not None:
            figures.update(next_offset=current.next_offset, first_offset=current.first_offset,
                           size_bytes=current.size_bytes, segments=len(current.segments()))
        if self.house is not None:
            figures.update(self.house.figures())
        return figures
