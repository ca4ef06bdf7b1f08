"""HotTopics: which topics the registry gives an actor (HOT_AFTER messages within a window or two)."""

from __future__ import annotations

from actorbroker.actors.topics.topic_table import HotTopics

AFTER = HotTopics.HOT_AFTER


def test_a_topic_is_hot_once_it_had_hot_after_messages_within_the_window() -> None:
    hot = HotTopics(1.0)
    assert not any(hot.seen("a", 10.0 + i / 10) for i in range(AFTER - 1))
    assert hot.seen("a", 10.5)
    assert not hot.seen("b", 10.5, AFTER - 1)
    assert hot.seen("b", 11.4)  # counted with the previous generation: a window or two
    assert hot.seen("c", 11.4, AFTER)  # one batch of that many


def test_a_topic_published_now_and_then_stays_cold() -> None:
    hot = HotTopics(1.0)
    # Once every 1.5 s: never AFTER messages within two generations.
    assert not any(hot.seen("slow", 1.5 * i) for i in range(50))


def test_a_topic_seen_long_ago_is_cold_again() -> None:
    hot = HotTopics(1.0)
    assert not hot.seen("a", 10.0, AFTER - 1)
    assert not hot.seen("a", 12.5)  # a quiet spell longer than a window forgets everything
    assert not hot.seen("a", 12.6, AFTER - 2)
    assert hot.seen("a", 12.7)
    hot = HotTopics(1.0)
    assert not hot.seen("a", 10.0, AFTER - 1)
    for step in range(1, 4):  # busy with other topics: two generations later it is gone
        hot.seen(f"other{step}", 10.0 + step)
    assert not hot.seen("a", 13.5)


def test_memory_is_bounded_by_generations_of_max_recent_topics() -> None:
    hot = HotTopics(60.0)
    total = HotTopics.MAX_RECENT * 3
    assert not any(hot.seen(f"t{i}", 1.0) for i in range(total))
    assert len(hot._recent) + len(hot._older) <= 2 * HotTopics.MAX_RECENT
    assert not hot.seen("t0", 1.0, AFTER - 1)  # pushed out by the flood: counted from 0 again


def test_a_zero_window_makes_every_topic_hot() -> None:
    hot = HotTopics(0)
    assert hot.seen("a", 0.0) and hot.seen("b", 0.0)
