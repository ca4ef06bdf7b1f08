"""DynamicSupervisor and ShardedSupervisor."""

from __future__ import annotations

import asyncio
import dataclasses
import time
import zlib
from typing import Any

import pytest
from pykka import ActorDeadError

import supervisors
from supervisors import (
    KILLED,
    ChildNotFoundError,
    DynamicSupervisor,
    Intensity,
    Restart,
    RestartIntensityError,
    ShardedSupervisor,
    SupervisorError,
    count_children,
    shard_index,
    start_child,
    start_sharded_child,
    terminate_child,
    terminate_sharded_child,
    which_children,
)
from supervisors_testkit import Count, Journal, children_of, crash, stop, worker

PLENTY = Intensity(max_restarts=100, period=60)


def test_children_come_and_go(run: Any) -> None:
    async def main() -> None:
        journal = Journal()
        sup = DynamicSupervisor.start(intensity=PLENTY)
        refs = [await start_child(sup, worker(f"w{i}", journal)) for i in range(5)]
        assert [i.ref for i in await which_children(sup)] == refs
        await terminate_child(sup, refs[2])
        assert not refs[2].is_alive()
        with pytest.raises(ChildNotFoundError):
            await terminate_child(sup, refs[2])
        assert (await count_children(sup)).active == 4
        await stop(sup)
        assert sorted(journal.of("stop")) == sorted(f"w{i}" for i in range(5))

    run(main())


@pytest.mark.parametrize(
    ("restart", "how", "restarted"),
    [
        (Restart.PERMANENT, "crash", True),
        (Restart.PERMANENT, "normal", True),
        (Restart.TRANSIENT, "crash", True),
        (Restart.TRANSIENT, "normal", False),
        (Restart.TEMPORARY, "crash", False),
    ],
)
def test_restart_types(run: Any, restart: Restart, how: str, restarted: bool) -> None:
    async def main() -> None:
        journal = Journal()
        sup = DynamicSupervisor.start(intensity=PLENTY)
        ref = await start_child(sup, worker("w", journal, restart))
        if how == "crash":
            await crash(ref)
        else:
            await stop(ref)
        infos = await which_children(sup)
        if restarted:
            (info,) = infos
            assert info.ref is not ref and info.ref.is_alive()
        else:
            assert infos == []  # forgotten
        assert journal.starts("w") == (2 if restarted else 1)
        await stop(sup)

    run(main())


def test_max_children(run: Any) -> None:
    async def main() -> None:
        journal = Journal()
        sup = DynamicSupervisor.start(max_children=2)
        await start_child(sup, worker("a", journal))
        await start_child(sup, worker("b", journal))
        with pytest.raises(SupervisorError, match="max_children"):
            await start_child(sup, worker("c", journal))
        await stop(sup)

    run(main())


def test_dynamic_intensity_escalates(run: Any) -> None:
    async def main() -> None:
        journal = Journal()
        sup = DynamicSupervisor.start(intensity=Intensity(1, 60))
        bystander = await start_child(sup, worker("by", journal))
        await crash(await start_child(sup, worker("w", journal)))
        await crash((await children_of(sup))["w"])
        reason = await supervisors.exit_future(sup)
        assert isinstance(reason, supervisors.Crash)
        assert isinstance(reason.exception, RestartIntensityError)
        assert not bystander.is_alive()

    run(main())


def test_children_stop_concurrently(run: Any) -> None:
    async def main() -> None:
        journal = Journal()
        sup = DynamicSupervisor.start()
        stuck = [
            await start_child(sup, worker(i, journal, shutdown=0.3, ignore_stop=True))
            for i in range(5)
        ]
        done = [supervisors.exit_future(ref) for ref in stuck]
        began = time.monotonic()
        await stop(sup)
        elapsed = time.monotonic() - began
        assert [await d for d in done] == [KILLED] * 5
        assert 0.3 <= elapsed < 1.2  # one timeout, not five in a row (1.5 s)

    run(main())


def test_shard_index_is_stable_crc32() -> None:
    assert shard_index("client-1", 8) == zlib.crc32(b"client-1") % 8
    assert shard_index(b"client-1", 8) == shard_index("client-1", 8)
    assert shard_index(42, 5) == zlib.crc32(b"42") % 5
    with pytest.raises(TypeError):
        shard_index(("tuple",), 4)  # type: ignore[arg-type]


