"""What an operator sees and does: restart counts, mailbox depths, crash on request."""

from __future__ import annotations

from typing import Any

import pytest

import supervisors
from supervisors import (
    Crash,
    CrashRequestedError,
    DynamicSupervisor,
    Intensity,
    Restart,
    Strategy,
    Supervisor,
    count_children,
    start_child,
    which_children,
)
from supervisors_testkit import Journal, children_of, stop, worker

PLENTY = Intensity(max_restarts=100, period=60)


@pytest.mark.parametrize("thread", [False, True], ids=["loop", "thread"])
def test_crash_runs_on_failure_and_the_supervisor_restarts_and_counts_it(
        run: Any, thread: bool) -> None:
    async def main() -> None:
        journal = Journal()
        sup = Supervisor.start([worker("a", journal), worker("b", journal, thread=thread)],
                               strategy=Strategy.ONE_FOR_ONE, intensity=PLENTY)
        before = await children_of(sup)
        assert [i.restarts for i in await which_children(sup)] == [0, 0]
        exited = supervisors.exit_future(before["b"])
        supervisors.crash(before["b"], "operator says so")
        reason = await exited
        assert isinstance(reason, Crash) and isinstance(reason.exception, CrashRequestedError)
        assert str(reason.exception) == "operator says so"
        after = await children_of(sup)  # answered once the restart is done
        assert after["b"] is not before["b"] and journal.starts("b") == 2
        assert [(i.id, i.restarts) for i in await which_children(sup)] == [("a", 0), ("b", 1)]
        assert (await count_children(sup)).restarts == 1
        supervisors.crash(after["b"], "again")
        await supervisors.exit_future(after["b"])
        await children_of(sup)
        assert (await count_children(sup)).restarts == 2
        assert await stop(sup) == supervisors.NORMAL

    run(main())


def test_a_dynamic_supervisor_counts_restarts_too(run: Any) -> None:
    async def main() -> None:
        journal = Journal()
        sup = DynamicSupervisor.start(intensity=PLENTY)
        child = await start_child(sup, worker("d", journal, Restart.TRANSIENT))
        supervisors.crash(child, "boom")
        await supervisors.exit_future(child)
        for _ in range(100):  # each ask is one turn of the supervisor: bounded retries
            if (await count_children(sup)).restarts:
                break
        [info] = await which_children(sup)
        assert info.restarts == 1 and info.ref is not child
        assert await stop(sup) == supervisors.NORMAL

    run(main())


def test_mailbox_depth_counts_what_waits(run: Any) -> None:
    async def main() -> None:
        journal = Journal()
        sup = Supervisor.start([worker("w", journal)], intensity=PLENTY)
        ref = (await children_of(sup))["w"]
        assert supervisors.mailbox_depth(ref) == 0
        for i in range(7):  # told on the loop: none is handled before we await
            ref.tell(i)
        assert supervisors.mailbox_depth(ref) == 7
        assert await ref.ask("sync", block=False) == "sync"
        assert supervisors.mailbox_depth(ref) == 0
        assert await stop(sup) == supervisors.NORMAL
        assert supervisors.mailbox_depth(ref) == 0  # dead: nothing waits

    run(main())
