"""Unit tests of actorbroker.routing.retained.RetainedIndex."""

from __future__ import annotations

import pytest

from actorbroker.routing.retained import RetainedIndex
from actorbroker.routing.topics import TopicError

TOPICS = [
    "sport",
    "sport/tennis/player1",
    "sport/tennis/player1/ranking",
    "sport/tennis/player1/score/wimbledon",
    "sport/tennis/player2",
    "sport/",
    "/finance",
    "$SYS/monitor/Clients",
    "$SYS",
    "a//c",
    "Accounts",
]

# (filter, the retained topics it must return)
CASES = [
    ("sport/tennis/player1/#", {
        "sport/tennis/player1",
        "sport/tennis/player1/ranking",
        "sport/tennis/player1/score/wimbledon",
    }),
    ("sport/#", {
        "sport",
        "sport/",
        "sport/tennis/player1",
        "sport/tennis/player1/ranking",
        "sport/tennis/player1/score/wimbledon",
        "sport/tennis/player2",
    }),
    ("sport/tennis/+", {"sport/tennis/player1", "sport/tennis/player2"}),
    ("sport/+", {"sport/"}),
    ("+/+", {"sport/", "/finance"}),
    ("/+", {"/finance"}),
    ("+", {"sport", "Accounts"}),
    ("#", set(TOPICS) - {"$SYS/monitor/Clients", "$SYS"}),
    ("+/monitor/Clients", set()),
    ("$SYS/#", {"$SYS/monitor/Clients", "$SYS"}),
    ("$SYS/monitor/+", {"$SYS/monitor/Clients"}),
    ("+/#", set(TOPICS) - {"$SYS/monitor/Clients", "$SYS"}),
    ("a/+/c", {"a//c"}),
    ("ACCOUNTS", set()),
    ("Accounts", {"Accounts"}),
    ("sport/tennis", set()),
    ("nothing/#", set()),
    ("+/tennis/+/#", {
        "sport/tennis/player1",
        "sport/tennis/player1/ranking",
        "sport/tennis/player1/score/wimbledon",
        "sport/tennis/player2",
    }),
]


@pytest.fixture
def index() -> RetainedIndex[str]:
    retained: RetainedIndex[str] = RetainedIndex()
    for topic in TOPICS:
        assert retained.set(topic, "v:" + topic)
    return retained


@pytest.mark.parametrize(("topic_filter", "expected"), CASES)
def test_match_returns_exactly_the_matching_topics(
    index: RetainedIndex[str], topic_filter: str, expected: set[str]
) -> None:
    got = list(index.match(topic_filter))
    assert {topic for topic, _ in got} == expected
    assert len(got) == len(expected)  # no duplicates
    assert all(value == "v:" + topic for topic, value in got)


def test_set_replaces_and_delete_prunes(index: RetainedIndex[str]) -> None:
    assert not index.set("sport", "new")
    assert index.get("sport") == "new"
    assert len(index) == len(TOPICS)
    assert index.delete("sport/tennis/player1")
    assert not index.delete("sport/tennis/player1")
    assert not index.delete("sport/tennis")  # an inner node, never set
    assert "sport/tennis/player1" not in index
    # the node is still needed by its children: they must still match
    assert {t for t, _ in index.match("sport/tennis/player1/#")} == {
        "sport/tennis/player1/ranking",
        "sport/tennis/player1/score/wimbledon",
    }
    for topic in list(index.topics()):
        assert index.delete(topic)
    assert len(index) == 0
    assert index.node_count() == 0
    assert list(index.match("#")) == []


def test_set_rejects_bad_topic_names() -> None:
    retained: RetainedIndex[int] = RetainedIndex()
    with pytest.raises(TopicError, match=r"\[MQTT-3.3.2-2\]"):
        retained.set("a/+", 1)
    with pytest.raises(TopicError, match=r"\[MQTT-4.7.3-1\]"):
        retained.set("", 1)
    assert len(retained) == 0 and retained.node_count() == 0


def test_match_rejects_bad_filters(index: RetainedIndex[str]) -> None:
    with pytest.raises(TopicError, match=r"\[MQTT-4.7.1-1\]"):
        list(index.match("sport/#/x"))


def test_clear(index: RetainedIndex[str]) -> None:
    index.clear()
    assert len(index) == 0 and index.node_count() == 0 and index.get("sport") is None
