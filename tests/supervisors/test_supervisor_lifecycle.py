"""Supervisor: ordered start/stop, shutdown timeouts, start failures, escalation."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from typing import Any

import pykka
import pytest

import supervisors
from supervisors import (
    BRUTAL_KILL,
    KILLED,
    NORMAL,
    SHUTDOWN,
    Application,
    Crash,
    Intensity,
    LoopFuture,
    RestartIntensityError,
    StartChildError,
    Strategy,
    Supervisor,
    supervisor_spec,
    which_children,
)
from supervisors_testkit import Journal, children_of, crash, stop, worker

NAMES = ["a", "b", "c", "d"]


def test_children_start_in_order_and_stop_in_reverse(run: Any) -> None:
    async def main() -> None:
        journal = Journal()
        sup = Supervisor.start([worker(n, journal, async_start=True) for n in NAMES])
        await which_children(sup)
        assert journal.of("start") == NAMES
        assert await stop(sup) == NORMAL
        assert journal.of("stop") == NAMES[::-1]

    run(main())


def test_shutdown_reason_reaches_children(run: Any) -> None:
    async def main() -> None:
        journal = Journal()
        sup = Supervisor.start([worker("a", journal)])
        (child,) = (await children_of(sup)).values()
        child_done = supervisors.exit_future(child)
        supervisors.shutdown(sup)
        assert await supervisors.exit_future(sup) == SHUTDOWN
        assert await child_done == SHUTDOWN

    run(main())


@pytest.mark.parametrize("thread", [False, True], ids=["loop", "thread"])
def test_a_child_that_ignores_stop_is_killed_after_its_timeout(run: Any, thread: bool) -> None:
    async def main() -> None:
        journal = Journal()
        release = threading.Event()
        extra = {"release": release} if thread else {}
        specs = [
            worker("first", journal),
            worker("stuck", journal, shutdown=0.2, ignore_stop=True, thread=thread, **extra),
        ]
        sup = Supervisor.start(specs)
        stuck = (await children_of(sup))["stuck"]
        stuck_done = supervisors.exit_future(stuck)
        began = time.monotonic()
        assert await stop(sup) == NORMAL
        elapsed = time.monotonic() - began
        assert await stuck_done == KILLED
        assert 0.2 <= elapsed < 2.0
        assert journal.of("stop") == ["stuck", "first"]  # still in reverse order
        release.set()  # the abandoned thread may finish now

    run(main())


def test_brutal_kill_skips_on_stop(run: Any) -> None:
    async def main() -> None:
        journal = Journal()
        sup = Supervisor.start([worker("a", journal), worker("b", journal, shutdown=BRUTAL_KILL)])
        b = (await children_of(sup))["b"]
        b_done = supervisors.exit_future(b)
        await stop(sup)
        assert await b_done == KILLED
        assert journal.of("stop") == ["a"]

    run(main())


def test_a_crash_in_on_start_fails_the_supervisor_start(run: Any) -> None:
    async def main() -> None:
        journal = Journal()
        specs = [
            worker("a", journal),
            worker("bad", journal, fail_start=True),
            worker("c", journal),
        ]
        sup = Supervisor.start(specs)
        reason = await supervisors.exit_future(sup)
        assert isinstance(reason, Crash) and isinstance(reason.exception, StartChildError)
        assert reason.exception.child_id == "bad"
        assert journal.of("start") == ["a", "bad"]
        assert journal.of("stop") == ["a"]  # what had started is stopped again

    run(main())


def test_a_child_that_cannot_restart_exhausts_the_intensity(run: Any) -> None:
    async def main() -> None:
        journal = Journal()
        specs = [worker("a", journal), worker("flaky", journal, fail_restart=True)]
        sup = Supervisor.start(specs, intensity=Intensity(max_restarts=3, period=60))
        await crash((await children_of(sup))["flaky"])
        reason = await supervisors.exit_future(sup)
        assert isinstance(reason, Crash)
        assert isinstance(reason.exception, RestartIntensityError)
        assert journal.starts("flaky") == 1 + 3  # first start, then 3 failed restarts
        assert journal.of("stop") == ["a"]

    run(main())


def test_on_start_timeout_counts_as_a_failed_start(run: Any) -> None:
    class Slow(supervisors.LoopActor):
        async def on_start(self) -> None:  # type: ignore[override]
            await never()

    async def main() -> None:
        spec = supervisors.ChildSpec(id="slow", start=Slow.start, start_timeout=0.05)
        sup = Supervisor.start([spec])
        reason = await supervisors.exit_future(sup)
        assert isinstance(reason, Crash)
        assert reason.exception.reason == KILLED  # type: ignore[attr-defined]

    run(main())


async def never() -> None:
    await asyncio.Event().wait()


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_intensity_window_forgets_old_restarts(run: Any) -> None:
    async def main() -> None:
        clock = FakeClock()
        journal = Journal()
        sup = Supervisor.start(
            [worker("w", journal)], intensity=Intensity(max_restarts=2, period=10), clock=clock
        )
        for now in (0.0, 5.0, 10.5, 15.1):  # never more than 2 within 10 s
            clock.now = now
            await crash((await children_of(sup))["w"])
            await which_children(sup)  # the restart is done, at `now`
        assert journal.starts("w") == 5
        clock.now = 16.0  # third restart within 10 s of 10.5 and 15.1
        await crash((await children_of(sup))["w"])
        reason = await supervisors.exit_future(sup)
        assert isinstance(reason, Crash) and isinstance(reason.exception, RestartIntensityError)

    run(main())


def test_escalation_through_two_levels_stops_the_application(
    run: Any, caplog: pytest.LogCaptureFixture
) -> None:
    async def main() -> None:
        journal = Journal()
        inner = supervisor_spec("inner", [worker("w", journal)], intensity=Intensity(1, 60))
        middle = supervisor_spec(
            "middle", [worker("m", journal), inner],
            strategy=Strategy.REST_FOR_ONE, intensity=Intensity(1, 60),
        )  # fmt: skip
        root_ref: LoopFuture[Any] = LoopFuture()

        def start_root() -> Any:
            ref = Supervisor.start(
                [worker("root-worker", journal), middle], intensity=Intensity(0, 60), name="root"
            )
            root_ref.set(ref)
            return ref

        app = Application(start_root, name="test-app")
        running = asyncio.get_running_loop().create_task(app.run())
        root = await root_ref

        async def crash_w(inner_gives_up: bool) -> None:
            mid = (await children_of(root))["middle"]
            inn = (await children_of(mid))["inner"]
            inner_done = supervisors.exit_future(inn)
            await crash((await children_of(inn))["w"])
            if inner_gives_up:
                reason = await inner_done
                assert isinstance(reason, Crash)
                assert isinstance(reason.exception, RestartIntensityError)
            else:
                await which_children(inn)  # w restarted

        await crash_w(inner_gives_up=False)  # inner restarts w (1 of 1)
        await crash_w(inner_gives_up=True)  # inner fails; middle restarts it (1 of 1)
        await which_children((await children_of(root))["middle"])
        await crash_w(inner_gives_up=False)  # the new inner restarts w
        await crash_w(inner_gives_up=True)  # inner fails, middle fails, root (0) fails
        reason = await running
        assert isinstance(reason, Crash) and isinstance(reason.exception, RestartIntensityError)
        assert journal.starts("w") == 4
        assert journal.starts("m") == 1
        assert journal.of("stop")[-2:] == ["m", "root-worker"]

    with caplog.at_level(logging.CRITICAL, logger="supervisors"):
        run(main())
    critical = [r.getMessage() for r in caplog.records if r.levelno == logging.CRITICAL]
    assert len(critical) == 1
    assert "test-app: root" in critical[0] and "stopping the application" in critical[0]
    assert "RestartIntensityError" in critical[0]


def test_killing_a_supervisor_takes_its_subtree_down(run: Any) -> None:
    async def main() -> None:
        journal = Journal()
        root = Supervisor.start(
            [worker("a", journal), supervisor_spec("sub", [worker("leaf", journal)])]
        )
        sub = (await children_of(root))["sub"]
        leaf = (await children_of(sub))["leaf"]
        a = (await children_of(root))["a"]
        leaf_done, a_done = supervisors.exit_future(leaf), supervisors.exit_future(a)
        supervisors.kill(root)
        assert await supervisors.exit_future(root) == KILLED
        assert await a_done == KILLED  # a worker dies with its linked parent
        assert await supervisors.exit_future(sub) == KILLED  # a supervisor stops...
        assert await leaf_done == SHUTDOWN  # ...its own children in order
        assert journal.of("stop") == ["leaf"]

    run(main())


def test_stopping_a_tree_leaves_no_actor_task_or_thread(run: Any) -> None:
    async def main() -> None:
        journal = Journal()
        sharded = supervisors.ChildSpec(
            id="sessions",
            start=lambda: supervisors.ShardedSupervisor.start(3),
            kind=supervisors.ChildKind.SUPERVISOR,
        )
        root = Supervisor.start(
            [
                worker("disk", journal, thread=True),
                supervisor_spec("core", [worker("registry", journal), sharded]),
                worker("listener", journal),
            ],
            strategy=Strategy.ONE_FOR_ALL,
        )
        core = (await children_of(root))["core"]
        sessions = (await children_of(core))["sessions"]
        for key in range(20):
            await supervisors.start_sharded_child(sessions, key, worker(key, journal))
        # root, disk, core, registry, sessions, 3 shards, 20 session workers, listener
        assert len(pykka.ActorRegistry.get_all()) == 1 + 1 + 1 + 1 + 1 + 3 + 20 + 1
        assert await stop(root) == NORMAL
        assert pykka.ActorRegistry.get_all() == []
        others = asyncio.all_tasks() - {asyncio.current_task()}
        assert [t.get_coro().__name__ for t in others] == ["wait_for"]  # the fixture's
        assert journal.of("stop")[0] == "listener" and journal.of("stop")[-1] == "disk"

    run(main())
