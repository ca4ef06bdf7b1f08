"""OffsetQueue: the RAM index of a queue as log offsets, in FIFO and sorted use."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actorbroker.durable import Entry, OffsetQueue


def entry(offset: int, qos: int = 1, *, retain: bool = False, size: int = 10,
          topic: int = 1) -> Entry:
    return Entry(offset, qos, retain, size, topic)


def test_fifo_keeps_arrival_order_and_counts_bytes() -> None:
    queue = OffsetQueue()
    for offset in (30, 10, 20):
        queue.append(entry(offset, size=offset))
    assert (len(queue), queue.bytes) == (3, 60)
    assert [queue.pop().offset for _ in range(3)] == [30, 10, 20]
    assert (len(queue), queue.bytes, bool(queue)) == (0, 0, False)
    with pytest.raises(IndexError):
        queue.pop()


def test_an_entry_keeps_qos_retain_size_and_topic() -> None:
    queue = OffsetQueue()
    queue.append(Entry(7, 2, True, 123456, 42))
    assert queue.peek() == Entry(7, 2, True, 123456, 42)


def test_sorted_insert_take_and_remove() -> None:
    queue = OffsetQueue()
    for offset in (10, 30, 20, 40):
        assert queue.insert(entry(offset))
    assert not queue.insert(entry(20)), "an offset is queued once"
    assert [e.offset for e in queue] == [10, 20, 30, 40]
    assert queue.take(30) == entry(30)
    assert queue.take(30) is None and not queue.remove(99)
    assert queue.remove(10) and queue.first_offset() == 20
    assert 20 in queue and 10 not in queue and 30 not in queue
    assert queue.insert(entry(30)), "a removed offset can come back"
    assert [e.offset for e in queue] == [20, 30, 40]


def test_prune_drops_what_keep_refuses_but_never_unknown_topics() -> None:
    queue = OffsetQueue()
    for offset, topic in ((1, 5), (2, 6), (3, 0), (4, 5)):
        queue.insert(entry(offset, topic=topic))
    gone = queue.prune(lambda topic: topic != 5)
    assert [e.offset for e in gone] == [1, 4]
    assert [e.offset for e in queue] == [2, 3]


def test_clear_and_copy() -> None:
    queue = OffsetQueue()
    for offset in range(5):
        queue.insert(entry(offset))
    twin = queue.copy()
    assert [e.offset for e in queue.clear()] == [0, 1, 2, 3, 4]
    assert not queue and [e.offset for e in twin] == [0, 1, 2, 3, 4]


def test_an_entry_costs_17_bytes_of_arrays() -> None:
    queue = OffsetQueue()
    for offset in range(10_000):
        queue.append(entry(offset))
    arrays = (queue._offsets, queue._meta, queue._sizes, queue._topics)  # noqa: SLF001
    assert sum(a.itemsize for a in arrays) == 17
    assert sum(a.buffer_info()[1] * a.itemsize for a in arrays) == 170_000


@given(st.lists(st.tuples(st.sampled_from(["insert", "remove", "pop"]),
                          st.integers(0, 60)), max_size=300))
def test_sorted_use_matches_a_sorted_dict(ops: list[tuple[str, int]]) -> None:
    queue = OffsetQueue()
    model: dict[int, Entry] = {}
    for op, offset in ops:
        if op == "insert":
            assert queue.insert(entry(offset, size=offset)) == (offset not in model)
            model.setdefault(offset, entry(offset, size=offset))
        elif op == "remove":
            assert queue.remove(offset) == (model.pop(offset, None) is not None)
        elif model:
            lowest = min(model)
            assert queue.pop() == model.pop(lowest)
        assert [e.offset for e in queue] == sorted(model)
        assert (len(queue), queue.bytes) == (len(model), sum(model))
        assert queue.first_offset() == (min(model) if model else None)


def test_many_removals_at_the_head_stay_cheap() -> None:
    queue = OffsetQueue()
    for offset in range(50_000):
        queue.insert(entry(offset))
    order = list(range(50_000))
    random.Random(1).shuffle(order[:100])
    for offset in order:
        assert queue.remove(offset)
    assert not queue and len(queue._offsets) < 100  # noqa: SLF001 (compacted)
