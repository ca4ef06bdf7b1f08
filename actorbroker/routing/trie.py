"""Routing layer: the subscription table, topic filters -> subscribers.

Imports the standard library and ``actorbroker.routing.topics`` only.

:class:`FilterTrie` maps each topic filter to the subscribers on it (a key such
as a client id, with a value such as the subscription options). Exact filters,
which hold no wildcard, live in a dict and cost one lookup per publish; only
filters with ``+`` or ``#`` go into the trie. Matching a topic walks its levels
and, at each level, only the child named by that level, ``+`` and ``#``: its
cost depends on the topic's depth and the branches that match, never on the
number of filters. Nodes are removed as soon as they hold nothing, so a table
that was filled and emptied again holds no nodes.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Mapping
from typing import Generic, TypeVar

from actorbroker.routing.topics import (
    MULTI_LEVEL,
    SEPARATOR,
    SINGLE_LEVEL,
    has_wildcards,
    validate_topic_filter,
)

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class _Node(Generic[K, V]):
    """One level of the wildcard trie.

    ``children`` holds the literal levels below and ``plus`` the ``+`` level.
    ``entry`` is ``(filter, subscribers)`` for the filter that ends at this
    node and ``multi`` the same for this node's filter followed by ``/#``
    (at the root: ``#``). As ``#`` is always the last level it needs no node
    of its own. Entries are tuples so that matching appends them as they are.
    """

    __slots__ = ("children", "plus", "entry", "multi")

    def __init__(self) -> None:
        self.children: dict[str, _Node[K, V]] = {}
        self.plus: _Node[K, V] | None = None
        self.entry: tuple[str, dict[K, V]] | None = None
        self.multi: tuple[str, dict[K, V]] | None = None

    def is_empty(self) -> bool:
        return (
            self.entry is None and self.multi is None and self.plus is None and not self.children
        )

    def below(self) -> list[_Node[K, V]]:
        """The nodes one level down."""
        nodes = list(self.children.values())
        if self.plus is not None:
            nodes.append(self.plus)
        return nodes


class FilterTrie(Generic[K, V]):
    """Topic filters mapped to their subscribers ``{key: value}``.

    ``K`` is the subscriber key (e.g. a client id) and ``V`` what is stored
    for it (e.g. QoS and options). A key subscribes at most once per filter;
    subscribing again replaces the value, as MQTT requires. The table is not
    thread-safe: one actor owns it.
    """

    __slots__ = ("_exact", "_root", "_wild_count", "_size")

    def __init__(self) -> None:
        self._exact: dict[str, dict[K, V]] = {}
        self._root: _Node[K, V] = _Node()
        self._wild_count = 0  # filters held in the trie
        self._size = 0  # (filter, key) pairs in the whole table

    # -- changes -------------------------------------------------------------

    def add(self, topic_filter: str, key: K, value: V) -> bool:
        """Subscribe ``key`` to ``topic_filter`` with ``value``.

        Returns True for a new subscription, False when it replaced the value
        of an existing one. Raises :class:`~actorbroker.routing.topics.TopicError`
        for a malformed filter.
        """
        validate_topic_filter(topic_filter)
        if has_wildcards(topic_filter):
            levels, multi = _split(topic_filter)
            node = self._root
            for level in levels:
                if level == SINGLE_LEVEL:
                    child = node.plus
                    if child is None:
                        child = node.plus = _Node()
                else:
                    child = node.children.get(level)
                    if child is None:
                        child = node.children[level] = _Node()
                node = child
            entry = node.multi if multi else node.entry
            if entry is None:
                entry = (topic_filter, {})
                if multi:
                    node.multi = entry
                else:
                    node.entry = entry
                self._wild_count += 1
            subs = entry[1]
        else:
            exact = self._exact.get(topic_filter)
            if exact is None:
                exact = self._exact[topic_filter] = {}
            subs = exact
        is_new = key not in subs
        subs[key] = value
        if is_new:
            self._size += 1
        return is_new

    def remove(self, topic_filter: str, key: K) -> bool:
        """Unsubscribe ``key`` from ``topic_filter``; False if it was not subscribed.

        Nodes left empty are pruned. A malformed filter is simply not found.
        """
        if not has_wildcards(topic_filter):
            subs = self._exact.get(topic_filter)
            if subs is None or key not in subs:
                return False
            del subs[key]
            if not subs:
                del self._exact[topic_filter]
            self._size -= 1
            return True
        levels, multi = _split(topic_filter)
        path: list[tuple[_Node[K, V], str]] = []
        node = self._root
        for level in levels:
            child = node.plus if level == SINGLE_LEVEL else node.children.get(level)
            if child is None:
                return False
            path.append((node, level))
            node = child
        entry = node.multi if multi else node.entry
        if entry is None or key not in entry[1]:
            return False
        del entry[1][key]
        self._size -= 1
        if entry[1]:
            return True
        if multi:
            node.multi = None
        else:
            node.entry = None
        self._wild_count -= 1
        # Prune upwards every node that now holds nothing.
        for parent, level in reversed(path):
            if not node.is_empty():
                break
            if level == SINGLE_LEVEL:
                parent.plus = None
            else:
                del parent.children[level]
            node = parent
        return True

    def clear(self) -> None:
        """Remove every subscription."""
        self._exact.clear()
        self._root = _Node()
        self._wild_count = 0
        self._size = 0

    # -- queries -------------------------------------------------------------

    def match(self, topic: str) -> list[tuple[K, V]]:
        """Every ``(key, value)`` whose filter matches ``topic``, as a new list.

        A key subscribed through several matching filters appears once per
        filter; the caller decides how to merge (MQTT 5.0 section 4.7.2
        allows either). ``topic`` is a topic name and is not validated here:
        that is done once when the PUBLISH is accepted.
        """
        pairs: list[tuple[K, V]] = []
        for _, subs in self.match_filters(topic):
            pairs.extend(subs.items())
        return pairs

    def match_filters(self, topic: str) -> list[tuple[str, Mapping[K, V]]]:
        """``(filter, subscribers)`` for every filter that matches ``topic``.

        The mappings are live views of the table: copy what must outlive the
        next change to it.
        """
        found: list[tuple[str, Mapping[K, V]]] = []
        exact = self._exact.get(topic)
        if exact is not None:
            found.append((topic, exact))
        if not self._wild_count:
            return found
        # [MQTT-4.7.2-1] A topic starting with '$' is not matched by a filter
        # whose first level is '+' or '#'.
        dollar = topic.startswith("$")
        nodes = [self._root]
        for level in topic.split(SEPARATOR):
            below: list[_Node[K, V]] = []
            for node in nodes:
                if not dollar:
                    if node.multi is not None:
                        found.append(node.multi)
                    if node.plus is not None:
                        below.append(node.plus)
                child = node.children.get(level)
                if child is not None:
                    below.append(child)
            if not below:
                return found
            nodes = below
            dollar = False
        for node in nodes:
            if node.entry is not None:
                found.append(node.entry)
            # '#' also matches the parent level: "sport/#" matches "sport".
            if node.multi is not None:
                found.append(node.multi)
        return found

    def subscribers(self, topic_filter: str) -> Mapping[K, V]:
        """The subscribers of exactly this filter (empty if none); a live view."""
        if not has_wildcards(topic_filter):
            return self._exact.get(topic_filter, {})
        levels, multi = _split(topic_filter)
        node = self._root
        for level in levels:
            child = node.plus if level == SINGLE_LEVEL else node.children.get(level)
            if child is None:
                return {}
            node = child
        entry = node.multi if multi else node.entry
        return {} if entry is None else entry[1]

    def get(self, topic_filter: str, key: K) -> V | None:
        """The value stored for ``key`` on exactly this filter, or None."""
        return self.subscribers(topic_filter).get(key)

    def filters(self) -> Iterator[str]:
        """Every filter with at least one subscriber (exact ones first)."""
        yield from self._exact
        stack = [self._root]
        while stack:
            node = stack.pop()
            if node.entry is not None:
                yield node.entry[0]
            if node.multi is not None:
                yield node.multi[0]
            stack.extend(node.below())

    def __contains__(self, topic_filter: object) -> bool:
        """True if the filter has at least one subscriber."""
        return isinstance(topic_filter, str) and bool(self.subscribers(topic_filter))

    def __len__(self) -> int:
        """Number of subscriptions, i.e. (filter, key) pairs."""
        return self._size

    def filter_count(self) -> int:
        """Number of distinct filters with at least one subscriber."""
        return len(self._exact) + self._wild_count

    def node_count(self) -> int:
        """Number of trie nodes below the root (0 when no wildcard filter is held).

        A wildcard filter needs one node per level except a final ``#``.
        """
        count = 0
        stack = self._root.below()
        while stack:
            node = stack.pop()
            count += 1
            stack.extend(node.below())
        return count


def _split(topic_filter: str) -> tuple[list[str], bool]:
    """The levels of a wildcard filter without a final ``#``, and whether it had one."""
    levels = topic_filter.split(SEPARATOR)
    if levels[-1] == MULTI_LEVEL:
        levels.pop()
        return levels, True
    return levels, False
