"""Actors layer: folding a commit log that lost records (damaged ranges, missing segments). Stdlib, persistence, durable.

Runs on the storage actor's thread only, at start-up (:mod:`.recovery`).

The log's own recovery keeps every intact frame and turns what it lost into
gaps between segments (docs/storage.md, "Recovery"). What is left here is
to fold the most that the surviving records allow:

* :func:`choose_checkpoint`: the latest complete checkpoint whose records are
  all there; when every complete checkpoint lost a part, the whole log if
  all of it is there up to the latest one, else what survives of the
  latest one (a session whose restated records survive comes back, one
  whose records were all in the damaged part does not): in a fold of the
  whole log restated records do not count, so every session that did
  nothing since its records were lost would be lost too;
* :func:`forget_lost`: queued and in-flight messages whose ``PublishAccepted``
  record is gone are taken out of their sessions and counted, so the log
  says how many messages each session lost (the session would otherwise
  find out one by one, at delivery, and resend a lost flight as an empty
  PUBLISH).
"""

from __future__ import annotations

import logging
from bisect import bisect_right
from collections.abc import Iterable

from actorbroker.durable import DurableState
from actorbroker.persistence import CommitLog, LogEntry
from actorbroker.persistence.records import CheckpointCompleted

__all__ = ["Checkpoint", "choose_checkpoint", "forget_lost", "holds"]

log = logging.getLogger("actorbroker.storage")

#: (checkpoint id, offset of its CheckpointStarted, offset of its CheckpointCompleted).
Checkpoint = tuple[int, int, int]


def holds(current: CommitLog, start: int, stop: int) -> bool:
    """True when live segments hold every offset of ``[start, stop)``: nothing was lost there."""
    covered = start
    for segment in current.segments():
        if segment.end <= covered:
            continue
        if segment.base > covered:
            return False
        covered = segment.end
        if covered >= stop:
            return True
    return covered >= stop


def choose_checkpoint(current: CommitLog, found: Iterable[LogEntry]) -> tuple[int, int | None] | None:
    """Where to fold from, among the complete checkpoints in ``found`` (entries in log order).

    Returns ``(offset, None)`` for an intact checkpoint (fold from its
    ``CheckpointStarted``); ``(offset, id)`` when only a damaged one is left:
    fold from ``offset``, the first live offset of the checkpoint, taking its
    restated records as if it started there; None when there is no checkpoint.
    """
    checkpoints: list[Checkpoint] = [
        (e.record.checkpoint_id, e.record.started_at, e.offset)
        for e in found if isinstance(e.record, CheckpointCompleted)]
    for _, started, completed in reversed(checkpoints):
        if holds(current, started, completed):
            return started, None
    if not checkpoints:
        return None
    number, started, completed = checkpoints[-1]
    if holds(current, 0, started):
        # All the history before it is there: folding it all loses only what was damaged
        # (restated records do not count in it), where the damaged checkpoint would also
        # lose the state its damaged records restated.
        log.error("commit log: checkpoint %d lost records; folding the whole log", number)
        return None
    resume = next(max(started, s.base) for s in current.segments() if s.end > started)
    log.error("commit log: every checkpoint lost records; folding what survives of checkpoint "
              "%d (offsets %d..%d of it, from %d): sessions whose restated records were "
              "lost are lost", number, started, completed, resume)
    return resume, number


def forget_lost(current: CommitLog, state: DurableState) -> int:
    """Take messages whose records the log lost out of their sessions' queues and flights
    (a flight in the PUBREL stage stays: it needs no message); log and count them."""
    segments = current.segments()
    bases = [s.base for s in segments]

    def lost(offset: int) -> bool:
        index = bisect_right(bases, offset) - 1
        return index < 0 or offset >= segments[index].end

    total = 0
    for image in state.sessions.values():
        gone: list[int] = []
        if image.queue is not None:
            gone = [entry.offset for entry in image.queue if lost(entry.offset)]
            for offset in gone:
                image.queue.remove(offset)
        # Resent, a flight whose message is gone would be a PUBLISH with nothing in it.
        for packet_id, flight in list((image.inflight or {}).items()):
            if not flight.released and lost(flight.offset):
                del image.flights()[packet_id]
                gone.append(flight.offset)
        gone.sort()
        if gone:
            total += len(gone)
            log.error("commit log: session %r lost %d message(s), queued or in flight, with "
                      "their damaged records (offsets %d..%d)", image.client_id, len(gone),
                      gone[0], gone[-1])
    return total
