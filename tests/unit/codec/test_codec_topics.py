"""Topic name and topic filter rules (section 4.7 and 4.8.2)."""

from __future__ import annotations

import pytest

from actorbroker.codec import ProtocolError, ReasonCode, validate_topic_filter, validate_topic_name

VALID_NAMES = ["a", "/", "a/b", "/a/", "$SYS/x", "café/€", " ", "a//b", "$share/g/a"]
INVALID_NAMES = [
    ("", "[MQTT-4.7.3-1]"), ("a/+", "[MQTT-4.7.0-1]"), ("#", "[MQTT-3.3.2-2]"),
    ("a+b", "[MQTT-4.7.1-1]"), ("a\x00b", "[MQTT-4.7.3-2]"), ("x" * 65536, "[MQTT-4.7.3-3]"),
]
VALID_FILTERS = ["#", "+", "+/+", "a/#", "a/+/b", "/#", "+/", "a//#", "$SYS/#", "é/+"]
INVALID_FILTERS = [
    ("", "[MQTT-4.7.3-1]"), ("a#", "[MQTT-4.7.1-1]"), ("#/a", "[MQTT-4.7.1-1]"),
    ("a/#/", "[MQTT-4.7.1-1]"), ("a/b#", "[MQTT-4.7.1-1]"),
    ("a+", "[MQTT-4.7.1-2]"), ("+a/b", "[MQTT-4.7.1-3]"), ("a/++", "[MQTT-4.7.1-2]"),
    ("\x00", "[MQTT-4.7.3-2]"),
]
VALID_SHARED = ["$share/g/#", "$share/g/a/+", "$share/group-1//"]
INVALID_SHARED = [
    ("$share/g", "[MQTT-4.8.2-1]"), ("$share//a", "[MQTT-4.8.2-1]"),
    ("$share/g/", "[MQTT-4.8.2-1]"), ("$share/g+/a", "[MQTT-4.8.2-2]"),
    ("$share/#/a", "[MQTT-4.8.2-2]"), ("$share/g/a#", "[MQTT-4.7.1-1]"),
]


@pytest.mark.parametrize("name", VALID_NAMES)
def test_valid_topic_names(name: str) -> None:
    validate_topic_name(name)


@pytest.mark.parametrize(("name", "rule"), INVALID_NAMES)
def test_invalid_topic_names(name: str, rule: str) -> None:
    with pytest.raises(ProtocolError) as info:
        validate_topic_name(name)
    assert rule in str(info.value)
    assert info.value.reason_code == ReasonCode.TOPIC_NAME_INVALID


@pytest.mark.parametrize("topic_filter", VALID_FILTERS + VALID_SHARED)
def test_valid_topic_filters(topic_filter: str) -> None:
    validate_topic_filter(topic_filter)
    validate_topic_filter(topic_filter, shared=False)


@pytest.mark.parametrize(("topic_filter", "rule"), INVALID_FILTERS + INVALID_SHARED)
def test_invalid_topic_filters(topic_filter: str, rule: str) -> None:
    with pytest.raises(ProtocolError) as info:
        validate_topic_filter(topic_filter)
    assert rule in str(info.value)
    assert info.value.reason_code == ReasonCode.TOPIC_FILTER_INVALID


@pytest.mark.parametrize("topic_filter", ["$share/g", "$share//a", "$share/g/"])
def test_share_prefix_is_an_ordinary_filter_in_mqtt_3(topic_filter: str) -> None:
    validate_topic_filter(topic_filter, shared=False)
