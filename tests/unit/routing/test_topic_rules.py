"""Unit tests of actorbroker.routing.topics: validation vectors and spec examples."""

from __future__ import annotations

import pytest

from actorbroker.routing.topics import (
    SharedFilter,
    TopicError,
    has_wildcards,
    is_dollar_topic,
    is_valid_topic_filter,
    is_valid_topic_name,
    join_levels,
    matches,
    parse_shared,
    split_levels,
    validate_subscription_filter,
    validate_topic_filter,
    validate_topic_name,
)

VALID_FILTERS = [
    "#",
    "+",
    "sport/tennis/player1/#",
    "sport/#",
    "+/tennis/#",
    "sport/+/player1",
    "+/+",
    "/+",
    "/",
    "//",
    "$SYS/#",
    "$SYS/monitor/+",
    "$share",  # only "$share/" starts a shared subscription
    " ",
    "a/b/c",
    "ü/日本/🙂",
    "x" * 65535,
    "é" * 32767,  # 65534 bytes
]

# (filter, rule id expected in the message)
INVALID_FILTERS = [
    ("", "[MQTT-4.7.3-1]"),
    ("sport/tennis#", "[MQTT-4.7.1-1]"),
    ("sport/tennis/#/ranking", "[MQTT-4.7.1-1]"),
    ("#/", "[MQTT-4.7.1-1]"),
    ("##", "[MQTT-4.7.1-1]"),
    ("a/#b", "[MQTT-4.7.1-1]"),
    ("sport+", "[MQTT-4.7.1-2]"),
    ("sport/+tennis", "[MQTT-4.7.1-2]"),
    ("++", "[MQTT-4.7.1-2]"),
    ("a\x00b", "[MQTT-4.7.3-2]"),
    ("x" * 65536, "[MQTT-4.7.3-3]"),
    ("é" * 32768, "[MQTT-4.7.3-3]"),  # 65536 bytes in fewer than 65536 chars
    ("a/\ud800", "[MQTT-1.5.4-1]"),
]

VALID_NAMES = [
    "sport/tennis/player1",
    "/finance",
    "/",
    "$SYS/monitor/Clients",
    "ACCOUNTS",
    "Accounts payable",
    "a//b",
    "x" * 65535,
]

INVALID_NAMES = [
    ("", "[MQTT-4.7.3-1]"),
    ("sport/+/x", "[MQTT-3.3.2-2]"),
    ("sport/#", "[MQTT-3.3.2-2]"),
    ("a+", "[MQTT-3.3.2-2]"),
    ("\x00", "[MQTT-4.7.3-2]"),
    ("y" * 65536, "[MQTT-4.7.3-3]"),
    ("\udfff", "[MQTT-1.5.4-1]"),
]


@pytest.mark.parametrize("topic_filter", VALID_FILTERS)
def test_valid_filters_are_accepted(topic_filter: str) -> None:
    assert validate_topic_filter(topic_filter) == topic_filter
    assert is_valid_topic_filter(topic_filter)


@pytest.mark.parametrize(("topic_filter", "rule"), INVALID_FILTERS)
def test_invalid_filters_name_the_rule(topic_filter: str, rule: str) -> None:
    with pytest.raises(TopicError) as info:
        validate_topic_filter(topic_filter)
    assert str(info.value).startswith(rule)
    assert not is_valid_topic_filter(topic_filter)


@pytest.mark.parametrize("name", VALID_NAMES)
def test_valid_names_are_accepted(name: str) -> None:
    assert validate_topic_name(name) == name
    assert is_valid_topic_name(name)


@pytest.mark.parametrize(("name", "rule"), INVALID_NAMES)
def test_invalid_names_name_the_rule(name: str, rule: str) -> None:
    with pytest.raises(TopicError) as info:
        validate_topic_name(name)
    assert str(info.value).startswith(rule)
    assert not is_valid_topic_name(name)


def test_topic_error_is_a_value_error() -> None:
    assert issubclass(TopicError, ValueError)


