"""HotTopics: which topics the registry gives an actor (a second publish within the window)."""

from __future__ import annotations

from actorbroker.actors.topic_table import HotTopics


def test_a_topic_is_hot_when_routed_again_within_the_window() -> None:
    hot = HotTopics(1.0)
    assert not hot.seen("a", 10.0)
    assert hot.seen("a", 10.5)
    assert not hot.seen("b", 10.5)
    assert hot.seen("b", 11.4)  # in the previous generation: still within a window or two


def test_a_topic_seen_long_ago_is_cold_again() -> None:
    hot = HotTopics(1.0)
    assert not hot.seen("a", 10.0)
    assert not hot.seen("a", 12.5)  # a quiet spell longer than a window forgets everything
    assert hot.seen("a", 12.6)
    hot = HotTopics(1.0)
    assert not hot.seen("a", 10.0)
    for step in range(1, 4):  # busy with other topics: two generations later it is gone
        hot.seen(f"other{step}", 10.0 + step)
    assert not hot.seen("a", 13.5)


def test_memory_is_bounded_by_generations_of_max_recent_topics() -> None:
    hot = HotTopics(60.0)
    total = HotTopics.MAX_RECENT * 3
    assert not any(hot.seen(f"t{i}", 1.0) for i in range(total))
    assert len(hot._recent) + len(hot._older) <= 2 * HotTopics.MAX_RECENT
    assert not hot.seen("t0", 1.0)  # pushed out by the flood: cold again


def test_a_zero_window_makes_every_topic_hot() -> None:
    hot = HotTopics(0)
    assert hot.seen("a", 0.0) and hot.seen("b", 0.0)
