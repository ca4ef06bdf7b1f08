"""Crash checker: which messages the broker dropped on purpose (a queue limit), read back from its commit log.

With ``max_queued_messages`` set, a session may lawfully miss messages:
those the broker dropped because its queue was full. It records them in two
ways, and both are read here, after the run, from the whole log (retention
is off in those runs):

* a live session writes ``SessionDropped(client_id, offset, "queue_full")``;
* an offline (hibernated) session's queue is derived from ``PublishAccepted``
  records by the durable fold, which applies the limit there and reports
  the drop (``DurableState.drops``): folding the log again in order with the
  same limit finds each one, next to the ``PublishAccepted`` that caused it.

Limits of this: a drop decided by a fold that started from a checkpoint
after a restart is the same decision (the checkpoint restates the queues),
so one fold from the beginning finds it too.
"""

from __future__ import annotations

from pathlib import Path

from actorbroker.durable import DurableState, FoldPolicy
from actorbroker.persistence.reader import LogReader
from actorbroker.persistence.records import PublishAccepted, SessionDropped


def queue_full_drops(log_dir: Path, limit: int) -> dict[str, set[bytes]]:
    """client id -> payloads the broker dropped for it because its queue was full."""
    state = DurableState(FoldPolicy(max_queued_messages=limit))
    payloads: dict[int, bytes] = {}
    dropped: dict[str, set[bytes]] = {}
    for entry in LogReader(log_dir).read():
        record = entry.record
        if isinstance(record, PublishAccepted):
            payloads[entry.offset] = record.payload
        elif isinstance(record, SessionDropped) and record.reason == "queue_full":
            dropped.setdefault(record.client_id, set()).add(payloads.get(record.offset, b""))
        before = len(state.drops)
        state.apply(entry.offset, record, entry.next_offset)
        for client_id, _, _ in state.drops[before:]:
            dropped.setdefault(client_id, set()).add(payloads[entry.offset])
    return dropped
