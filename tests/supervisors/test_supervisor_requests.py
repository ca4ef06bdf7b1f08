"""Supervisor requests: start/terminate/restart/delete/which/count children."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pykka
import pytest

import supervisors
from supervisors import (
    ChildCounts,
    ChildKind,
    ChildNotFoundError,
    ChildRunningError,
    ChildSpec,
    ChildState,
    DuplicateChildError,
    Restart,
    StartChildError,
    Supervisor,
    count_children,
    delete_child,
    restart_child,
    start_child,
    supervisor_spec,
    terminate_child,
    which_children,
)
from supervisors_testkit import Journal, children_of, stop, worker


def test_start_terminate_restart_delete(run: Any) -> None:
    async def main() -> None:
        journal = Journal()
        sup = Supervisor.start([worker("a", journal)])
        ref = await start_child(sup, worker("b", journal))
        assert ref.is_alive() and list(await children_of(sup)) == ["a", "b"]
        with pytest.raises(DuplicateChildError):
            await start_child(sup, worker("b", journal))

        await terminate_child(sup, "b")
        assert not ref.is_alive()
        (_, b_info) = await which_children(sup)
        assert b_info.ref is None and b_info.state is ChildState.DEFINED
        with pytest.raises(ChildRunningError):
            await delete_child(sup, "a")

        again = await restart_child(sup, "b")
        assert again.is_alive() and again is not ref
        with pytest.raises(ChildRunningError):
            await restart_child(sup, "b")

        await terminate_child(sup, "b")
        await delete_child(sup, "b")
        assert list(await children_of(sup)) == ["a"]
        for request in (terminate_child, restart_child, delete_child):
            with pytest.raises(ChildNotFoundError):
                await request(sup, "nope")
        assert journal.of("start") == ["a", "b", "b"]
        await stop(sup)

    run(main())


def test_terminating_a_temporary_child_drops_its_spec(run: Any) -> None:
    async def main() -> None:
        journal = Journal()
        sup = Supervisor.start([worker("t", journal, Restart.TEMPORARY)])
        await terminate_child(sup, "t")
        assert await which_children(sup) == []
        await stop(sup)

    run(main())


def test_a_failed_start_child_is_not_kept(run: Any) -> None:
    async def main() -> None:
        journal = Journal()
        sup = Supervisor.start([])
        with pytest.raises(StartChildError) as failed:
            await start_child(sup, worker("bad", journal, fail_start=True))
        assert isinstance(failed.value.reason, supervisors.Crash)

        def not_an_actor() -> Any:
            raise RuntimeError("no actor today")

        with pytest.raises(StartChildError, match="no actor today"):
            await start_child(sup, ChildSpec(id="x", start=not_an_actor))

        class Plain(pykka.ThreadingActor):
            pass

        plain = ChildSpec(id="plain", start=Plain.start)
        with pytest.raises(StartChildError, match="plain pykka actor"):
            await start_child(sup, plain)
        # The supervisor stops the refused actor without waiting for it; wait
        # here so the leak check of the fixture sees it gone.
        for ref in pykka.ActorRegistry.get_by_class(Plain):
            await asyncio.get_running_loop().run_in_executor(None, ref.actor_stopped.wait, 5)
        not_a_ref: Any = lambda: "not a ref"  # noqa: E731
        bogus = ChildSpec(id="bogus", start=not_a_ref)
        with pytest.raises(StartChildError, match="not an ActorRef"):
            await start_child(sup, bogus)
        assert await which_children(sup) == []
        await stop(sup)

    run(main())


def test_count_children(run: Any) -> None:
    async def main() -> None:
        journal = Journal()
        sup = Supervisor.start(
            [
                worker("a", journal),
                worker("b", journal, thread=True),
                supervisor_spec("sub", [worker("c", journal)]),
            ]
        )
        assert await count_children(sup) == ChildCounts(specs=3, active=3, supervisors=1, workers=2)
        await terminate_child(sup, "a")
        assert await count_children(sup) == ChildCounts(specs=3, active=2, supervisors=1, workers=2)
        infos = await which_children(sup)
        assert [i.kind for i in infos] == [ChildKind.WORKER, ChildKind.WORKER, ChildKind.SUPERVISOR]
        await stop(sup)

    run(main())


def test_requests_from_another_thread_block_as_usual(run: Any) -> None:
    async def main() -> None:
        journal = Journal()
        sup = Supervisor.start([worker("a", journal)])
        result: dict[str, Any] = {}

        def client() -> None:
            ref = start_child(sup, worker("b", journal)).get(timeout=5)
            result["b"] = ref.ask("hello", timeout=5)
            result["count"] = count_children(sup).get(timeout=5)
            result["stopped"] = sup.stop(timeout=5)

        thread = threading.Thread(target=client)
        thread.start()
        await asyncio.get_running_loop().run_in_executor(None, thread.join)
        assert result["b"] == "hello"
        assert result["count"].active == 2
        assert result["stopped"] is True
        assert journal.of("stop") == ["b", "a"]

    run(main())


def test_duplicate_ids_are_rejected_at_construction(run: Any) -> None:
    async def main() -> None:
        journal = Journal()
        with pytest.raises(DuplicateChildError):
            Supervisor.start([worker("a", journal), worker("a", journal)])

    run(main())