def test_sharded_children_land_in_their_shard(run: Any) -> None:
    async def main() -> None:
        journal = Journal()
        sharded = ShardedSupervisor.start(4, shard_intensity=PLENTY)
        keys = [f"client-{i}" for i in range(40)]
        refs = {k: await start_sharded_child(sharded, k, worker(k, journal)) for k in keys}
        shards = await children_of(sharded)
        assert list(shards) == [0, 1, 2, 3]
        for index, shard in shards.items():
            inside = {i.id for i in await which_children(shard)}
            assert inside == {k for k in keys if shard_index(k, 4) == index}
        assert len({shard_index(k, 4) for k in keys}) == 4  # the keys spread out
        await terminate_sharded_child(sharded, "client-3", refs["client-3"])
        assert not refs["client-3"].is_alive()
        await stop(sharded)
        assert sorted(journal.of("stop")) == sorted(keys)

    run(main())


def test_a_crashed_shard_is_restarted_and_routing_follows(run: Any) -> None:
    async def main() -> None:
        journal = Journal()
        sharded = ShardedSupervisor.start(2, intensity=PLENTY)
        index = shard_index("k", 2)
        old = (await children_of(sharded))[index]
        child = await start_sharded_child(sharded, "k", worker("k", journal))
        child_done = supervisors.exit_future(child)
        supervisors.kill(old, supervisors.Crash(RuntimeError("shard bug")))
        await supervisors.exit_future(old)
        reason = await child_done  # linked workers die with the shard's reason
        assert isinstance(reason, supervisors.Crash)
        assert isinstance(reason.exception, RuntimeError)
        new = (await children_of(sharded))[index]
        assert new is not old and new.is_alive()
        again = await start_sharded_child(sharded, "k", worker("k", journal))
        assert [i.ref for i in await which_children(new)] == [again]
        await stop(sharded)
        with pytest.raises(ActorDeadError):
            await start_sharded_child(sharded, "k", worker("k", journal))

    run(main())


def _no_wait(spec: supervisors.ChildSpec) -> supervisors.ChildSpec:
    return dataclasses.replace(spec, wait_start=False)


def test_a_child_that_does_not_wait_is_running_before_its_on_start(run: Any) -> None:
    async def main() -> None:
        journal = Journal()
        sup = DynamicSupervisor.start(intensity=PLENTY)
        ref = await start_child(sup, _no_wait(worker("w", journal, async_start=True)))
        assert journal.starts("w") == 0  # replied before on_start ran...
        assert [i.ref for i in await which_children(sup)] == [ref]  # ...already RUNNING
        ref.tell("first")  # held by its mailbox until on_start ran, then in order
        assert await ref.ask("second", block=False) == "second"
        assert journal.starts("w") == 1
        assert (await ref.ask(Count(), block=False)) == 3
        await stop(sup)
        assert journal.of("stop") == ["w"]

    run(main())


def test_a_failing_on_start_of_a_child_that_does_not_wait_is_an_exit(run: Any) -> None:
    async def main() -> None:
        journal = Journal()
        sup = DynamicSupervisor.start(intensity=PLENTY)
        spec = _no_wait(worker("w", journal, Restart.TRANSIENT, fail_start=True))
        ref = await start_child(sup, spec)  # no StartChildError: it has not failed yet
        reason = await supervisors.exit_future(ref)
        assert isinstance(reason, supervisors.Crash)
        # The exit is handled as any other: a transient child is restarted (and fails again
        # until the intensity gives up: PLENTY allows 100, so look at the first restart).
        await eventually_starts(journal, "w", 2)
        await stop(sup)

    run(main())


def test_many_children_that_do_not_wait_start_in_one_turn_each(run: Any) -> None:
    async def main() -> None:
        journal = Journal()
        sharded = ShardedSupervisor.start(4, intensity=PLENTY)
        pending = [start_sharded_child(sharded, f"k{i}", _no_wait(worker(f"k{i}", journal)))
                   for i in range(200)]  # all in flight at once, nothing awaited yet
        refs = [await p for p in pending]
        assert len(set(refs)) == 200
        counts = [(await count_children(s)).active
                  for s in (await children_of(sharded)).values()]
        assert sum(counts) == 200
        await stop(sharded)
        assert sorted(journal.of("stop")) == sorted(f"k{i}" for i in range(200))

    run(main())


async def eventually_starts(journal: Journal, name: str, times: int) -> None:
    while journal.starts(name) < times:
        await asyncio.sleep(0)
