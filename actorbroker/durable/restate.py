"""Durability layer: a checkpoint, the durable state restated as records. Stdlib, routing and persistence only.

A checkpoint bounds recovery and lets retention delete old segments: the
storage actor appends ``CheckpointStarted(id)``, then the whole
:class:`~.fold.DurableState` as records flagged ``RESTATED`` (the pipeline
skips them when it counts events), in one batch with nothing in between,
and ``CheckpointCompleted(id, started_at)``. Recovery folds from the
``CheckpointStarted`` of the latest complete checkpoint into an empty state;
:func:`restate` writes records that rebuild exactly the state they came
from (tests/unit/durable check ``fold(restate(s)) == s``).

Per durable session: ``SessionConnected`` (expiry, protocol level),
``Subscribed`` per filter, its ``WillSet``, a payload-less ``PublishAccepted`` per
inbound QoS 2 packet id awaiting PUBREL, ``OutboundSent`` per flow in
flight (then ``OutboundUnsent`` for one whose PUBLISH was never written;
``PubRecReceived`` for those in the PUBREL stage, in PUBREC order),
``SessionQueued`` per queued message, then ``SessionDisconnected`` (with the
time it went offline) unless it was connected. Then the loose
Wills (of clean sessions, or due since their session ended) as ``WillSet``
records of client ids without a session, a ``SharedPending`` per message a
shared group still owes, and a self-contained ``RetainedSet`` per retained message (read back from the log with ``read``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

from actorbroker.persistence.records import (
    CheckpointStarted,
    OutboundSent,
    OutboundUnsent,
    PublishAccepted,
    PubRecReceived,
    Record,
    RetainedSet,
    SessionConnected,
    SessionDisconnected,
    SessionQueued,
    SharedPending,
    Subscribed,
)

from .fold import DurableState, SessionImage

__all__ = ["restate", "restate_session"]


def restate(state: DurableState, checkpoint_id: int, read: Callable[[int], Record],
            ts: int) -> Iterator[Record]:
    """``CheckpointStarted`` and the restated state (the caller appends ``CheckpointCompleted``)."""
    yield CheckpointStarted(checkpoint_id, timestamp_us=ts)
    for image in list(state.sessions.values()):
        yield from restate_session(state, image, ts)
    for will in list(state.loose_wills.values()):
        yield dataclasses.replace(will, restated=True)
    for group, entry in list(state.shared.items()):  # after the members' Subscribed
        yield SharedPending(group, entry.offset, entry.qos, entry.retain,
                            state.topic_of(entry.topic), entry.size, timestamp_us=ts,
                            restated=True)
    for topic, offset in list(state.retained.items()):
        record = read(offset)
        if isinstance(record, RetainedSet):
            yield dataclasses.replace(record, restated=True)
        elif isinstance(record, PublishAccepted):
            yield RetainedSet(topic, record.payload, record.qos, record.properties,
                              record.client_id, timestamp_us=record.timestamp_us, restated=True)


def restate_session(state: DurableState, image: SessionImage, ts: int) -> Iterator[Record]:
    """The restated records of one durable session."""
    cid = image.client_id
    yield SessionConnected(cid, image.level, False, False, image.expiry,
                           username=image.owner, timestamp_us=ts, restated=True)
    for topic_filter, (options, subscription_id) in image.subs.items():
        yield Subscribed(cid, topic_filter, options, subscription_id, timestamp_us=ts,
                         restated=True)
    if image.will is not None:
        yield dataclasses.replace(image.will, restated=True)
    for packet_id in sorted(image.inbound or ()):
        yield PublishAccepted("", b"", 2, False, b"", cid, packet_id, timestamp_us=ts, restated=True)
    flights = image.inflight or {}
    for packet_id, flight in flights.items():
        if not flight.released:
            yield OutboundSent(cid, packet_id, flight.offset, flight.qos, flight.retain,
                               timestamp_us=ts, restated=True)
            if flight.unsent:
                yield OutboundUnsent(cid, packet_id, timestamp_us=ts, restated=True)
    for packet_id, flight in flights.items():  # PUBREL stage, in PUBREC order
        if flight.released:
            yield OutboundSent(cid, packet_id, flight.offset, flight.qos, flight.retain,
                               timestamp_us=ts, restated=True)
            yield PubRecReceived(cid, packet_id, timestamp_us=ts, restated=True)
    for entry in image.queue or ():
        yield SessionQueued(cid, entry.offset, entry.qos, entry.retain, (),
                            state.topic_of(entry.topic), entry.size, timestamp_us=ts,
                            restated=True)
    if not image.connected:
        yield SessionDisconnected(cid, 0, 0, image.expiry, timestamp_us=image.since_us,
                                  restated=True)
