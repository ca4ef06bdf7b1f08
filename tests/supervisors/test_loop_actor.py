"""LoopActor: pykka's API on an event loop, on both asyncio and uvloop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pykka
import pytest
from pykka import ActorDeadError, ActorRegistry

import supervisors
from supervisors import BlockingOnLoopError, LoopActor, NoEventLoopError
from supervisors_testkit import BOOM, Crashed, Hang, Journal, Worker


@pytest.fixture
def loop_factory(any_loop: Callable[[], asyncio.AbstractEventLoop]) -> Any:
    return any_loop


class Echo(LoopActor):
    def on_receive(self, message: Any) -> Any:
        return message


class Collector(LoopActor):
    """Collects told messages; replies to an ask with what it has."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[Any] = []
        self.running = 0
        self.overlap = False

    async def slow(self, value: Any) -> None:
        self.running += 1
        self.overlap |= self.running > 1
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        self.seen.append(value)
        self.running -= 1

    def on_receive(self, message: Any) -> Any:
        if message == "get":
            return list(self.seen)
        if isinstance(message, tuple) and message[0] == "slow":
            return self.slow(message[1])
        self.seen.append(message)
        return None

    def add(self, value: int) -> int:
        self.seen.append(value)
        return len(self.seen)

    async def add_later(self, value: int) -> int:
        await asyncio.sleep(0)
        return self.add(value)


def test_tell_and_ask_keep_order(run: Any) -> None:
    async def main() -> None:
        ref = Collector.start()
        for i in range(1000):  # more than one turn's batch
            ref.tell(i)
        assert await ref.ask("get", block=False) == list(range(1000))
        await ref.stop(block=False)

    run(main())


def test_async_handlers_run_one_at_a_time(run: Any) -> None:
    async def main() -> None:
        ref = Collector.start()
        for i in range(5):
            ref.tell(("slow", i))
        ref.tell("plain")
        assert await ref.ask("get", block=False) == [0, 1, 2, 3, 4, "plain"]
        actor = ref.proxy()
        assert await actor.overlap is False
        await ref.stop(block=False)

    run(main())


def test_proxies_call_sync_and_async_methods(run: Any) -> None:
    async def main() -> None:
        proxy = Collector.start().proxy()
        assert await proxy.add(1) == 1
        assert await proxy.add_later(2) == 2
        proxy.add.defer(3)
        assert await proxy.seen == [1, 2, 3]
        await proxy.actor_ref.stop(block=False)

    run(main())


def test_registry_tracks_loop_actors(run: Any) -> None:
    async def main() -> None:
        ref = Echo.start()
        assert ActorRegistry.get_by_urn(ref.actor_urn) is ref
        assert ref in ActorRegistry.get_by_class(Echo)
        assert await ref.stop(block=False) is True
        assert ActorRegistry.get_by_urn(ref.actor_urn) is None
        assert await ref.stop(block=False) is False  # already dead
        assert not ref.is_alive()

    run(main())


def test_messages_queued_behind_stop_fail_with_actor_dead(run: Any) -> None:
    async def main() -> None:
        ref = Echo.start()
        first = ref.ask("first", block=False)
        stopped = ref.stop(block=False)
        # Put behind the stop message directly, as a racing sender would.
        late = pykka.ThreadingFuture()
        ref.actor_inbox.put(pykka._envelope.Envelope("late", reply_to=late))
        assert await first == "first"
        assert await stopped is True
        with pytest.raises(ActorDeadError):
            late.get(timeout=0)  # already settled: get() does not block
        with pytest.raises(ActorDeadError):
            ref.tell("after")
        with pytest.raises(ActorDeadError):
            await ref.ask("after", block=False)

    run(main())


def test_blocking_get_on_the_loop_raises_instead_of_deadlocking(run: Any) -> None:
    async def main() -> None:
        ref = Echo.start()
        with pytest.raises(BlockingOnLoopError):
            ref.ask("hello")  # block=True on the loop thread
        with pytest.raises(BlockingOnLoopError):
            ref.stop()  # the stop request is still delivered
        assert await supervisors.exit_future(ref) == supervisors.NORMAL

    run(main())


def test_other_threads_tell_ask_and_stop_blocking(run: Any) -> None:
    async def main() -> None:
        ref = Collector.start()
        results: dict[str, Any] = {}

        def client() -> None:
            for i in range(100):
                ref.tell(i)
            results["ask"] = ref.ask("get", timeout=5)
            results["proxy"] = ref.proxy().add(100).get(timeout=5)
            results["stop"] = ref.stop(timeout=5)

        thread = threading.Thread(target=client)
        thread.start()
        await asyncio.get_running_loop().run_in_executor(None, thread.join)
        assert results == {"ask": list(range(100)), "proxy": 101, "stop": True}

    run(main())


def test_start_from_another_thread_uses_the_set_loop(run: Any) -> None:
    async def main() -> None:
        started: list[Any] = []

        def client() -> None:
            ref = Echo.start()
            started.append(ref)
            started.append(ref.ask("from thread", timeout=5))

        await asyncio.get_running_loop().run_in_executor(None, client)
        ref, reply = started
        assert reply == "from thread"
        await ref.stop(block=False)

    run(main())


def test_no_loop_anywhere_is_a_clear_error() -> None:
    supervisors.use_loop(None)
    with pytest.raises(NoEventLoopError, match="use_loop"):
        Echo.start()
    assert ActorRegistry.get_all() == []


def test_crash_on_tell_stops_the_actor_but_ask_errors_go_to_the_caller(run: Any) -> None:
    async def main() -> None:
        journal = Journal()
        ref = Worker.start("w", journal)
        with pytest.raises(Crashed):
            await ref.ask(BOOM, block=False)  # pykka: the caller gets it
        assert ref.is_alive()
        done = supervisors.exit_future(ref)
        ref.tell(BOOM)
        reason = await done
        assert isinstance(reason, supervisors.Crash)
        assert isinstance(reason.exception, Crashed)
        assert not ref.is_alive()

    run(main())


def test_crash_in_on_start_stops_the_actor(run: Any) -> None:
    async def main() -> None:
        journal = Journal()
        ref = Worker.start("w", journal, fail_start=True)
        with pytest.raises(ActorDeadError):
            await ref.ask("hello", block=False)
        reason = await supervisors.exit_future(ref)
        assert isinstance(reason, supervisors.Crash)
        assert journal.of("stop") == []  # on_stop is not run after a failure

    run(main())


def test_async_on_stop_is_awaited_before_the_stop_resolves(run: Any) -> None:
    async def main() -> None:
        journal = Journal()
        ref = Worker.start("w", journal)
        assert await ref.stop(block=False) is True
        assert journal.events == [("start", "w"), ("stop", "w")]

    run(main())


def test_kill_cancels_a_handler_that_never_returns(run: Any) -> None:
    async def main() -> None:
        journal = Journal()
        ref = Worker.start("w", journal)
        ref.tell(Hang())
        pending = ref.ask("queued", block=False)
        supervisors.kill(ref)
        assert await supervisors.exit_future(ref) == supervisors.KILLED
        with pytest.raises(ActorDeadError):
            await pending

    run(main())


def test_exit_hooks_fire_once_with_many_watchers(run: Any) -> None:
    async def main() -> None:
        ref = Echo.start()
        futures = [supervisors.exit_future(ref) for _ in range(3)]
        supervisors.kill(ref)
        assert [await f for f in futures] == [supervisors.KILLED] * 3
        assert await ref.stop(block=False) is False
        assert await supervisors.exit_future(ref) == supervisors.KILLED

    run(main())
