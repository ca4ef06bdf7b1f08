"""Property tests: FilterTrie and topics.matches against a brute-force matcher.

The brute-force matcher below is written straight from MQTT section 4.7 and
shares no code with actorbroker.routing. Levels come from a small alphabet
(including '', '$SYS', '+', '#') so that collisions and edge cases are common.
"""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from actorbroker.routing.topics import matches
from actorbroker.routing.trie import FilterTrie

LEVELS = ["", "a", "b", "$SYS", "$", "x$"]
KEYS = ["k1", "k2", "k3"]


def brute_levels(f_levels: list[str], t_levels: list[str]) -> bool:
    if not f_levels:
        return not t_levels
    head = f_levels[0]
    if head == "#":
        return True
    if not t_levels:
        return False
    return (head == "+" or head == t_levels[0]) and brute_levels(f_levels[1:], t_levels[1:])


def brute_match(topic_filter: str, topic: str) -> bool:
    """MQTT 4.7 matching, including [MQTT-4.7.2-1] for topics starting with '$'."""
    if topic.startswith("$") and topic_filter[0] in "+#":
        return False
    return brute_levels(topic_filter.split("/"), topic.split("/"))


topics = (
    st.lists(st.sampled_from(LEVELS), min_size=1, max_size=4)
    .map("/".join)
    .filter(bool)
)


@st.composite
def filters(draw: st.DrawFn) -> str:
    levels = draw(st.lists(st.sampled_from(LEVELS + ["+", "+"]), min_size=0, max_size=4))
    if not levels or draw(st.booleans()):
        levels.append("#")
    text = "/".join(levels)
    return text if text else "#"


def wildcard_prefixes(model: dict[tuple[str, str], int]) -> set[tuple[str, ...]]:
    """The trie nodes that must exist: every level prefix of every wildcard filter.

    A final '#' is kept on its parent's node, so it is not a level of its own.
    """
    nodes: set[tuple[str, ...]] = set()
    for topic_filter, _ in model:
        if "+" in topic_filter or "#" in topic_filter:
            levels = topic_filter.split("/")
            if levels[-1] == "#":
                levels.pop()
            for end in range(1, len(levels) + 1):
                nodes.add(tuple(levels[:end]))
    return nodes


@given(st.lists(filters(), max_size=30), st.lists(topics, min_size=1, max_size=20))
def test_match_equals_brute_force(filter_list: list[str], topic_list: list[str]) -> None:
    trie: FilterTrie[str, None] = FilterTrie()
    for topic_filter in filter_list:
        trie.add(topic_filter, topic_filter, None)
    for topic in topic_list:
        got = sorted(key for key, _ in trie.match(topic))
        expected = sorted({f for f in filter_list if brute_match(f, topic)})
        assert got == expected, topic


@given(filters(), topics)
def test_single_pair_matches_agrees(topic_filter: str, topic: str) -> None:
    assert matches(topic_filter, topic) == brute_match(topic_filter, topic)


class TrieMachine(RuleBasedStateMachine):
    """Random adds and removes; the trie must always agree with a plain dict."""

    def __init__(self) -> None:
        super().__init__()
        self.trie: FilterTrie[str, int] = FilterTrie()
        self.model: dict[tuple[str, str], int] = {}

    @rule(topic_filter=filters(), key=st.sampled_from(KEYS), value=st.integers(0, 2))
    def add(self, topic_filter: str, key: str, value: int) -> None:
        is_new = (topic_filter, key) not in self.model
        assert self.trie.add(topic_filter, key, value) is is_new
        self.model[(topic_filter, key)] = value

    @rule(data=st.data())
    def remove_existing(self, data: st.DataObject) -> None:
        if not self.model:
            return
        topic_filter, key = data.draw(st.sampled_from(sorted(self.model)))
        assert self.trie.remove(topic_filter, key)
        del self.model[(topic_filter, key)]

    @rule(topic_filter=filters(), key=st.sampled_from(KEYS))
    def remove_any(self, topic_filter: str, key: str) -> None:
        existed = self.model.pop((topic_filter, key), None) is not None
        assert self.trie.remove(topic_filter, key) is existed

    @rule(topic=topics)
    def match(self, topic: str) -> None:
        got = Counter(
            (f, key, value)
            for f, subs in self.trie.match_filters(topic)
            for key, value in subs.items()
        )
        expected = Counter(
            (f, key, value) for (f, key), value in self.model.items() if brute_match(f, topic)
        )
        assert got == expected
        assert Counter(self.trie.match(topic)) == Counter(
            (key, value) for (_, key, value) in expected.elements()
        )

    @invariant()
    def sizes_and_nodes(self) -> None:
        assert len(self.trie) == len(self.model)
        assert self.trie.filter_count() == len({f for f, _ in self.model})
        assert sorted(self.trie.filters()) == sorted({f for f, _ in self.model})
        # No leaked nodes: exactly the prefixes still needed by a wildcard filter.
        assert self.trie.node_count() == len(wildcard_prefixes(self.model))

    def teardown(self) -> None:
        for topic_filter, key in list(self.model):
            assert self.trie.remove(topic_filter, key)
        assert len(self.trie) == 0
        assert self.trie.filter_count() == 0
        assert self.trie.node_count() == 0


TrieMachine.TestCase.settings = settings(max_examples=200, stateful_step_count=40)
test_trie_machine = TrieMachine.TestCase
