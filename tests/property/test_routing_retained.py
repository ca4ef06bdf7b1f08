"""Property tests: RetainedIndex against a brute-force matcher over its stored topics."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from actorbroker.routing.retained import RetainedIndex

LEVELS = ["", "a", "b", "$SYS", "$", "x$"]


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
    """Filters with and without wildcards (exact filters take the dict path)."""
    levels = draw(st.lists(st.sampled_from(LEVELS + ["+", "+"]), min_size=0, max_size=4))
    if not levels or draw(st.booleans()):
        levels.append("#")
    text = "/".join(levels)
    return text if text else "#"


any_filter = st.one_of(filters(), topics)


@given(st.lists(topics, max_size=30), st.lists(any_filter, min_size=1, max_size=20))
def test_match_equals_brute_force(topic_list: list[str], filter_list: list[str]) -> None:
    index: RetainedIndex[str] = RetainedIndex()
    for topic in topic_list:
        index.set(topic, topic.upper())
    for topic_filter in filter_list:
        got = list(index.match(topic_filter))
        assert len(got) == len({t for t, _ in got})  # each topic once
        assert all(value == topic.upper() for topic, value in got)
        expected = {t for t in topic_list if brute_match(topic_filter, t)}
        assert {t for t, _ in got} == expected, topic_filter


class RetainedMachine(RuleBasedStateMachine):
    """Random sets and deletes; the index must always agree with a plain dict."""

    def __init__(self) -> None:
        super().__init__()
        self.index: RetainedIndex[int] = RetainedIndex()
        self.model: dict[str, int] = {}

    @rule(topic=topics, value=st.integers(0, 3))
    def set(self, topic: str, value: int) -> None:
        assert self.index.set(topic, value) is (topic not in self.model)
        self.model[topic] = value

    @rule(data=st.data())
    def delete_existing(self, data: st.DataObject) -> None:
        if not self.model:
            return
        topic = data.draw(st.sampled_from(sorted(self.model)))
        assert self.index.delete(topic)
        del self.model[topic]

    @rule(topic=topics)
    def delete_any(self, topic: str) -> None:
        existed = self.model.pop(topic, None) is not None
        assert self.index.delete(topic) is existed

    @rule(topic_filter=any_filter)
    def match(self, topic_filter: str) -> None:
        got = sorted(self.index.match(topic_filter))
        expected = sorted((t, v) for t, v in self.model.items() if brute_match(topic_filter, t))
        assert got == expected

    @invariant()
    def sizes_and_nodes(self) -> None:
        assert len(self.index) == len(self.model)
        assert sorted(self.index.topics()) == sorted(self.model)
        prefixes = {
            tuple(levels[:end])
            for levels in (t.split("/") for t in self.model)
            for end in range(1, len(levels) + 1)
        }
        assert self.index.node_count() == len(prefixes)  # no leaked nodes

    def teardown(self) -> None:
        for topic in list(self.model):
            assert self.index.delete(topic)
        assert len(self.index) == 0
        assert self.index.node_count() == 0


RetainedMachine.TestCase.settings = settings(max_examples=200, stateful_step_count=40)
test_retained_machine = RetainedMachine.TestCase
