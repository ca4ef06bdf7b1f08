"""What shared groups owe their durable members: the fold's side of crash-safe ``$share`` delivery.

A ``PublishAccepted`` is owed to each group with a durable MQTT 5 member granted
QoS 1/2; ``SharedRouted`` settles it (queued for a durable member);
``SharedPending`` owes it again; the log keeps what is owed; after a crash
the storage actor hands what is owed to the members in turn.
"""

from __future__ import annotations

from fold_kit import Log, connected, disconnected, publish, queue_of, subscribed

from actorbroker.persistence.records import SessionDropped, SharedPending, SharedRouted, Unsubscribed

GROUP = "$share/g/s/#"
TS = 1


def owed(log: Log) -> list[tuple[str, int]]:
    return [(group, entry.offset) for group, entry in log.state.shared.items()]


def routed(offset: int, to: str, qos: int = 1, topic: str = "s/t") -> SharedRouted:
    return SharedRouted(GROUP, to, offset, qos, False, (), topic, 1, timestamp_us=TS)


def members(log: Log, *cids: str, qos: int = 1) -> None:
    for cid in cids:
        log.add(connected(cid, level=5), subscribed(cid, GROUP, qos))


def test_a_publish_is_owed_to_the_group_not_queued_for_a_member() -> None:
    log = Log()
    members(log, "m1", "m2")
    [first, second] = log.add(publish("s/t", 1), publish("s/u", 2))
    log.add(publish("other", 1), publish("s/t", 0))  # no match; QoS 0 is never owed
    assert owed(log) == [(GROUP, first), (GROUP, second)]
    assert queue_of(log, "m1") == queue_of(log, "m2") == []
    assert log.state.needed_from() == first, "the log keeps what a group owes"


def test_shared_routed_settles_the_debt_and_queues_for_a_durable_member() -> None:
    log = Log()
    members(log, "m1", "m2")
    [first, second, third] = log.add(publish("s/t", 1), publish("s/t", 2), publish("s/t", 1))
    log.add(routed(first, "m2"), routed(second, "clean-member", 2), routed(third, ""))
    assert owed(log) == []
    assert queue_of(log, "m2") == [(first, 1, False)]
    assert queue_of(log, "m1") == [], "one member only"
    assert log.state.needed_from() == first  # now for m2's queue


def test_a_group_of_qos_0_members_owes_nothing() -> None:
    log = Log()
    members(log, "m1", qos=0)
    log.add(publish("s/t", 1))
    assert owed(log) == []


def test_mqtt_3_share_filters_are_plain_subscriptions() -> None:
    log = Log()
    log.add(connected("old", level=4), subscribed("old", GROUP, 1))
    [offset] = log.add(publish(GROUP, 1))  # at MQTT 3 "$share/..." is an ordinary filter
    assert owed(log) == [] and queue_of(log, "old") == [(offset, 1, False)]


def test_handed_back_is_owed_again_until_the_next_member_is_named() -> None:
    log = Log()
    members(log, "m1", "m2")
    [offset] = log.add(publish("s/t", 1))
    log.add(routed(offset, "m1"))
    log.add(SessionDropped("m1", offset, "shared_handed_back", timestamp_us=TS),
            SharedPending(GROUP, offset, 1, False, "s/t", 1, timestamp_us=TS))
    assert queue_of(log, "m1") == [] and owed(log) == [(GROUP, offset)]
    log.add(routed(offset, "m2"))
    assert owed(log) == [] and queue_of(log, "m2") == [(offset, 1, False)]


def test_a_group_left_without_durable_members_owes_nothing() -> None:
    log = Log()
    members(log, "m1", "m2")
    log.add(publish("s/t", 1))
    log.add(Unsubscribed("m1", GROUP, timestamp_us=TS))
    assert len(owed(log)) == 1, "m2 is still a member"
    log.add(disconnected("m2", expiry=0))
    assert owed(log) == [] and log.state.needed_from() is None


def test_after_a_crash_what_is_owed_goes_to_the_members_in_turn() -> None:
    log = Log()
    members(log, "m1", "m2")
    offsets = log.add(*(publish("s/t", 1) for _ in range(5)))
    log.add(routed(offsets[0], "m1"))
    assigned = list(log.state.shared.assign(lambda cid: True))
    assert [(member, entry.offset, qos) for _, member, entry, qos in assigned] == [
        ("m1", offsets[1], 1), ("m2", offsets[2], 1), ("m1", offsets[3], 1),
        ("m2", offsets[4], 1)]
    only_m2 = list(log.state.shared.assign(lambda cid: cid == "m2"))
    assert {member for _, member, _, _ in only_m2} == {"m2"}
    nobody = list(log.state.shared.assign(lambda cid: False))
    assert {member for _, member, _, _ in nobody} == {""}, "none left: dropped, not kept"
