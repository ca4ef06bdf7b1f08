"""Routing layer: topic names, topic filters and shared-subscription syntax.

Imports the standard library only. This module is the routing layer's authority
on what a topic name or a topic filter is (MQTT 3.1.1 section 4.7 and MQTT 5.0
sections 4.7 and 4.8.2); the codec checks the wire encoding on its own. Rule
ids in error messages use the MQTT 5.0 numbering.

Topics are split on ``/`` into levels; empty levels are legal (``"/a"`` has the
levels ``""`` and ``"a"``). In a filter ``+`` matches exactly one level and
``#`` matches the parent level and any number of levels below it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

SEPARATOR = "/"
SINGLE_LEVEL = "+"
MULTI_LEVEL = "#"
SHARE_PREFIX = "$share/"
MAX_TOPIC_BYTES = 65535

# A str of at most this many code points encodes to at most 65535 UTF-8 bytes
# (4 bytes per code point), so the length check needs no encoding below it.
_SAFE_CHARS = MAX_TOPIC_BYTES // 4


class TopicError(ValueError):
    """A topic name, topic filter or shared-subscription filter is malformed.

    The message starts with the MQTT rule id that is broken, for example
    ``"[MQTT-3.3.2-2] wildcard in topic name 'a/+'"``.
    """


def _show(text: str) -> str:
    """``repr`` of a topic for an error message, cut short if long."""
    return repr(text) if len(text) <= 80 else repr(text[:77]) + "..."


def _check_string(text: str, what: str) -> None:
    """Apply the rules common to topic names and topic filters."""
    if not text:
        raise TopicError(f"[MQTT-4.7.3-1] {what} must be at least one character long")
    if "\x00" in text:
        raise TopicError(f"[MQTT-4.7.3-2] {what} must not contain U+0000: {_show(text)}")
    if len(text) > _SAFE_CHARS or not text.isascii():
        try:
            size = len(text.encode("utf-8"))
        except UnicodeEncodeError as exc:
            raise TopicError(
                f"[MQTT-1.5.4-1] {what} is not well-formed UTF-8 (surrogate at {exc.start})"
            ) from None
        if size > MAX_TOPIC_BYTES:
            raise TopicError(
                f"[MQTT-4.7.3-3] {what} encodes to {size} bytes, more than {MAX_TOPIC_BYTES}"
            )


def validate_topic_name(name: str) -> str:
    """Return ``name`` if it is a valid topic name (as in PUBLISH), else raise.

    Raises :class:`TopicError` for an empty name, U+0000, more than 65535
    UTF-8 bytes, lone surrogates, or a wildcard character ([MQTT-3.3.2-2]).
    """
    _check_string(name, "topic name")
    if SINGLE_LEVEL in name or MULTI_LEVEL in name:
        raise TopicError(f"[MQTT-3.3.2-2] topic name must not contain wildcards: {_show(name)}")
    return name


def validate_topic_filter(topic_filter: str) -> str:
    """Return ``topic_filter`` if it is a valid (non-shared) topic filter, else raise.

    Besides the string rules of :func:`validate_topic_name`, ``#`` must be a
    whole level and the last one ([MQTT-4.7.1-1]) and ``+`` must be a whole
    level ([MQTT-4.7.1-2]). A ``$share/...`` filter is checked here as a plain
    filter; use :func:`parse_shared` to read it as a shared subscription.
    """
    _check_string(topic_filter, "topic filter")
    if SINGLE_LEVEL not in topic_filter and MULTI_LEVEL not in topic_filter:
        return topic_filter
    levels = topic_filter.split(SEPARATOR)
    last = len(levels) - 1
    for index, level in enumerate(levels):
        if MULTI_LEVEL in level and (level != MULTI_LEVEL or index != last):
            raise TopicError(
                f"[MQTT-4.7.1-1] '#' must be a whole level and the last one: {_show(topic_filter)}"
            )
        if SINGLE_LEVEL in level and level != SINGLE_LEVEL:
            raise TopicError(f"[MQTT-4.7.1-2] '+' must be a whole level: {_show(topic_filter)}")
    return topic_filter


def is_valid_topic_name(name: str) -> bool:
    """True if :func:`validate_topic_name` accepts ``name``."""
    try:
        validate_topic_name(name)
    except TopicError:
        return False
    return True


def is_valid_topic_filter(topic_filter: str) -> bool:
    """True if :func:`validate_topic_filter` accepts ``topic_filter``."""
    try:
        validate_topic_filter(topic_filter)
    except TopicError:
        return False
    return True


def has_wildcards(topic_filter: str) -> bool:
    """True if the filter contains ``+`` or ``#`` (it is not an exact topic)."""
    return SINGLE_LEVEL in topic_filter or MULTI_LEVEL in topic_filter


