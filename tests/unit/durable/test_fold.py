"""DurableState: what folding the commit log's records gives, record by record, and checkpoints.

Records are applied at made-up offsets (``Log`` below), as the storage actor
applies them after a sync. The last test is the checkpoint's contract:
folding the restated records of any state gives that state back.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from fold_kit import TS, Log, connected, disconnected, publish, queue_of, subscribed

from actorbroker.durable import NEVER, DurableState, FoldPolicy, restate
from actorbroker.persistence.records import (
    CheckpointCompleted,
    CheckpointStarted,
    OutboundSent,
    OutboundUnsent,
    PubAckReceived,
    PubCompReceived,
    PubRecReceived,
    PubRelReceived,
    RetainedCleared,
    RetainedSet,
    SessionConnected,
    SessionDropped,
    SessionExpired,
    SessionQueued,
    SharedPending,
    SharedRouted,
    Unsubscribed,
    WillCleared,
    WillSent,
    WillSet,
)

def test_a_publish_is_queued_for_every_matching_durable_session_at_the_granted_qos() -> None:
    log = Log()
    log.add(connected("a"), subscribed("a", "t/#", 1), connected("b"), subscribed("b", "t/+", 2),
            subscribed("b", "t/x", 0), connected("clean", clean=True, expiry=0),
            subscribed("clean", "#", 2))
    [q2] = log.add(publish("t/x", 2))
    [q0] = log.add(publish("t/x", 0))
    [other] = log.add(publish("u/x", 1))
    assert queue_of(log, "a") == [(q2, 1, False)]
    assert queue_of(log, "b") == [(q2, 2, False)], "highest grant of the matching filters"
    assert "clean" not in log.state.sessions and q0 and other
    assert log.state.needed_from() == q2


def test_no_local_and_retain_as_published_are_honoured() -> None:
    log = Log()
    log.add(connected("me", level=5), subscribed("me", "chat", 1, options=0x04),
            connected("rap", level=5), subscribed("rap", "chat", 1, options=0x08))
    [mine] = log.add(publish("chat", by="me", retain=True))
    [theirs] = log.add(publish("chat", by="other"))
    assert queue_of(log, "me") == [(theirs, 1, False)]
    assert queue_of(log, "rap") == [(mine, 1, True), (theirs, 1, False)]


def test_retain_as_published_on_any_overlapping_subscription_keeps_retain() -> None:
    """As a live delivery: the highest QoS of the matching subscriptions, and RETAIN kept
    when any of them is Retain As Published (here the lower-QoS one)."""
    log = Log()
    log.add(connected("both", level=5), subscribed("both", "#", 0, options=0x08),
            subscribed("both", "a/a", 1))
    [kept] = log.add(publish("a/a", by="other", retain=True))
    assert queue_of(log, "both") == [(kept, 1, True)]


def test_offline_limits_drop_the_new_message_and_report_it() -> None:
    log = Log(DurableState(FoldPolicy(max_queued_messages=2)))
    log.add(connected("s"), subscribed("s", "t"))
    online = log.add(publish("t"), publish("t"), publish("t"))
    assert [o for o, _, _ in queue_of(log, "s")] == online and log.state.drops == [], (
        "online, the session actor applies the limits")
    log.add(disconnected("s"))
    log.add(publish("t"))
    assert [o for o, _, _ in queue_of(log, "s")] == online
    assert log.state.drops == [("s", "queue_full", "t")]


def test_outbound_flows_move_from_queue_to_flight_and_end_with_their_acks() -> None:
    log = Log()
    log.add(connected("s"), subscribed("s", "t", 2))
    m1, m2, m3 = log.add(publish("t", 1), publish("t", 2), publish("t", 2))
    log.add(OutboundSent("s", 1, m1, 1, timestamp_us=TS), OutboundSent("s", 2, m2, 2, timestamp_us=TS),
            OutboundSent("s", 3, m3, 2, timestamp_us=TS))
    image = log.state.sessions["s"]
    assert not image.queue and list(image.inflight or {}) == [1, 2, 3]
    log.add(PubRecReceived("s", 2, timestamp_us=TS), PubAckReceived("s", 1, timestamp_us=TS))
    flights = image.inflight or {}
    assert [(pid, f.released) for pid, f in flights.items()] == [(3, False), (2, True)]
    log.add(PubCompReceived("s", 2, timestamp_us=TS))
    assert list(flights) == [3] and log.state.needed_from() == m3
    log.add(SessionDropped("s", m3, "too_large", timestamp_us=TS))  # MQTT 5 drops flights too
    assert list(flights) == [] and log.state.needed_from() is None


def test_a_flight_never_written_is_marked_until_it_is_sent_again() -> None:
    log = Log()
    log.add(connected("s"), subscribed("s", "t", 2))
    m1, m2, m3 = log.add(publish("t", 1), publish("u", 1), publish("t", 2))
    log.add(OutboundSent("s", 1, m1, 1, timestamp_us=TS),
            OutboundSent("s", 2, m2, 1, timestamp_us=TS), OutboundSent("s", 3, m3, 2, timestamp_us=TS), PubRecReceived("s", 3, timestamp_us=TS),
            OutboundUnsent("s", 2, timestamp_us=TS), OutboundUnsent("s", 3, timestamp_us=TS),
            OutboundUnsent("s", 9, timestamp_us=TS), disconnected("s"))
    flights = log.state.sessions["s"].inflight or {}
    # The PUBREL stage and an unknown id are not marked: the client had that PUBLISH.
    assert [(pid, f.unsent) for pid, f in flights.items()] == [(1, False), (2, True), (3, False)]
    log.add(connected("s"), OutboundSent("s", 2, m2, 1, timestamp_us=TS))  # sent with DUP=0
    assert [(pid, f.unsent) for pid, f in flights.items()] == [(1, False), (2, False), (3, False)]


def test_inbound_qos2_packet_ids_open_with_the_publish_and_close_with_pubrel() -> None:
    log = Log()
    log.add(connected("p"), publish("t", 2, by="p", pid=7), publish("t", 1, by="p", pid=8))
    assert log.state.sessions["p"].inbound == {7}
    log.add(PubRelReceived("p", 7, timestamp_us=TS))
    assert log.state.sessions["p"].inbound == set()


def test_a_clean_start_an_expiry_or_a_zero_expiry_disconnect_discard_the_session() -> None:
    log = Log()
    log.add(connected("a"), subscribed("a", "t"), connected("b"), subscribed("b", "t"),
            connected("c"), subscribed("c", "t"))
    log.add(connected("a", clean=True, expiry=0), SessionExpired("b", timestamp_us=TS),
            disconnected("c", expiry=0))
    assert log.state.sessions == {}
    log.add(publish("t"))
    assert log.state.queued_messages() == 0, "their subscriptions went with them"


def test_unsubscribing_drops_queued_messages_no_filter_matches_any_more() -> None:
    log = Log()
    log.add(connected("s"), subscribed("s", "a/#"), subscribed("s", "a/b"), subscribed("s", "c"))
    ab, c = log.add(publish("a/b"), publish("c"))
    log.add(Unsubscribed("s", "a/#", timestamp_us=TS))
    assert [o for o, _, _ in queue_of(log, "s")] == [ab, c]
    log.add(Unsubscribed("s", "c", timestamp_us=TS))
    assert [o for o, _, _ in queue_of(log, "s")] == [ab]


def test_retained_messages_follow_publishes_and_retained_records() -> None:
    log = Log()
    [kept] = log.add(publish("r/1", retain=True))
    [set2] = log.add(RetainedSet("r/2", b"v", timestamp_us=TS))
    log.add(publish("r/3", retain=True), publish("r/3", payload=b"", retain=True),
            RetainedCleared("r/9", timestamp_us=TS))
    assert log.state.retained == {"r/1": kept, "r/2": set2}


def test_a_qos0_publish_logged_for_the_pipeline_changes_no_state() -> None:
    # [storage] log_qos0: offline sessions never queue QoS 0, shared groups are owed
    # nothing, and the retained change comes as the registry's RetainedSet, not from here.
    log = Log()
    log.add(connected("sleeper"), subscribed("sleeper", "t/#", 2), disconnected("sleeper"),
            connected("m", level=5), subscribed("m", "$share/g/t/#", 1))
    [retained] = log.add(RetainedSet("t/r", b"kept", timestamp_us=TS))
    log.add(publish("t/a", 0), publish("t/r", 0, payload=b"qos0", retain=True),
            publish("t/r", 0, payload=b"", retain=True))
    assert queue_of(log, "sleeper") == []
    assert not any(log.state.shared.owed.values())
    assert log.state.retained == {"t/r": retained}
    assert log.state.needed_from() is None


def test_wills_and_offline_time() -> None:
    log = Log()
    log.add(connected("w"), WillSet("w", "will/t", b"bye", timestamp_us=TS))
    assert log.state.sessions["w"].will is not None
    log.add(WillSent("w", "will/t", timestamp_us=TS), disconnected("w", expiry=60, ts=TS + 5))
    image = log.state.sessions["w"]
    assert (image.will, image.connected, image.expiry, image.since_us) == (None, False, 60, TS + 5)


def test_restated_records_count_only_when_folding_starts_at_their_checkpoint() -> None:
    log = Log()
    log.add(connected("s"))
    restated = dataclasses.replace(subscribed("s", "t"), restated=True)
    log.add(CheckpointStarted(1, timestamp_us=TS), restated,
            CheckpointCompleted(1, 100, timestamp_us=TS))
    assert log.state.sessions["s"].subs == {}, "a checkpoint in the middle restates nothing new"
    assert log.state.checkpoint == (1, 100)
    fresh = Log()
    fresh.add(CheckpointStarted(1, timestamp_us=TS), dataclasses.replace(connected("s"),
                                                                         restated=True), restated)
    assert fresh.state.restating and "t" in fresh.state.sessions["s"].subs


# -- the checkpoint's contract ------------------------------------------------------

CLIENTS = ("a", "b", "c")
TOPICS = ("t", "t/x", "u")
FILTERS = ("t", "t/+", "#", "u", "$share/g/t/#")  # the last: shared at MQTT 5


def describe(log: Log) -> dict[str, Any]:
    state = log.state
    sessions = {}
    for cid, image in state.sessions.items():
        sessions[cid] = (
            image.level, image.expiry, image.connected, None if image.connected else image.since_us,
            dict(image.subs), None if image.will is None else image.will.payload,
            sorted(image.inbound or ()),
            # MQTT orders PUBLISHes resent by first send and PUBRELs by PUBREC (4.6),
            # not one stage against the other: a checkpoint writes each stage in its order.
            [[(pid, f.offset, f.qos, f.retain, f.released, f.unsent)
              for pid, f in (image.inflight or {}).items() if f.released == stage]
             for stage in (False, True)],
            [(e.offset, e.qos, e.retain, e.size, state.topic_of(e.topic)) for e in image.queue or ()],
        )
    retained = {topic: log.read(offset).payload for topic, offset in state.retained.items()}
    loose = {cid: will.payload for cid, will in state.loose_wills.items()}
    owed = [(group, e.offset, e.qos, e.retain, e.size, state.topic_of(e.topic))
            for group, e in state.shared.items()]
    return {"sessions": sessions, "retained": retained, "loose_wills": loose, "owed": owed}


events = st.lists(st.tuples(
    st.sampled_from(["connect", "disconnect", "subscribe", "unsubscribe", "publish", "sent",
                     "unsent", "ack", "pubrec", "pubrel", "expire", "will", "drop", "queue", "routed",
                     "owe"]),
    st.sampled_from(CLIENTS), st.integers(0, 4), st.booleans(), st.sampled_from(TOPICS)),
    max_size=60)


@settings(max_examples=150, deadline=None)
@given(events)
def test_folding_a_checkpoint_gives_the_state_back(steps: list[tuple[str, str, int, bool, str]]) -> None:
    fold_and_restate(Log(DurableState(FoldPolicy(max_queued_messages=5))), steps)


@settings(max_examples=150, deadline=None)
@given(events)
# found by Hypothesis: a PUBREC moves flow 1 behind flow 2, sent after it
@example([("connect", "a", 1, False, "t/x"), ("sent", "a", 0, False, "t/x"),
          ("pubrec", "a", 0, False, "t/x"), ("sent", "a", 1, False, "t/x")])
def test_a_checkpoint_restates_what_shared_groups_owe(
        steps: list[tuple[str, str, int, bool, str]]) -> None:
    log = Log(DurableState(FoldPolicy(max_queued_messages=5)))
    for cid in CLIENTS[:2]:  # durable MQTT 5 members of the shared group
        log.add(connected(cid, level=5), subscribed(cid, FILTERS[4], 1))
    log.add(publish("t/x", 2))
    assert len(log.state.shared) == 1, "owed to the group"
    fold_and_restate(log, steps)


def fold_and_restate(log: Log, steps: list[tuple[str, str, int, bool, str]]) -> None:
    """Fold ``steps`` after what ``log`` has; the checkpoint of the result folds back to it."""
    published: list[int] = [o for o, r in log.records.items() if type(r).__name__ == "PublishAccepted"]
    for kind, cid, n, flag, topic in steps:
        ts = TS + len(log.records)
        if kind == "connect":
            log.add(SessionConnected(cid, 5 if flag else 4, n == 0, False, (0, 30, NEVER, 60, 9)[n],
                                     timestamp_us=ts))
        elif kind == "disconnect":
            log.add(disconnected(cid, (NEVER, 30, 0, 60, 9)[n], ts))
        elif kind == "subscribe":
            log.add(subscribed(cid, FILTERS[n], flag + (n != 4), 0x08 if n == 3 else 0))
        elif kind == "unsubscribe":
            log.add(Unsubscribed(cid, FILTERS[n], timestamp_us=ts))
        elif kind == "publish":
            published += log.add(publish(topic, 1 + flag, payload=b"p%d" % n, retain=n == 1,
                                         by=cid, pid=n + 1))
        elif kind == "sent" and published:
            log.add(OutboundSent(cid, n + 1, published[-1 - n % len(published)], 1 + flag,
                                 timestamp_us=ts))
        elif kind == "unsent":
            log.add(OutboundUnsent(cid, n + 1, timestamp_us=ts))
        elif kind == "ack":
            log.add((PubAckReceived if flag else PubCompReceived)(cid, n + 1, timestamp_us=ts))
        elif kind == "pubrec":
            log.add(PubRecReceived(cid, n + 1, timestamp_us=ts))
        elif kind == "pubrel":
            log.add(PubRelReceived(cid, n + 1, timestamp_us=ts))
        elif kind == "expire":
            log.add(SessionExpired(cid, timestamp_us=ts))
        elif kind == "will":
            log.add(WillSet(cid, "w", b"w%d" % n, timestamp_us=ts) if flag
                    else WillSent(cid, "w", timestamp_us=ts) if n % 2
                    else WillCleared(cid, timestamp_us=ts))
        elif kind == "drop" and published:
            log.add(SessionDropped(cid, published[n % len(published)], "x", timestamp_us=ts))
        elif kind == "queue" and published:
            log.add(SessionQueued(cid, published[n % len(published)], 1, flag, (), topic, 3,
                                  timestamp_us=ts))
        elif kind == "routed" and published:
            log.add(SharedRouted(FILTERS[4], cid if n else "", published[n % len(published)],
                                 n % 3, flag, (), topic, 3, timestamp_us=ts))
        elif kind == "owe" and published:
            log.add(SharedPending(FILTERS[4], published[n % len(published)], 1 + flag, flag,
                                  topic, 3, timestamp_us=ts))
    restated = list(restate(log.state, 7, log.read, TS))
    again = Log(DurableState(FoldPolicy(max_queued_messages=5)))
    [start] = again.add(restated[0])
    again.add(*restated[1:], CheckpointCompleted(7, start, timestamp_us=TS))
    assert not again.state.restating and again.state.checkpoint == (7, start)
    assert describe(again) == describe(log)
