"""Routing layer: the index of retained messages, topic name -> message.

Imports the standard library and ``actorbroker.routing.topics`` only.

:class:`RetainedIndex` holds at most one retained value per concrete topic and
answers the question a new subscription asks: which retained topics match this
filter? It keeps a trie of the stored topics' levels, so an exact filter costs
one dict lookup and a wildcard filter walks only the branches it matches
(``#`` visits the subtree below it, whose topics it all matches). Whether an
empty payload clears a topic is the caller's decision: it calls
:meth:`RetainedIndex.delete`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, TypeVar

from actorbroker.routing.topics import (
    MULTI_LEVEL,
    SEPARATOR,
    SINGLE_LEVEL,
    has_wildcards,
    validate_topic_filter,
    validate_topic_name,
)

V = TypeVar("V")


class _TopicNode:
    """One level of the stored topics; ``topic`` is set where a stored topic ends."""

    __slots__ = ("children", "topic")

    def __init__(self) -> None:
        self.children: dict[str, _TopicNode] = {}
        self.topic: str | None = None


class RetainedIndex(Generic[V]):
    """Retained values by topic name, searchable by topic filter."""

    __slots__ = ("_values", "_root")

    def __init__(self) -> None:
        self._values: dict[str, V] = {}
        self._root = _TopicNode()

    def set(self, topic: str, value: V) -> bool:
        """Store ``value`` as the retained message of ``topic``, replacing any.

        Returns True if the topic had no retained value before. Raises
        :class:`~actorbroker.routing.topics.TopicError` for a malformed topic name.
        """
        if topic in self._values:
            self._values[topic] = value
            return False
        validate_topic_name(topic)
        node = self._root
        for level in topic.split(SEPARATOR):
            child = node.children.get(level)
            if child is None:
                child = node.children[level] = _TopicNode()
            node = child
        node.topic = topic
        self._values[topic] = value
        return True

    def delete(self, topic: str) -> bool:
        """Forget the retained message of ``topic``; False if there was none."""
        if self._values.pop(topic, _MISSING) is _MISSING:
            return False
        path: list[tuple[_TopicNode, str]] = []
        node = self._root
        for level in topic.split(SEPARATOR):
            path.append((node, level))
            node = node.children[level]
        node.topic = None
        for parent, level in reversed(path):
            if node.topic is not None or node.children:
                break
            del parent.children[level]
            node = parent
        return True

    def get(self, topic: str) -> V | None:
        """The retained value of ``topic``, or None."""
        return self._values.get(topic)

    def clear(self) -> None:
        """Forget every retained message."""
        self._values.clear()
        self._root = _TopicNode()

    def match(self, topic_filter: str) -> Iterator[tuple[str, V]]:
        """Yield ``(topic, value)`` for every retained topic the filter matches.

        Follows the matching rules of MQTT section 4.7, including '#' matching
        the parent level and [MQTT-4.7.2-1] (a filter starting with a wildcard
        does not match topics starting with '$'). Raises
        :class:`~actorbroker.routing.topics.TopicError` for a malformed filter.
        Do not change the index while iterating.
        """
        validate_topic_filter(topic_filter)
        values = self._values
        if not has_wildcards(topic_filter):
            if topic_filter in values:
                yield topic_filter, values[topic_filter]
            return
        for topic in self.match_topics(topic_filter):
            yield topic, values[topic]

    def match_topics(self, topic_filter: str) -> Iterator[str]:
        """Yield the retained topic names a (valid) wildcard filter matches."""
        nodes = [self._root]
        first = True
        for level in topic_filter.split(SEPARATOR):
            if level == MULTI_LEVEL:
                for node in nodes:
                    yield from _subtree_topics(node, skip_dollar=first)
                return
            below: list[_TopicNode] = []
            if level == SINGLE_LEVEL:
                for node in nodes:
                    if first:
                        below.extend(
                            child
                            for name, child in node.children.items()
                            if not name.startswith("$")
                        )
                    else:
                        below.extend(node.children.values())
            else:
                for node in nodes:
                    child = node.children.get(level)
                    if child is not None:
                        below.append(child)
            if not below:
                return
            nodes = below
            first = False
        for node in nodes:
            if node.topic is not None:
                yield node.topic

    def topics(self) -> Iterator[str]:
        """Every topic with a retained value."""
        return iter(self._values)

    def __contains__(self, topic: object) -> bool:
        return topic in self._values

    def __len__(self) -> int:
        return len(self._values)

    def node_count(self) -> int:
        """Number of trie nodes below the root (0 when the index is empty)."""
        count = 0
        stack = list(self._root.children.values())
        while stack:
            node = stack.pop()
            count += 1
            stack.extend(node.children.values())
        return count


_MISSING = object()


def _subtree_topics(node: _TopicNode, *, skip_dollar: bool) -> Iterator[str]:
    """Topics stored at ``node`` (the parent level of a '#') and everywhere below.

    With ``skip_dollar`` (a filter that is just '#') the root's children whose
    level starts with '$' are left out ([MQTT-4.7.2-1]).
    """
    if node.topic is not None:
        yield node.topic
    if skip_dollar:
        stack = [c for name, c in node.children.items() if not name.startswith("$")]
    else:
        stack = list(node.children.values())
    while stack:
        current = stack.pop()
        if current.topic is not None:
            yield current.topic
        stack.extend(current.children.values())
