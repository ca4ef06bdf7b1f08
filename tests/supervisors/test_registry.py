"""RefTable: O(1) registry storage with list semantics for pykka."""

from __future__ import annotations

from typing import Any

import pytest
from pykka import ActorRegistry

from supervisors import LoopActor
from supervisors.registry import RefTable, install


class Noop(LoopActor):
    pass


def test_ref_table_behaves_like_the_list_it_replaces() -> None:
    a, b, c = object(), object(), object()
    table = RefTable([a])  # type: ignore[list-item]
    table.append(b)  # type: ignore[arg-type]
    table.append(c)  # type: ignore[arg-type]
    assert table[:] == [a, b, c] and list(table) == [a, b, c] and len(table) == 3
    table.remove(b)  # type: ignore[arg-type]
    assert b not in table and a in table and table[-1] is c
    with pytest.raises(ValueError):
        table.remove(b)  # type: ignore[arg-type]
    assert install() is ActorRegistry._actor_refs  # idempotent


def test_loop_actors_register_and_unregister_in_any_order(run: Any) -> None:
    async def main() -> None:
        refs = [Noop.start() for _ in range(2_000)]
        assert ActorRegistry.get_all() == refs  # registration order is kept
        for ref in reversed(refs[1::2]):  # newest first: O(1) each with RefTable
            ref.stop(block=False)
        await refs[1].stop(block=False)
        assert ActorRegistry.get_all() == refs[0::2]
        for ref in refs[0::2]:
            ref.stop(block=False)
        await refs[-2].stop(block=False)
        assert ActorRegistry.get_all() == []

    run(main())