def is_dollar_topic(topic: str) -> bool:
    """True if the topic starts with ``$`` (server topics such as ``$SYS/...``).

    Such topics are not matched by filters whose first level is a wildcard
    ([MQTT-4.7.2-1]).
    """
    return topic.startswith("$")


def split_levels(topic: str) -> list[str]:
    """Split a topic name or filter into its levels (``"a//b"`` -> ``["a", "", "b"]``)."""
    return topic.split(SEPARATOR)


def join_levels(levels: Iterable[str]) -> str:
    """Inverse of :func:`split_levels`."""
    return SEPARATOR.join(levels)


def matches(topic_filter: str, topic: str) -> bool:
    """True if ``topic_filter`` matches the topic name ``topic``.

    A direct, level-by-level comparison for one pair; use
    :class:`~actorbroker.routing.trie.FilterTrie` to match many filters.
    Neither argument is validated.
    """
    if topic_filter == topic:
        return True
    f_levels = topic_filter.split(SEPARATOR)
    if topic.startswith("$") and f_levels[0] in (SINGLE_LEVEL, MULTI_LEVEL):
        return False
    t_levels = topic.split(SEPARATOR)
    for index, level in enumerate(f_levels):
        if level == MULTI_LEVEL:
            return True
        if index >= len(t_levels):
            return False
        if level != SINGLE_LEVEL and level != t_levels[index]:
            return False
    return len(f_levels) == len(t_levels)


@dataclass(frozen=True, slots=True)
class SharedFilter:
    """A parsed ``$share/{group}/{filter}`` subscription (MQTT 5.0 section 4.8.2)."""

    group: str
    filter: str

    def __str__(self) -> str:
        return f"{SHARE_PREFIX}{self.group}{SEPARATOR}{self.filter}"


def parse_shared(topic_filter: str) -> SharedFilter | None:
    """Read a shared-subscription filter; return None for an ordinary filter.

    Only MQTT 5.0 gives ``$share/`` a meaning: a caller serving an MQTT 3.x
    client should not call this and treat the filter as a plain one. Raises
    :class:`TopicError` when the filter starts with ``$share/`` but the share
    name is empty ([MQTT-4.8.2-1]), contains ``+`` or ``#``, is not followed by
    ``/`` and a filter ([MQTT-4.8.2-2]), or when the inner filter (or the
    whole string) breaks the topic filter rules.
    """
    if not topic_filter.startswith(SHARE_PREFIX):
        return None
    _check_string(topic_filter, "shared subscription filter")
    rest = topic_filter[len(SHARE_PREFIX):]
    group, sep, inner = rest.partition(SEPARATOR)
    if not group:
        raise TopicError(
            f"[MQTT-4.8.2-1] ShareName must be at least one character long: {_show(topic_filter)}"
        )
    if SINGLE_LEVEL in group or MULTI_LEVEL in group:
        raise TopicError(
            f"[MQTT-4.8.2-2] ShareName must not contain '+' or '#': {_show(topic_filter)}"
        )
    if not sep or not inner:
        raise TopicError(
            f"[MQTT-4.8.2-2] ShareName must be followed by '/' and a topic filter: "
            f"{_show(topic_filter)}"
        )
    validate_topic_filter(inner)
    return SharedFilter(group=group, filter=inner)


def validate_subscription_filter(topic_filter: str, *, shared_allowed: bool = True) -> str:
    """Validate a filter as it appears in SUBSCRIBE/UNSUBSCRIBE; return it.

    With ``shared_allowed`` (MQTT 5.0) a ``$share/`` filter must be a
    well-formed shared subscription; without it (MQTT 3.x) it is a plain filter.
    """
    if shared_allowed and parse_shared(topic_filter) is not None:
        return topic_filter
    return validate_topic_filter(topic_filter)
