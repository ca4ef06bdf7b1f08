"""Unit tests of actorbroker.routing.shared.SharedGroup."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from actorbroker.routing.shared import SharedGroup, SharedStrategy


def test_empty_group_chooses_nobody() -> None:
    for strategy in SharedStrategy:
        assert SharedGroup[str](strategy).choose("k") is None


def test_round_robin_cycles_in_join_order() -> None:
    group: SharedGroup[str] = SharedGroup(SharedStrategy.ROUND_ROBIN)
    for member in ("a", "b", "c"):
        assert group.add(member)
    assert not group.add("a")
    assert [group.choose() for _ in range(7)] == ["a", "b", "c", "a", "b", "c", "a"]


def test_round_robin_continues_after_removal() -> None:
    group: SharedGroup[str] = SharedGroup(SharedStrategy.ROUND_ROBIN)
    for member in ("a", "b", "c", "d"):
        group.add(member)
    assert [group.choose(), group.choose()] == ["a", "b"]  # next is c
    assert group.remove("a")  # before the cursor
    assert group.choose() == "c"
    assert group.remove("d")  # the member the cursor points at
    assert group.choose() == "b"
    assert not group.remove("zz")
    assert [group.choose() for _ in range(3)] == ["c", "b", "c"]
    assert list(group) == ["b", "c"] and len(group) == 2 and "b" in group


def test_round_robin_skips_members_not_accepted() -> None:
    group: SharedGroup[str] = SharedGroup(SharedStrategy.ROUND_ROBIN)
    for member in ("a", "b", "c"):
        group.add(member)
    offline = {"b"}
    picks = [group.choose(accept=lambda m: m not in offline) for _ in range(4)]
    assert picks == ["a", "c", "a", "c"]
    assert group.choose(accept=lambda m: False) is None


def test_random_uses_the_injected_source() -> None:
    def picks(seed: int) -> list[str | None]:
        group: SharedGroup[str] = SharedGroup(SharedStrategy.RANDOM, rng=random.Random(seed))
        for member in "abcdef":
            group.add(member)
        return [group.choose() for _ in range(50)]

    assert picks(7) == picks(7)
    assert picks(7) != picks(8)
    counts = Counter(picks(1) + picks(2) + picks(3) + picks(4))
    assert set(counts) == set("abcdef")


def test_random_skips_members_not_accepted() -> None:
    group: SharedGroup[int] = SharedGroup(SharedStrategy.RANDOM, rng=random.Random(0))
    for member in range(10):
        group.add(member)
    picks = {group.choose(accept=lambda m: m % 3 == 0) for _ in range(200)}
    assert picks == {0, 3, 6, 9}


def test_hash_is_sticky_per_key_and_needs_a_key() -> None:
    group: SharedGroup[str] = SharedGroup(SharedStrategy.HASH)
    for member in ("a", "b", "c"):
        group.add(member)
    first = {f"client{i}": group.choose(f"client{i}") for i in range(100)}
    assert first == {f"client{i}": group.choose(f"client{i}") for i in range(100)}
    assert group.choose(b"client5") == first["client5"]
    with pytest.raises(ValueError):
        group.choose()


def test_hash_spreads_keys_evenly() -> None:
    group: SharedGroup[str] = SharedGroup(SharedStrategy.HASH)
    for member in ("a", "b", "c"):
        group.add(member)
    counts = Counter(group.choose(f"publisher-{i}") for i in range(3000))
    assert all(850 <= counts[m] <= 1150 for m in "abc"), counts


def test_hash_moves_only_the_keys_of_a_leaving_member() -> None:
    group: SharedGroup[str] = SharedGroup(SharedStrategy.HASH)
    for member in ("a", "b", "c", "d"):
        group.add(member)
    keys = [f"k{i}" for i in range(400)]
    before = {k: group.choose(k) for k in keys}
    group.remove("c")
    after = {k: group.choose(k) for k in keys}
    for key in keys:
        if before[key] != "c":
            assert after[key] == before[key]
        else:
            assert after[key] in {"a", "b", "d"}
    # and a joining member takes keys only for itself
    group.add("e")
    joined = {k: group.choose(k) for k in keys}
    assert all(joined[k] in (after[k], "e") for k in keys)
    assert "e" in joined.values()


def test_hash_falls_back_in_rendezvous_order() -> None:
    group: SharedGroup[str] = SharedGroup(SharedStrategy.HASH)
    for member in ("a", "b", "c"):
        group.add(member)
    winner = group.choose("key")
    assert winner is not None
    second = group.choose("key", accept=lambda m: m != winner)
    assert second not in (None, winner)
    group.remove(winner)
    assert group.choose("key") == second  # the same order without the winner
    assert group.choose("key", accept=lambda m: False) is None


def test_hash_uses_ident_not_python_hash() -> None:
    group: SharedGroup[tuple[str, int]] = SharedGroup(SharedStrategy.HASH, ident=lambda m: m[0])
    group.add(("x", 1))
    group.add(("y", 2))
    other: SharedGroup[tuple[str, int]] = SharedGroup(SharedStrategy.HASH, ident=lambda m: m[0])
    other.add(("y", 20))
    other.add(("x", 10))
    for index in range(50):
        key = f"k{index}"
        mine, theirs = group.choose(key), other.choose(key)
        assert mine is not None and theirs is not None
        assert mine[0] == theirs[0]  # same ident wins regardless of join order
