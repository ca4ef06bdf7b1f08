"""Actors layer: the storage actor's start-up (recovery) and housekeeping (checkpoints, retention, snapshots). Stdlib, persistence, durable, config, session.

Runs on the storage actor's thread only.

**Start-up** (:func:`recover`): open the commit log (its own recovery
truncates a torn tail and quarantines a damaged segment; it never fails on
damaged data), then fold it into a :class:`~actorbroker.durable.DurableState`
from the best starting point:

1. a signed dill snapshot (``data_dir/snapshot.dill``), if it verifies, is
   of this version, and the log still holds every record after its offset;
2. else the latest complete checkpoint that lost no record
   (``data_dir/checkpoint`` names its offset; without that file, or when
   the log lost records after it began, the log is scanned for one), or
   what survives of the latest one if they all lost some
   (:mod:`.damage`);
3. else the whole log.

The log's recovery keeps every intact record and turns damaged ranges into
gaps; queued messages whose records fell in one are taken out of their
queues and counted in the start-up line. The storage actor then
appends :func:`restart_records`: the end of the connections the crash cut,
and what shared groups still owe handed to their durable members.

**Housekeeping** (:class:`Housekeeper`): a checkpoint when the log grew by
``max(checkpoint_bytes, 2 x the last checkpoint's size)`` since the last
one, or on a tick after ``checkpoint_interval`` seconds with new records;
retention after each checkpoint, segment roll and tick, with
``needed_from`` = the lowest offset a durable session or the checkpoint
needs (nothing is deleted before the first checkpoint); a snapshot after
each checkpoint and at a clean stop.
"""

from __future__ import annotations

import ctypes
import gc
import json
import logging
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

from actorbroker import __version__
from actorbroker.config import Config
from actorbroker.durable import DurableState, FoldPolicy, restate
from actorbroker.durable.snapshot import SnapshotKeyError, load_key, read_snapshot, write_snapshot
from actorbroker.errors import CorruptRecordError, StorageError
from actorbroker.persistence import DEFAULT_SEGMENT_BYTES, CommitLog, Event, LogEntry, RetentionPolicy
from actorbroker.persistence.records import (
    CheckpointCompleted,
    CheckpointStarted,
    DisconnectCause,
    Record,
    SessionDisconnected,
    SharedRouted,
)
from actorbroker.session.backoff import BackoffPolicy

from .damage import choose_checkpoint, forget_lost, holds

__all__ = ["STATE_VERSION", "Housekeeper", "StorageSettings", "entries", "internal_backoff",
           "recover"]

log = logging.getLogger("actorbroker.storage")

#: Version of the folded state's layout, part of a snapshot's version string.
STATE_VERSION = 3  # 2: loose Wills (DurableState.loose_wills); 3: SessionImage.owner
_CHECKPOINT_FILE = "checkpoint"
_CHUNK = 4096
_DAMAGE = (Event.TORN_TAIL, Event.COMMITTED_LOST, Event.QUARANTINED)


