"""Shared subscriptions' bookkeeping (actors/topics/shared_groups.py): pure classes, no loop needed."""

from __future__ import annotations

import random

from actorbroker.actors.topics.grants import NO_GRANT, Grant
from actorbroker.actors.topics.shared_groups import (
    Reachable,
    SharedIndex,
    SharedSlots,
    hash_key,
    journal_handed_back,
    journal_routed,
    pick,
)
from actorbroker.routing import SharedFilter, SharedGroup, SharedStrategy
from actorbroker.session import AppMessage


def messages(count: int, publisher: str = "p") -> tuple[AppMessage, ...]:
    return tuple(AppMessage("a/b", str(i).encode(), 1, publisher=publisher) for i in range(count))


def test_index_matches_groups_by_their_inner_filter() -> None:
    index = SharedIndex()
    index.add(SharedFilter("g", "a/+"), "c1", Grant(1, 7))
    index.add(SharedFilter("g", "a/+"), "c2", Grant(2, 8))
    index.add(SharedFilter("h", "a/#"), "c1", Grant(0, 7))
    index.add(SharedFilter("g", "b"), "c3", Grant(0, 9))
    assert index.match("a/b") == {"$share/g/a/+": {"c1": Grant(1, 7), "c2": Grant(2, 8)},
                                  "$share/h/a/#": {"c1": Grant(0, 7)}}
    assert index.match("$share/g/a/b") == {}
    assert index.holds("$share/g/a/+", "c2") and len(index) == 4
    assert index.remove("$share/g/a/+", "c2") and not index.remove("$share/g/a/+", "c2")
    assert index.members("$share/g/a/+") == {"c1": Grant(1, 7)}
    assert index.remove("$share/g/a/+", "c1") and index.group("$share/g/a/+") is None
    assert "$share/g/a/+" not in index.match("a/b")


def test_each_message_goes_to_one_online_member_in_turn() -> None:
    slots = SharedSlots({"$share/g/a/b": {"c1": Grant(1, 1), "c2": Grant(1, 2)}})
    routed = list(slots.route(messages(4), {"c1", "c2"}, {"c1", "c2"}))
    assert sorted((c, [m.payload for m in b], final) for c, _, _, final, b in routed) == [
        ("c1", [b"0", b"2"], False), ("c2", [b"1", b"3"], False)]


def test_offline_members_only_when_none_is_online() -> None:
    slots = SharedSlots({"$share/g/a/b": {"c1": Grant(1, 1), "c2": Grant(1, 2)}})
    [(client, _, _, final, batch)] = slots.route(messages(3), {"c2"}, {"c1", "c2"})
    assert (client, final, len(batch)) == ("c2", False, 3)
    [(client, _, _, final, batch)] = slots.route(messages(1), set(), {"c1"})
    assert (client, final) == ("c1", True)  # it queues: final
    [(client, _, _, _, batch)] = slots.route(messages(2), set(), set())
    assert client == "" and len(batch) == 2  # nobody: the caller counts them dropped


def test_hash_strategy_keeps_a_publisher_on_one_member() -> None:
    slots = SharedSlots({"$share/g/t": {f"c{i}": Grant(1, i) for i in range(5)}}, SharedStrategy.HASH)
    everyone = {f"c{i}" for i in range(5)}
    chosen = {c for c, *_ in slots.route(messages(20, "pub-1"), everyone, everyone)}
    assert len(chosen) == 1
    spread = set()
    for n in range(40):
        spread |= {c for c, *_ in slots.route(messages(1, f"pub-{n}"), everyone, everyone)}
    assert len(spread) > 1


def test_random_strategy_gives_each_message_to_exactly_one_member() -> None:
    slots = SharedSlots({"$share/g/t": {"a": Grant(1, 1), "b": Grant(1, 1)}}, SharedStrategy.RANDOM,
                        random.Random(7))
    routed = list(slots.route(messages(50), {"a", "b"}, {"a", "b"}))
    assert sum(len(batch) for *_, batch in routed) == 50
    assert {c for c, *_ in routed} == {"a", "b"}


def test_changes_add_and_remove_members() -> None:
    slots = SharedSlots()
    assert not slots
    slots.change("c1", "$share/g/t", Grant(1, 1))
    slots.change("c1", "$share/g/t", Grant(2, 3))  # replaced, not twice
    assert len(slots) == 1
    [(_, whole, grant, _, _)] = slots.route(messages(1), {"c1"}, {"c1"})
    assert (whole, grant) == ("$share/g/t", Grant(2, 3))
    slots.change("c1", "$share/g/t", None)
    assert not slots


