"""Supervisor: crash injection for every strategy and restart type."""

from __future__ import annotations

import itertools
from typing import Any

import pykka
import pytest

import supervisors
from supervisors import (
    ChildState,
    Intensity,
    Restart,
    Strategy,
    Supervisor,
    which_children,
)
from supervisors_testkit import BOOM, Count, Journal, children_of, crash, stop, worker

PLENTY = Intensity(max_restarts=100, period=60)
SIBLINGS = ["a", "b", "c"]

# After b exits with the given reason: which children restart?
EXPECTED: dict[Strategy, list[str]] = {
    Strategy.ONE_FOR_ONE: ["b"],
    Strategy.ONE_FOR_ALL: ["a", "b", "c"],
    Strategy.REST_FOR_ONE: ["b", "c"],
}


async def _exit(ref: Any, how: str) -> supervisors.ExitReason:
    if how == "crash":
        return await crash(ref)
    return await stop(ref)  # "normal": the child stops itself in an orderly way


@pytest.mark.parametrize(
    ("strategy", "restart", "how"),
    list(itertools.product(Strategy, Restart, ["crash", "normal"])),
    ids=lambda v: getattr(v, "value", v),
)
def test_crash_injection(run: Any, strategy: Strategy, restart: Restart, how: str) -> None:
    async def main() -> None:
        journal = Journal()
        specs = [
            worker("a", journal),
            worker("b", journal, restart),
            worker("c", journal),
        ]
        sup = Supervisor.start(specs, strategy=strategy, intensity=PLENTY)
        before = await children_of(sup)
        await _exit(before["b"], how)
        after = await children_of(sup)

        restarts = how == "crash" or restart is Restart.PERMANENT
        if restart is Restart.TEMPORARY:
            restarts = False
        expected = EXPECTED[strategy] if restarts else []
        for name in SIBLINGS:
            if name == "b" and not restarts:
                if restart is Restart.TEMPORARY:
                    assert "b" not in after  # spec dropped
                else:
                    assert after["b"] is None  # kept, not running
                continue
            assert journal.starts(name) == (2 if name in expected else 1), name
            if name in expected:
                assert after[name] is not before[name] and after[name].is_alive()
            else:
                assert after[name] is before[name]
        # b's own on_stop ran if it stopped itself; then the siblings to restart
        # were stopped in reverse start order.
        siblings_stopped = [n for n in reversed(expected) if n != "b"]
        assert journal.of("stop") == (["b"] if how == "normal" else []) + siblings_stopped
        stops_so_far = len(journal.of("stop"))
        await stop(sup)
        running = [n for n in ["c", "b", "a"] if after.get(n) is not None]
        assert journal.of("stop")[stops_so_far:] == running

    run(main())


def test_a_temporary_sibling_is_stopped_and_dropped_by_one_for_all(run: Any) -> None:
    async def main() -> None:
        journal = Journal()
        specs = [worker("a", journal), worker("t", journal, Restart.TEMPORARY)]
        sup = Supervisor.start(specs, strategy=Strategy.ONE_FOR_ALL, intensity=PLENTY)
        before = await children_of(sup)
        await crash(before["a"])
        after = await children_of(sup)
        assert list(after) == ["a"]
        assert journal.of("stop") == ["t"]
        await stop(sup)

    run(main())


def test_thread_and_loop_children_under_one_supervisor(run: Any) -> None:
    async def main() -> None:
        journal = Journal()
        specs = [worker("loop", journal), worker("thread", journal, thread=True)]
        sup = Supervisor.start(specs, strategy=Strategy.ONE_FOR_ALL, intensity=PLENTY)
        before = await children_of(sup)
        await crash(before["thread"])
        after = await children_of(sup)
        assert journal.starts("loop") == journal.starts("thread") == 2
        assert after["thread"] is not before["thread"]
        assert await after["thread"].ask("hi", block=False) == "hi"
        await crash(after["loop"])
        final = await children_of(sup)
        assert journal.starts("thread") == 3
        assert await stop(sup) == supervisors.NORMAL
        assert journal.of("stop")[-2:] == ["thread", "loop"]
        assert all(not ref.is_alive() for ref in final.values())

    run(main())


def test_queued_messages_die_with_the_crashed_incarnation(run: Any) -> None:
    async def main() -> None:
        journal = Journal()
        sup = Supervisor.start([worker("w", journal)], intensity=PLENTY)
        (old,) = (await children_of(sup)).values()
        before = [old.ask(i, block=False) for i in range(3)]
        done = supervisors.exit_future(old)
        old.tell(BOOM)
        after = [old.ask(i, block=False) for i in range(3)]  # queued behind the crash
        await done
        # The crash report is in the supervisor's inbox now; requests queue
        # behind it and see the restarted child.
        listing = which_children(sup)
        assert [await f for f in before] == [0, 1, 2]
        for future in after:
            with pytest.raises(pykka.ActorDeadError):
                await future
        (info,) = await listing
        assert info.state is ChildState.RUNNING and info.ref is not old
        assert await info.ref.ask(Count(), block=False) == 1
        await stop(sup)

    run(main())


def test_restart_keeps_start_order_and_waits_for_on_start(run: Any) -> None:
    async def main() -> None:
        journal = Journal()
        specs = [worker(n, journal, async_start=True) for n in SIBLINGS]
        sup = Supervisor.start(specs, strategy=Strategy.ONE_FOR_ALL, intensity=PLENTY)
        await which_children(sup)
        assert journal.events == [("start", n) for n in SIBLINGS]
        await crash((await children_of(sup))["c"])
        await which_children(sup)
        assert journal.events[3:] == [("stop", "b"), ("stop", "a")] + [
            ("start", n) for n in SIBLINGS
        ]
        await stop(sup)
        assert journal.of("stop")[-3:] == ["c", "b", "a"]

    run(main())

