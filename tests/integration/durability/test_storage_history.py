"""The storage actor writes history nobody waits for after what somebody waits for.

A clean session's ``Subscribed`` records are journaled for the pipeline only;
a subscription storm makes tens of thousands of them, and a publisher's
PUBACK waited behind all of them (600 ms in bench/storm.py). Here the
storage actor of a real broker (mode fsync) is told 40 such appends of
1,000 records, then one that a sender waits for: it is written after at
most a few of them, every deferred record still reaches the log, and a
client's own records keep their order (its deferred history first).
"""

from __future__ import annotations

import queue
import threading
from pathlib import Path
from typing import Any

from durability_kit import durable_config, running

from actorbroker.actors.storage.requests import Append, Durable, Fetch, Fetched
from actorbroker.persistence.reader import LogReader
from actorbroker.persistence.records import Subscribed

APPENDS, RECORDS = 40, 1000


class _Waiter:
    """A sender's ref: what the storage actor tells it lands in a queue. Told a
    ``Fetched``, it keeps the storage actor until ``go`` is set, so that the test
    fills its inbox first (else the GIL interleaves the two threads' turns)."""

    def __init__(self) -> None:
        self.told: queue.Queue[Any] = queue.Queue()
        self.held = threading.Event()
        self.go = threading.Event()

    def tell(self, message: Any) -> None:
        if isinstance(message, Fetched):
            self.held.set()
            assert self.go.wait(30)
        self.told.put(message)


def _history(client_id: str, n: int) -> Append:
    return Append(tuple(Subscribed(client_id, f"storm/{n}/{k}/+", 0, timestamp_us=1)
                        for k in range(RECORDS)), None, 0)


def test_history_waits_behind_appends_a_sender_waits_for(tmp_path: Path) -> None:
    data = tmp_path / "data"
    waiter = _Waiter()
    with running(durable_config(data)) as broker:
        storage = broker.node.names.storage()
        assert storage is not None
        storage.tell(Fetch((), waiter, 0))
        assert waiter.held.wait(10)
        for n in range(APPENDS):
            storage.tell(_history(f"storm-{n % 4}", n))
        # Urgent, of a client with no history, then of storm-3 (its history goes first).
        storage.tell(Append((Subscribed("prober", "probe/t", 1, timestamp_us=1),), waiter, 1))
        storage.tell(Append((Subscribed("storm-3", "mine", 1, timestamp_us=1),), waiter, 2))
        waiter.go.set()
        answers = {}
        while len(answers) < 2:
            answer = waiter.told.get(timeout=30)
            if isinstance(answer, Durable) and answer.synced:
                answers[answer.token] = answer.offsets[0]
    order = [(e.offset, e.record.client_id, e.record.topic_filter)
             for e in LogReader(data / "log").read()
             if isinstance(e.record, Subscribed) and not e.record.restated]
    assert len(order) == APPENDS * RECORDS + 2  # nothing deferred was lost at the stop
    offsets = [o for o, _, _ in order]
    before_prober = offsets.index(answers[1])
    # First come, first served it came after all 40,000 (600 ms of writes); now after none.
    assert before_prober == 0, before_prober
    mine = offsets.index(answers[2])
    storm3 = [i for i, (_, cid, f) in enumerate(order) if cid == "storm-3" and f != "mine"]
    assert len(storm3) == APPENDS // 4 * RECORDS
    assert max(storm3) < mine  # storm-3's history, then its own urgent record
    by_client: dict[str, list[int]] = {}
    for _, cid, topic_filter in order:
        if topic_filter.startswith("storm/"):
            by_client.setdefault(cid, []).append(int(topic_filter.split("/")[1]))
    assert all(ns == sorted(ns) for ns in by_client.values())  # each client's in order