@dataclass(frozen=True, slots=True)
class StorageSettings:
    """What the storage actor needs from ``[node]``, ``[storage]`` and ``[retry]``."""

    data_dir: Path
    mode: str = "fsync"
    segment_bytes: int = DEFAULT_SEGMENT_BYTES
    max_disk_bytes: int = 0
    retention: RetentionPolicy = field(default_factory=RetentionPolicy)
    group_commit_interval: float = 0.002  # seconds
    fold: FoldPolicy = field(default_factory=FoldPolicy)
    checkpoint_bytes: int = 0  # 0: segment_bytes
    checkpoint_interval: float = 300.0
    snapshots: bool = True
    probe: BackoffPolicy = field(default_factory=lambda: BackoffPolicy(0.05, 2.0, 5.0, 0.2))

    @classmethod
    def from_config(cls, config: Config, **overrides: Any) -> StorageSettings:
        """The settings a configuration describes (``durability`` must not be memory)."""
        storage = config.storage
        data_dir = overrides.pop("data_dir", config.node.data_dir)
        if data_dir is None:
            raise ValueError("the commit log needs a data directory ([node] data_dir)")
        values: dict[str, Any] = dict(
            data_dir=Path(data_dir), mode=storage.durability,
            segment_bytes=storage.segment_bytes, max_disk_bytes=storage.max_disk_bytes,
            retention=RetentionPolicy.from_config(storage.retention_hours,
                                                  storage.retention_bytes,
                                                  storage.max_disk_bytes),
            group_commit_interval=storage.group_commit_interval / 1000.0,
            # A durable session's queue is log offsets: bounded by bytes, not by a count.
            fold=FoldPolicy(0, storage.durable_queue_bytes),
            checkpoint_bytes=storage.checkpoint_bytes,
            checkpoint_interval=storage.checkpoint_interval,
            snapshots=storage.snapshots,
            probe=internal_backoff(config),
        )
        values.update(overrides)
        return cls(**values)

    @property
    def version(self) -> str:
        """What a snapshot must have been written by to be loaded."""
        return f"actorbroker {__version__}, state {STATE_VERSION}"


def internal_backoff(config: Config) -> BackoffPolicy:
    """The backoff of the broker's own retries ([retry] internal_base, factor, jitter; cap 10 s)."""
    retry = config.retry
    return BackoffPolicy(retry.internal_base, retry.factor, max(retry.internal_base, 10.0),
                         retry.jitter)


