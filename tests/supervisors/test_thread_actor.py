"""ThreadActor: blocking actors next to loop actors."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from pykka import ActorDeadError

import supervisors
from supervisors import KILLED, NORMAL, SHUTDOWN, Crash, ThreadActor
from supervisors_testkit import Crashed, Journal, ThreadWorker, crash


class Blocking(ThreadActor):
    """Sleeps in its handler: blocking is fine on a thread."""

    def on_receive(self, message: Any) -> Any:
        time.sleep(0.001)
        return ("done", message)


def test_loop_code_awaits_a_thread_actor_without_blocking_the_loop(run: Any) -> None:
    async def main() -> None:
        ref = Blocking.start()
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        task = asyncio.get_running_loop().create_task(ticker())
        assert await ref.ask(1, block=False) == ("done", 1)
        task.cancel()
        assert ticks > 0  # the loop ran while the thread worked
        assert await ref.stop(block=False) is True
        assert await supervisors.exit_future(ref) == NORMAL

    run(main())


def test_thread_actor_exit_reasons(run: Any) -> None:
    async def main() -> None:
        journal = Journal()
        crashed = ThreadWorker.start("c", journal)
        reason = await crash(crashed)
        assert isinstance(reason, Crash) and isinstance(reason.exception, Crashed)
        shut = ThreadWorker.start("s", journal)
        supervisors.shutdown(shut)
        assert await supervisors.exit_future(shut) == SHUTDOWN
        failing = ThreadWorker.start("f", journal, fail_start=True)
        reason = await supervisors.exit_future(failing)
        assert isinstance(reason, Crash)
        with pytest.raises(ActorDeadError):
            await failing.ask("x", block=False)

    run(main())


def test_killing_a_stuck_thread_actor_abandons_its_thread(run: Any) -> None:
    async def main() -> None:
        release = threading.Event()
        ref = ThreadWorker.start("stuck", Journal(), ignore_stop=True, release=release)
        assert await ref.ask("ready", block=False) == "ready"
        ref.tell("queued before stop")  # handled, then the stop blocks in on_stop
        supervisors.shutdown(ref)
        late = ref.ask("behind the stop", block=False)  # queued behind on_stop
        thread = next(t for t in threading.enumerate() if t.name.startswith("ThreadWorker"))
        supervisors.kill(ref)
        assert await supervisors.exit_future(ref) == KILLED
        assert not ref.is_alive()
        with pytest.raises(ActorDeadError):
            await late
        assert thread.is_alive()  # abandoned, still blocked in on_stop
        release.set()  # let it finish so the test leaves no thread behind

    run(main())


def test_thread_actor_asks_a_loop_actor_blocking(run: Any) -> None:
    class Asker(ThreadActor):
        def __init__(self, target: Any) -> None:
            super().__init__()
            self.target = target

        def on_receive(self, message: Any) -> Any:
            return self.target.ask(message, timeout=5)  # blocking is fine here

    class Echo(supervisors.LoopActor):
        def on_receive(self, message: Any) -> Any:
            return message * 2

    async def main() -> None:
        echo = Echo.start()
        asker = Asker.start(echo)
        assert await asker.ask(21, block=False) == 42
        await asker.stop(block=False)
        await echo.stop(block=False)

    run(main())


def test_causal_order_from_a_thread_to_the_loop(run: Any) -> None:
    """A thread tells X, then resolves a future; a coroutine woken by that
    future tells Y to the same loop actor: X must come first."""

    class Recorder(supervisors.LoopActor):
        def __init__(self) -> None:
            super().__init__()
            self.seen: list[str] = []

        def on_receive(self, message: Any) -> Any:
            if message == "seen":
                return self.seen
            self.seen.append(message)
            return None

    class Sender(ThreadActor):
        def on_receive(self, message: Any) -> Any:
            target, signal, sent = message
            target.tell("from thread")
            signal.set(None)
            sent.set()

    async def main() -> None:
        recorder, sender = Recorder.start(), Sender.start()
        for _ in range(200):
            signal: supervisors.LoopFuture[None] = supervisors.LoopFuture()
            sent = threading.Event()
            sender.tell((recorder, signal, sent))
            # Hold the loop until the thread is done, so that the future is
            # already resolved (no loop pass in between) when we await it.
            assert sent.wait(5)
            await signal
            recorder.tell("from loop")
        seen = await recorder.ask("seen", block=False)
        assert seen == ["from thread", "from loop"] * 200
        await sender.stop(block=False)
        await recorder.stop(block=False)

    run(main())
