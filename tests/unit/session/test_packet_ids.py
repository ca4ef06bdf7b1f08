"""PacketIdAllocator: 1..65535, skips ids in use, wraps around."""

from __future__ import annotations

import pytest

from actorbroker.session.packet_ids import (
    MAX_PACKET_ID,
    PacketIdAllocator,
    PacketIdsExhaustedError,
)


def test_ids_start_at_one_and_increase() -> None:
    ids = PacketIdAllocator()
    assert [ids.allocate() for _ in range(3)] == [1, 2, 3]
    assert len(ids) == 3 and 2 in ids and 4 not in ids


def test_released_id_is_not_reused_at_once() -> None:
    ids = PacketIdAllocator()
    first = ids.allocate()
    ids.release(first)
    assert ids.allocate() == 2


def test_wraps_from_65535_to_1_skipping_ids_in_use() -> None:
    ids = PacketIdAllocator(in_use=[1, 2], start=MAX_PACKET_ID)
    assert ids.allocate() == MAX_PACKET_ID
    assert ids.allocate() == 3  # 1 and 2 are in use
    ids.release(1)
    assert ids.allocate() == 4  # continues from where it stopped
    # after wrapping again, the freed id is found
    ids2 = PacketIdAllocator(in_use=range(2, MAX_PACKET_ID + 1))
    assert ids2.allocate() == 1


def test_exhaustion_raises_and_release_recovers() -> None:
    ids = PacketIdAllocator(in_use=range(1, MAX_PACKET_ID + 1))
    with pytest.raises(PacketIdsExhaustedError):
        ids.allocate()
    ids.release(40000)
    assert ids.allocate() == 40000


@pytest.mark.parametrize("bad", [0, -1, MAX_PACKET_ID + 1])
def test_reserve_rejects_out_of_range(bad: int) -> None:
    with pytest.raises(ValueError):
        PacketIdAllocator().reserve(bad)


def test_reserve_rejects_an_id_in_use_and_start_out_of_range() -> None:
    ids = PacketIdAllocator(in_use=[5])
    with pytest.raises(ValueError, match="already in use"):
        ids.reserve(5)
    with pytest.raises(ValueError):
        PacketIdAllocator(start=0)


def test_release_of_free_id_is_noop_and_clear_frees_all() -> None:
    ids = PacketIdAllocator(in_use=[1, 2])
    ids.release(9)
    assert len(ids) == 2
    ids.clear()
    assert len(ids) == 0