def _trim() -> None:
    """Return freed heap memory to the OS (glibc's malloc_trim; a no-op elsewhere)."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def entries(current: CommitLog, start: int) -> Iterator[LogEntry]:
    """Every readable record from ``start``; a damaged segment is logged and skipped."""
    for segment in current.segments():
        if segment.end <= start or segment.size == 0:
            continue
        try:
            yield from current.read(max(start, segment.base), segment.end)
        except (CorruptRecordError, ValueError) as exc:
            log.error("commit log: segment %d unreadable from there on (%s); skipped",
                      segment.base, exc)


def recover(settings: StorageSettings) -> tuple[CommitLog, DurableState, Housekeeper]:
    """Open the log, fold it (see the module doc); never fails on damaged data."""
    started = time.monotonic()
    current = CommitLog(settings.data_dir / "log", mode=settings.mode,
                        segment_bytes=settings.segment_bytes, max_bytes=settings.max_disk_bytes)
    house = Housekeeper(settings)
    state, start, how = house.initial_state(current)
    count = state.apply_all(entries(current, start))
    if state.restating:
        log.error("commit log: the checkpoint at offset %d is incomplete; folding the whole log",
                  start)
        state, start, how = DurableState(settings.fold), current.first_offset, "the whole log"
        count = state.apply_all(entries(current, start))
    lost = forget_lost(current, state)
    state.position = current.next_offset
    house.started(current, state)
    _trim()  # give back what unpickling or folding used only for a while
    log.info("commit log %s (%s): %d records folded from offset %d (%s) in %.2f s: "
             "%d durable sessions, %d queued messages, %d retained%s", settings.data_dir / "log",
             settings.mode, count, start, how, time.monotonic() - started, len(state.sessions),
             state.queued_messages(), len(state.retained),
             f"; {lost} messages lost with damaged records" if lost else "")
    return current, state, house


def restart_records(state: DurableState) -> list[Record]:
    """What the storage actor appends at start, after folding, before any session or router
    runs: a ``SessionDisconnected`` for each session connected when the broker went down
    (its connection is gone), and ``SharedRouted`` records giving what shared groups still
    owe (published, acknowledged, never routed before the crash) to their durable members
    in turn (durable/shared.py)."""
    ts = int(time.time() * 1e6)
    records: list[Record] = [
        SessionDisconnected(image.client_id, DisconnectCause.SERVER_SHUTDOWN, 0, image.expiry,
                            "the broker restarted", timestamp_us=ts)
        for image in state.sessions.values() if image.connected]
    handed = dropped = 0
    for group, client_id, entry, qos in state.shared.assign(lambda c: c in state.sessions):
        options, sub_id = (state.sessions[client_id].subs.get(group, (0, 0)) if client_id
                           else (0, 0))
        records.append(SharedRouted(group, client_id, entry.offset, qos,
                                    entry.retain and bool(options & 0x08),
                                    (sub_id,) if sub_id else (), state.topic_of(entry.topic),
                                    entry.size, timestamp_us=ts))
        handed, dropped = (handed + 1, dropped) if client_id else (handed, dropped + 1)
    if handed or dropped:
        log.warning("commit log: %d shared subscription message(s) the crash left undelivered "
                    "handed to a member of their group; %d with no durable member left dropped",
                    handed, dropped)
    return records


class Housekeeper:
    """Checkpoints, retention and snapshots of one storage actor (see the module doc)."""

    def __init__(self, settings: StorageSettings) -> None:
        self.settings = settings
        self.key: bytes | None = None
        if settings.snapshots:
            try:
                self.key = load_key(settings.data_dir)
            except (SnapshotKeyError, OSError) as exc:
                log.warning("snapshots off: %s", exc)
        self.checkpoints = 0
        self.deleted_segments = 0
        self._last_end = 0
        self._last_size = 0
        self._last_time = time.monotonic()

    # -- start-up -------------------------------------------------------------------

    def initial_state(self, current: CommitLog) -> tuple[DurableState, int, str]:
        """(state to fold into, offset to fold from, how it was chosen)."""
        settings = self.settings
        if self.key is not None:
            found = read_snapshot(settings.data_dir, self.key, settings.version)
            if found is not None:
                state, offset = found
                problem = self._snapshot_problem(current, state, offset)
                if problem is None:
                    state.policy = settings.fold
                    return state, offset, "snapshot"
                log.warning("snapshot ignored: %s; replaying the log instead", problem)
        chosen = self._checkpoint_start(current)
        if chosen is None:
            return DurableState(settings.fold), current.first_offset, "the whole log"
        start, damaged = chosen
        state = DurableState(settings.fold)
        if damaged is None:
            return state, start, "checkpoint"
        # Its CheckpointStarted was lost: tell the fold the checkpoint starts here, so that
        # the restated records that survive count (the record is not written anywhere).
        state.apply(start, CheckpointStarted(damaged, timestamp_us=0))
        return state, start, f"what survives of checkpoint {damaged}"

    def _snapshot_problem(self, current: CommitLog, state: object, offset: int) -> str | None:
        if not isinstance(state, DurableState):
            return f"it holds a {type(state).__name__}"
        if not current.first_offset <= offset <= current.next_offset:
            return (f"it was taken at offset {offset}, the log holds "
                    f"{current.first_offset}..{current.next_offset}")
        report = current.recovery
        damage = [] if report is None else [e for e in report.events
                                            if e.event in _DAMAGE and e.offset < offset]
        if damage:
            return f"the log lost records it was folded from ({damage[0]})"
        return None

    def _checkpoint_start(self, current: CommitLog) -> tuple[int, int | None] | None:
        """Where to fold from (damage.choose_checkpoint); the checkpoint file saves
        the scan when nothing after the checkpoint's start was lost."""
        path = self.settings.data_dir / _CHECKPOINT_FILE
        try:
            saved = json.loads(path.read_text())
            start = int(saved["started_at"])
            record = current.read_at(start)
            if not (isinstance(record, CheckpointStarted) and record.checkpoint_id == saved["id"]):
                log.warning("%s names no checkpoint of this log; scanning the log", path)
            elif holds(current, start, current.next_offset):
                return start, None
            else:
                log.warning("the log lost records after checkpoint %d began; scanning the log",
                            record.checkpoint_id)
        except FileNotFoundError:
            pass
        except (OSError, ValueError, KeyError, TypeError, StorageError) as exc:
            log.warning("%s unusable (%s); scanning the log for a checkpoint", path, exc)
        return choose_checkpoint(current, entries(current, current.first_offset))

    def started(self, current: CommitLog, state: DurableState) -> None:
        self._last_end = state.checkpoint[1] if state.checkpoint else current.first_offset
        self._last_time = time.monotonic()

    # -- housekeeping --------------------------------------------------------------------

    def checkpoint_due(self, current: CommitLog) -> bool:
        threshold = max(self.settings.checkpoint_bytes or self.settings.segment_bytes,
                        2 * self._last_size)
        return current.next_offset - self._last_end >= threshold

    def maintain(self, current: CommitLog, state: DurableState) -> None:
        """After a segment roll or enough growth: checkpoint if due, then retention."""
        if self.checkpoint_due(current):
            self.checkpoint(current, state)
        self.retain(current, state)

    def tick(self, current: CommitLog, state: DurableState) -> None:
        """Periodic: a checkpoint after ``checkpoint_interval`` with news, then retention."""
        if (current.next_offset > self._last_end
                and time.monotonic() - self._last_time >= self.settings.checkpoint_interval):
            self.checkpoint(current, state)
        self.retain(current, state)

    def checkpoint(self, current: CommitLog, state: DurableState) -> bool:
        """Restate ``state`` into the log (one batch); False if the log refused it."""
        began = time.monotonic()
        number = (state.checkpoint[0] + 1) if state.checkpoint else 1
        start = current.next_offset
        ts = int(time.time() * 1e6)
        records = restate(state, number, current.read_at, ts)
        try:
            while chunk := list(islice(records, _CHUNK)):
                current.append(chunk)
            current.append([CheckpointCompleted(number, start, timestamp_us=ts)])
            current.sync()
        except StorageError as exc:
            log.error("checkpoint %d not written: %s", number, exc)
            return False
        state.checkpoint = (number, start)
        state.position = current.next_offset
        self._last_end, self._last_size = current.next_offset, current.next_offset - start
        self._last_time = time.monotonic()
        self.checkpoints += 1
        self._save_checkpoint(number, start)
        log.info("checkpoint %d at offset %d: %d bytes in %.2f s", number, start,
                 self._last_size, time.monotonic() - began)
        self.snapshot(current, state)
        return True

    def _save_checkpoint(self, number: int, start: int) -> None:
        path = self.settings.data_dir / _CHECKPOINT_FILE
        temp = path.with_suffix(".tmp")
        try:
            temp.write_text(json.dumps({"id": number, "started_at": start}))
            fd = os.open(temp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temp, path)
        except OSError as exc:  # a later start scans for it instead
            log.warning("cannot write %s: %s", path, exc)

    def retain(self, current: CommitLog, state: DurableState) -> None:
        """Delete the segments the retention policy allows and nothing needs."""
        policy = self.settings.retention
        if not (policy.max_age or policy.max_bytes or policy.max_disk_bytes):
            return
        needed = state.needed_from() if state.checkpoint else current.first_offset
        try:
            plan = current.apply_retention(policy, needed_from=needed)
        except OSError as exc:
            log.warning("retention: %s", exc)
            return
        if plan.delete:
            self.deleted_segments += len(plan.delete)
            log.info("retention: %d segment(s) deleted, %d bytes kept", len(plan.delete),
                     plan.kept_bytes)

    def snapshot(self, current: CommitLog, state: DurableState) -> None:
        """Write a signed snapshot of ``state`` (folded up to the log's end), if enabled."""
        if self.key is None or state.position != current.next_offset:
            return
        try:
            write_snapshot(self.settings.data_dir, self.key, state, state.position,
                           self.settings.version)
        except Exception as exc:  # a snapshot only saves start-up time: never fail for it
            log.warning("snapshot not written: %r", exc)

    def figures(self) -> dict[str, Any]:
        return {"checkpoints": self.checkpoints, "deleted_segments": self.deleted_segments}