# MQTT 5.0 section 4.7 (and 3.1.1 section 4.7) examples: (filter, topic, matches?)
SPEC_MATCHES = [
    ("sport/tennis/player1/#", "sport/tennis/player1", True),
    ("sport/tennis/player1/#", "sport/tennis/player1/ranking", True),
    ("sport/tennis/player1/#", "sport/tennis/player1/score/wimbledon", True),
    ("sport/#", "sport", True),
    ("#", "sport", True),
    ("#", "/", True),
    ("sport/tennis/+", "sport/tennis/player1", True),
    ("sport/tennis/+", "sport/tennis/player2", True),
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
    ("ACCOUNTS", "Accounts", False),
    ("Accounts payable", "Accounts payable", True),
    ("a/b", "a/b/c", False),
    ("a/b/c", "a/b", False),
    ("a/+/c", "a//c", True),
    ("+/b", "$a/b", False),
    ("a/$x/+", "a/$x/y", True),
    ("a/+", "a/$x", True),  # the $ rule is about the first level only
]


@pytest.mark.parametrize(("topic_filter", "topic", "expected"), SPEC_MATCHES)
def test_matches_follows_the_spec_examples(topic_filter: str, topic: str, expected: bool) -> None:
    assert matches(topic_filter, topic) is expected


def test_level_helpers() -> None:
    assert split_levels("a//b") == ["a", "", "b"]
    assert split_levels("/") == ["", ""]
    assert join_levels(["a", "", "b"]) == "a//b"
    assert has_wildcards("a/+") and has_wildcards("#") and not has_wildcards("a/b")
    assert is_dollar_topic("$SYS/x") and not is_dollar_topic("a/$SYS")


SHARED_VALID = [
    ("$share/g/sport/#", SharedFilter("g", "sport/#")),
    ("$share/consumer1/sport/tennis/+", SharedFilter("consumer1", "sport/tennis/+")),
    ("$share/g/#", SharedFilter("g", "#")),
    ("$share/g//", SharedFilter("g", "/")),
    ("$share/$g/a", SharedFilter("$g", "a")),
]

SHARED_INVALID = [
    ("$share//a", "[MQTT-4.8.2-1]"),
    ("$share/", "[MQTT-4.8.2-1]"),
    ("$share/g", "[MQTT-4.8.2-2]"),
    ("$share/g/", "[MQTT-4.8.2-2]"),
    ("$share/g+/a", "[MQTT-4.8.2-2]"),
    ("$share/#/a", "[MQTT-4.8.2-2]"),
    ("$share/g/a#", "[MQTT-4.7.1-1]"),
    ("$share/g/a+", "[MQTT-4.7.1-2]"),
    ("$share/g/a\x00", "[MQTT-4.7.3-2]"),
]


@pytest.mark.parametrize(("text", "expected"), SHARED_VALID)
def test_parse_shared_reads_group_and_filter(text: str, expected: SharedFilter) -> None:
    parsed = parse_shared(text)
    assert parsed == expected
    assert str(parsed) == text
    assert validate_subscription_filter(text) == text


@pytest.mark.parametrize(("text", "rule"), SHARED_INVALID)
def test_parse_shared_rejects_malformed(text: str, rule: str) -> None:
    with pytest.raises(TopicError) as info:
        parse_shared(text)
    assert str(info.value).startswith(rule)


@pytest.mark.parametrize("text", ["sport/#", "$share", "$sharex/g/a", "$SHARE/g/a", "a/$share/g/b"])
def test_parse_shared_returns_none_for_plain_filters(text: str) -> None:
    assert parse_shared(text) is None


def test_shared_filter_is_frozen_and_slotted() -> None:
    shared = SharedFilter("g", "a")
    with pytest.raises(AttributeError):
        shared.group = "h"  # type: ignore[misc]
    assert not hasattr(shared, "__dict__")


def test_subscription_filter_without_shared_support_is_plain() -> None:
    # MQTT 3.x: "$share/g" is an ordinary (valid) filter.
    assert validate_subscription_filter("$share/g", shared_allowed=False) == "$share/g"
    with pytest.raises(TopicError):
        validate_subscription_filter("$share/g", shared_allowed=True)
    with pytest.raises(TopicError):
        validate_subscription_filter("a/b#", shared_allowed=False)