def test_pick_excludes_the_leaving_member() -> None:
    group: SharedGroup[str] = SharedGroup()
    for member in ("a", "b", "c"):
        group.add(member)
    assert pick(group, "k", {"a", "b"}, {"a", "b", "c"}, exclude={"a"}) == ("b", False)
    assert pick(group, "k", {"a"}, {"a", "c"}, exclude={"a"}) == ("c", True)
    assert pick(group, "k", {"a"}, {"a"}, exclude={"a"}) is None


def test_hash_key_is_the_publisher() -> None:
    assert hash_key(AppMessage("t", b"", publisher="p")) == "p"
    assert hash_key(AppMessage("t", b"")) == "t"


class _Ref:
    def __init__(self, alive: bool) -> None:
        self.alive = alive

    def is_alive(self) -> bool:
        return self.alive


class _Storage:
    def __init__(self) -> None:
        self.told: list[object] = []

    def tell(self, message: object) -> None:
        self.told.append(message)


def test_reachable_members() -> None:
    from actorbroker.actors.names import Asleep, Waking
    from actorbroker.metrics import BrokerMetrics
    asleep = Asleep("asleep", BrokerMetrics())
    sessions = {"live": _Ref(True), "dead": _Ref(False), "asleep": asleep,
                "waking": Waking(Asleep("waking", BrokerMetrics()))}
    with_log = Reachable(sessions, _Storage())
    assert {"live", "asleep", "waking"} == set(with_log)
    assert "dead" not in with_log and "nobody" not in with_log
    assert set(Reachable(sessions, None)) == {"live"}  # no commit log: a hibernated one cannot


def test_journal_routed_writes_shared_routed_records() -> None:
    from actorbroker.actors.storage.requests import Append
    from actorbroker.persistence.records import SharedRouted
    from actorbroker.session.suboptions import SubOptions
    storage = _Storage()
    logged = AppMessage("t", b"x", 2, True, publisher="p", log_offset=40)
    qos0 = AppMessage("t", b"y", 0, log_offset=41)
    unlogged = AppMessage("t", b"z", 1)
    lost = journal_routed(storage, "$share/g/t", "m", [logged, qos0, unlogged],
                          Grant(1, 3, SubOptions(retain_as_published=True, subscription_id=5)))
    assert lost == 2  # what a hibernated member could not queue: QoS 0, not logged
    [append] = storage.told
    assert isinstance(append, Append)
    first, second = append.records
    assert isinstance(first, SharedRouted) and isinstance(second, SharedRouted)
    assert (first.group, first.client_id, first.offset, first.qos, first.retain,
            first.subscription_ids, first.topic) == ("$share/g/t", "m", 40, 1, True, (5,), "t")
    assert (second.offset, second.qos) == (41, 0)  # settles the group's debt, queues nothing
    storage.told.clear()
    assert journal_routed(storage, "$share/g/t", "", [logged], NO_GRANT) == 1
    [append] = storage.told
    assert [(r.client_id, r.qos) for r in append.records] == [("", 0)]  # no member took it


def test_journal_handed_back_owes_the_group_again() -> None:
    from actorbroker.persistence.records import SessionDropped, SharedPending
    storage = _Storage()
    logged = AppMessage("t", b"x", 1, publisher="p", log_offset=40)
    journal_handed_back(storage, "$share/g/t", "m", [logged, AppMessage("t", b"z", 1)], True)
    [append] = storage.told
    dropped, pending = append.records
    assert isinstance(dropped, SessionDropped) and isinstance(pending, SharedPending)
    assert (dropped.client_id, dropped.offset, dropped.reason) == ("m", 40, "shared_handed_back")
    assert (pending.group, pending.offset, pending.qos, pending.topic) == ("$share/g/t", 40, 1, "t")
    storage.told.clear()
    journal_handed_back(storage, "$share/g/t", "m", [logged], False)  # not durable: no queue
    assert [type(r) for r in storage.told[0].records] == [SharedPending]
    assert journal_routed(None, "$share/g/t", "m", [logged], Grant(1, 3)) == 1  # no commit log
