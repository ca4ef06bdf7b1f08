"""Unit tests of actorbroker.routing.trie.FilterTrie."""

from __future__ import annotations

import pytest

from actorbroker.routing.topics import TopicError
from actorbroker.routing.trie import FilterTrie

# MQTT section 4.7 examples: (filter, topic, matches?)
SPEC_CASES = [
    ("sport/tennis/player1/#", "sport/tennis/player1", True),
    ("sport/tennis/player1/#", "sport/tennis/player1/ranking", True),
    ("sport/tennis/player1/#", "sport/tennis/player1/score/wimbledon", True),
    ("sport/tennis/player1/#", "sport/tennis/player2", False),
    ("sport/#", "sport", True),
    ("sport/#", "sports", False),
    ("#", "sport", True),
    ("#", "/", True),
    ("sport/tennis/+", "sport/tennis/player1", True),
    ("sport/tennis/+", "sport/tennis/player1/ranking", False),
    ("sport/+", "sport", False),
    ("sport/+", "sport/", True),
    ("+/+", "/finance", True),
    ("/+", "/finance", True),
    ("+", "/finance", False),
    ("#", "$SYS/monitor/Clients", False),
    ("+/monitor/Clients", "$SYS/monitor/Clients", False),
    ("$SYS/#", "$SYS/monitor/Clients", True),
    ("$SYS/monitor/+", "$SYS/monitor/Clients", True),
    ("$SYS/#", "$SYS", True),
    ("+", "$SYS", False),
    ("+/#", "$SYS/x", False),
    ("ACCOUNTS", "Accounts", False),
    ("Accounts", "Accounts", True),
    ("a/+/c", "a//c", True),
    ("a/+", "a/$x", True),
    ("+/+/#", "a/b", True),
    ("+/+/#", "a", False),
]


@pytest.mark.parametrize(("topic_filter", "topic", "expected"), SPEC_CASES)
def test_single_filter_matches_like_the_spec(topic_filter: str, topic: str, expected: bool) -> None:
    trie: FilterTrie[str, int] = FilterTrie()
    trie.add(topic_filter, "c1", 1)
    assert list(trie.match(topic)) == ([("c1", 1)] if expected else [])
    got = [f for f, _ in trie.match_filters(topic)]
    assert got == ([topic_filter] if expected else [])


def test_all_spec_filters_together() -> None:
    trie: FilterTrie[str, str] = FilterTrie()
    for topic_filter, _, _ in SPEC_CASES:
        trie.add(topic_filter, topic_filter, topic_filter)
    for topic_filter, topic, expected in SPEC_CASES:
        got = [key for key, _ in trie.match(topic)]
        assert (topic_filter in got) is expected, (topic_filter, topic)
        assert len(got) == len(set(got)), topic


def test_add_replaces_value_and_reports_new() -> None:
    trie: FilterTrie[str, int] = FilterTrie()
    assert trie.add("a/+", "c1", 0) is True
    assert trie.add("a/+", "c1", 2) is False
    assert trie.add("a/b", "c1", 1) is True
    assert len(trie) == 2
    assert trie.filter_count() == 2
    assert trie.get("a/+", "c1") == 2
    assert sorted(trie.match("a/b")) == [("c1", 1), ("c1", 2)]


def test_several_keys_per_filter() -> None:
    trie: FilterTrie[str, int] = FilterTrie()
    for index in range(5):
        trie.add("s/#", f"c{index}", index)
    assert dict(trie.match("s/x/y")) == {f"c{i}": i for i in range(5)}
    assert trie.remove("s/#", "c2")
    assert "c2" not in dict(trie.match("s"))
    assert len(trie) == 4 and trie.filter_count() == 1


def test_remove_unknown_returns_false() -> None:
    trie: FilterTrie[str, int] = FilterTrie()
    trie.add("a/+/c", "k", 1)
    assert not trie.remove("a/+/c", "other")
    assert not trie.remove("a/+", "k")
    assert not trie.remove("a/+/c/d", "k")
    assert not trie.remove("x", "k")
    assert not trie.remove("a/b#", "k")  # malformed: simply not found
    assert len(trie) == 1


def test_remove_prunes_nodes_but_keeps_shared_prefixes() -> None:
    trie: FilterTrie[str, int] = FilterTrie()
    trie.add("a/b/+/d", "k", 1)
    trie.add("a/b/#", "k", 1)
    trie.add("a/b", "k", 1)  # exact: not in the trie
    assert trie.node_count() == 4  # a, b, +, d (a final '#' lives on its parent)
    assert trie.remove("a/b/+/d", "k")
    assert trie.node_count() == 2  # a, b
    assert trie.remove("a/b/#", "k")
    assert trie.node_count() == 0
    assert list(trie.filters()) == ["a/b"]
    assert trie.remove("a/b", "k")
    assert len(trie) == 0 and trie.filter_count() == 0
    assert list(trie.match("a/b")) == []


def test_inner_node_with_filter_survives_removal_of_child() -> None:
    trie: FilterTrie[str, int] = FilterTrie()
    trie.add("+/x", "k", 1)
    trie.add("+", "k", 2)
    trie.remove("+/x", "k")
    assert list(trie.match("a")) == [("k", 2)]
    assert trie.node_count() == 1


def test_exact_filters_do_not_touch_the_trie() -> None:
    trie: FilterTrie[str, int] = FilterTrie()
    for index in range(100):
        trie.add(f"dev/{index}/temp", "k", index)
    assert trie.node_count() == 0
    assert list(trie.match("dev/42/temp")) == [("k", 42)]


def test_add_rejects_malformed_filters() -> None:
    trie: FilterTrie[str, int] = FilterTrie()
    with pytest.raises(TopicError, match=r"\[MQTT-4.7.1-1\]"):
        trie.add("a/#/b", "k", 1)
    with pytest.raises(TopicError, match=r"\[MQTT-4.7.1-2\]"):
        trie.add("a+", "k", 1)
    with pytest.raises(TopicError, match=r"\[MQTT-4.7.3-1\]"):
        trie.add("", "k", 1)
    assert len(trie) == 0 and trie.node_count() == 0


def test_subscribers_contains_filters_and_clear() -> None:
    trie: FilterTrie[str, int] = FilterTrie()
    trie.add("a/+", "k1", 1)
    trie.add("a/+", "k2", 2)
    trie.add("b", "k1", 3)
    assert dict(trie.subscribers("a/+")) == {"k1": 1, "k2": 2}
    assert dict(trie.subscribers("a")) == {}
    assert dict(trie.subscribers("a/#")) == {}
    assert "a/+" in trie and "b" in trie and "a" not in trie and 3 not in trie
    assert sorted(trie.filters()) == ["a/+", "b"]
    assert trie.get("b", "k2") is None
    trie.clear()
    assert len(trie) == 0 and trie.node_count() == 0 and list(trie.match("b")) == []


def test_same_key_through_two_filters_is_yielded_twice() -> None:
    trie: FilterTrie[str, str] = FilterTrie()
    trie.add("a/#", "k", "hash")
    trie.add("a/+", "k", "plus")
    trie.add("a/b", "k", "exact")
    assert sorted(value for _, value in trie.match("a/b")) == ["exact", "hash", "plus"]
    assert sorted(f for f, _ in trie.match_filters("a/b")) == ["a/#", "a/+", "a/b"]


def test_tuple_keys_work() -> None:
    trie: FilterTrie[tuple[str, str], None] = FilterTrie()
    trie.add("x/+", ("$share", "g"), None)
    assert list(trie.match("x/y")) == [(("$share", "g"), None)]
