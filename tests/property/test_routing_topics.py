"""Property tests: topic name/filter validation against an independent rule checker."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from actorbroker.routing.topics import (
    TopicError,
    parse_shared,
    validate_topic_filter,
    validate_topic_name,
)

# Small alphabet with every character the rules care about.
texts = st.text(alphabet="ab/+#$\x00é", max_size=12)


def filter_ok(text: str) -> bool:
    if not text or "\x00" in text:
        return False
    levels = text.split("/")
    for index, level in enumerate(levels):
        if "#" in level and (level != "#" or index != len(levels) - 1):
            return False
        if "+" in level and level != "+":
            return False
    return True


def name_ok(text: str) -> bool:
    return bool(text) and "\x00" not in text and "+" not in text and "#" not in text


@given(texts)
def test_filter_validation_agrees(text: str) -> None:
    try:
        validate_topic_filter(text)
        accepted = True
    except TopicError as error:
        accepted = False
        assert str(error).startswith("[MQTT-")
    assert accepted is filter_ok(text)


@given(texts)
def test_name_validation_agrees(text: str) -> None:
    try:
        validate_topic_name(text)
        accepted = True
    except TopicError as error:
        accepted = False
        assert str(error).startswith("[MQTT-")
    assert accepted is name_ok(text)


@given(texts)
def test_parse_shared_agrees(text: str) -> None:
    candidate = "$share/" + text
    group, sep, inner = text.partition("/")
    ok = bool(group) and "+" not in group and "#" not in group and "\x00" not in group
    ok = ok and bool(sep) and filter_ok(inner)
    try:
        parsed = parse_shared(candidate)
    except TopicError:
        assert not ok
        return
    assert ok
    assert parsed is not None
    assert (parsed.group, parsed.filter) == (group, inner)
    assert str(parsed) == candidate
