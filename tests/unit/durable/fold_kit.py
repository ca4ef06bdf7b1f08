"""Helpers of the fold tests: records at made-up offsets, folded as they are added."""

from __future__ import annotations

from actorbroker.durable import NEVER, DurableState
from actorbroker.persistence.records import (
    PublishAccepted,
    Record,
    SessionConnected,
    SessionDisconnected,
    Subscribed,
)

TS = 1_700_000_000_000_000


class Log:
    """A list of records at increasing offsets, folded as they are added."""

    def __init__(self, state: DurableState | None = None) -> None:
        self.state = state or DurableState()
        self.records: dict[int, Record] = {}
        self.next = 0

    def add(self, *records: Record) -> list[int]:
        offsets = []
        for record in records:
            offset, self.next = self.next, self.next + 100
            self.records[offset] = record
            self.state.apply(offset, record, self.next)
            offsets.append(offset)
        return offsets

    def read(self, offset: int) -> Record:
        return self.records[offset]


def connected(cid: str, *, clean: bool = False, expiry: int = NEVER, level: int = 4) -> Record:
    return SessionConnected(cid, level, clean, False, expiry, timestamp_us=TS)


def subscribed(cid: str, topic_filter: str, qos: int = 1, options: int = 0) -> Record:
    return Subscribed(cid, topic_filter, qos | options, timestamp_us=TS)


def publish(topic: str, qos: int = 1, *, payload: bytes = b"x", retain: bool = False,
            by: str = "pub", pid: int = 0) -> Record:
    return PublishAccepted(topic, payload, qos, retain, b"", by, pid, timestamp_us=TS)


def disconnected(cid: str, expiry: int = NEVER, ts: int = TS) -> Record:
    return SessionDisconnected(cid, 2, 0, expiry, timestamp_us=ts)


def queue_of(log: Log, cid: str) -> list[tuple[int, int, bool]]:
    queue = log.state.sessions[cid].queue
    return [(e.offset, e.qos, e.retain) for e in queue or ()]
