"""The storage actor's start-up on a log that lost records: what comes back, what is lost.

Real log files are written (sessions, a retained message, queued messages,
checkpoints restated from the fold as the broker does), a range of them is
zeroed, and :func:`actorbroker.actors.storage.recovery.recover` folds what
is left. The rule (docs/storage.md, "Recovery"): a session or retained
message comes back when a record that restates or creates it survives; a
session whose every such record was in the damaged range is lost, even if
later records of it survive; queued messages whose ``PublishAccepted`` was damaged
are lost and counted.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from actorbroker.actors.storage.recovery import StorageSettings, recover
from actorbroker.durable import NEVER, DurableState, restate
from actorbroker.persistence import CommitLog
from actorbroker.persistence.records import (
    CheckpointCompleted,
    OutboundSent,
    PublishAccepted,
    PubRecReceived,
    Record,
    RetainedSet,
    SessionConnected,
    SessionDisconnected,
    SessionQueued,
    Subscribed,
)
from actorbroker.persistence.segment import HEADER

TS = 1_700_000_000_000_000
SEGMENT = 4096


class Writer:
    """A commit log and the fold of what was written to it, as the storage actor keeps them."""

    def __init__(self, data: Path) -> None:
        self.log = CommitLog(data / "log", segment_bytes=SEGMENT)
        self.state = DurableState()
        self.offsets: dict[str, int] = {}

    def add(self, *records: Record, name: str = "") -> int:
        offsets = self.log.append(records)
        for offset, record in zip(offsets, records):
            self.state.apply(offset, record)
        self.log.sync()
        if name:
            self.offsets[name] = offsets[0]
        return offsets[0]

    def checkpoint(self, number: int) -> tuple[int, list[tuple[int, Record]]]:
        """Restate the fold as a checkpoint; (its start, the restated records at their offsets)."""
        records = list(restate(self.state, number, self.log.read_at, TS))
        offsets = self.log.append([*records, CheckpointCompleted(number, 0, timestamp_us=TS)])
        self.log.sync()
        self.state.checkpoint = (number, offsets[0])
        return offsets[0], list(zip(offsets, records))


def session(cid: str) -> list[Record]:
    return [SessionConnected(cid, 4, False, False, NEVER, timestamp_us=TS),
            Subscribed(cid, "q/#", options=1, timestamp_us=TS),
            SessionDisconnected(cid, 0, 0, NEVER, timestamp_us=TS)]


def message(n: int) -> PublishAccepted:
    return PublishAccepted(f"q/{n}", b"m%03d" % n + b"." * 60, qos=1, client_id="pub", packet_id=n + 1,
                   timestamp_us=TS)


def zero(data: Path, start: int, stop: int) -> None:
    """Zero the log bytes holding offsets ``[start, stop)``, in whatever files they are."""
    for path in sorted((data / "log").glob("*.log")):
        base, size = int(path.stem), path.stat().st_size - HEADER.size
        first, last = max(start, base), min(stop, base + size)
        if first < last:
            with path.open("r+b") as f:
                f.seek(HEADER.size + first - base)
                f.write(bytes(last - first))


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "data"


def start(data: Path) -> DurableState:
    current, state, _ = recover(StorageSettings(data, segment_bytes=SEGMENT, snapshots=False))
    current.close()
    return state


def test_what_survives_of_a_checkpoint_whose_start_was_lost_still_counts(
    data: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    w = Writer(data)
    w.add(*session("a"), *session("b"))
    w.add(RetainedSet("r", b"kept", timestamp_us=TS))
    for n in range(10):
        w.add(message(n))
    _, restated = w.checkpoint(1)
    b_starts = next(o for o, r in restated if isinstance(r, SessionConnected) and r.client_id == "b")
    for n in range(10, 20):
        w.add(message(n))
    w.log.close()
    zero(data, 0, b_starts)  # everything before session b's restated records
    with caplog.at_level(logging.INFO):
        state = start(data)
    assert set(state.sessions) == {"b"}, "a: every record of it was in the damaged range"
    assert state.retained.keys() == {"r"}
    queue = state.sessions["b"].queue
    assert queue is not None and len(queue) == 10  # q/10..19; q/0..9 were damaged
    assert "what survives of checkpoint 1" in caplog.text
    assert "session 'b' lost 10 message(s), queued or in flight" in caplog.text


def test_an_intact_older_checkpoint_is_preferred_to_a_damaged_newer_one(data: Path) -> None:
    w = Writer(data)
    w.add(*session("a"), *session("b"))
    w.add(RetainedSet("r", b"kept", timestamp_us=TS))
    w.checkpoint(1)
    for n in range(10):
        w.add(message(n))
    _, restated = w.checkpoint(2)
    middle = restated[len(restated) // 2][0]
    for n in range(10, 20):
        w.add(message(n))
    w.log.close()
    zero(data, middle, middle + 40)
    state = start(data)
    assert set(state.sessions) == {"a", "b"} and state.retained.keys() == {"r"}
    for cid in "ab":
        queue = state.sessions[cid].queue
        assert queue is not None and len(queue) == 20
    assert state.checkpoint is not None and state.checkpoint[0] == 2


def test_a_session_whose_records_were_all_damaged_is_lost(data: Path) -> None:
    w = Writer(data)
    w.add(*session("a"), name="a")
    w.add(*session("b"), name="b")
    w.add(Subscribed("a", "more/#", options=1, timestamp_us=TS))  # survives, but a is unknown
    for n in range(5):
        w.add(message(n))
    w.log.close()
    zero(data, w.offsets["a"], w.offsets["b"])
    state = start(data)
    assert set(state.sessions) == {"b"}
    queue = state.sessions["b"].queue
    assert queue is not None and len(queue) == 5


def test_a_damaged_only_checkpoint_over_an_intact_history_folds_the_whole_log(
    data: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    w = Writer(data)
    w.add(*session("a"), *session("b"))
    for n in range(10):
        w.add(message(n))
    _, restated = w.checkpoint(1)
    queued = [o for o, r in restated if isinstance(r, SessionQueued)]
    for n in range(10, 20):
        w.add(message(n))
    w.log.close()
    zero(data, queued[3], queued[3] + 30)  # one restated queue entry
    with caplog.at_level(logging.INFO):
        state = start(data)
    assert "checkpoint 1 lost records; folding the whole log" in caplog.text
    for cid in "ab":  # the queues derive from the PublishAccepted records, which are all there
        queue = state.sessions[cid].queue
        assert queue is not None and len(queue) == 20


def test_flights_whose_message_was_lost_are_given_up(
    data: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    w = Writer(data)
    w.add(*session("a")[:2])  # connected, subscribed
    sent = w.add(message(0))
    released = w.add(message(1))
    after = w.add(OutboundSent("a", 1, sent, qos=1, timestamp_us=TS),
                  OutboundSent("a", 2, released, qos=2, timestamp_us=TS),
                  PubRecReceived("a", 2, timestamp_us=TS), session("a")[2])
    for n in range(2, 5):
        w.add(message(n))
    w.log.close()
    zero(data, sent, after)  # the two messages in flight
    with caplog.at_level(logging.INFO):
        state = start(data)
    image = state.sessions["a"]
    assert image.inflight is not None and list(image.inflight) == [2]  # PUBREL stage: kept
    assert image.queue is not None and len(image.queue) == 3
    assert "session 'a' lost 1 message(s), queued or in flight" in caplog.text
