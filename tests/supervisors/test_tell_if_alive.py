"""tell_if_alive and send_after: a tell to an actor that may have stopped, with real actors."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from pykka import ActorDeadError

from supervisors import LoopActor, ThreadActor, send_after, tell_if_alive
from supervisors_testkit import stop


class Inbox(LoopActor):
    """Keeps what it is told, with the loop time it was handled at; ``ask("received")``."""

    def __init__(self) -> None:
        super().__init__()
        self.received: list[tuple[Any, float]] = []

    def on_receive(self, message: Any) -> Any:
        if message == "received":
            return list(self.received)
        self.received.append((message, self.actor_loop.time()))
        return None


class Threaded(ThreadActor):
    def on_receive(self, message: Any) -> Any:
        return message


class Broken:
    """A ref whose tell fails with something other than a dead actor (a bug)."""

    def tell(self, message: Any) -> None:
        raise RuntimeError("not an ActorDeadError")


def _errors(loop: asyncio.AbstractEventLoop) -> list[dict[str, Any]]:
    """What the loop reports as an exception in a callback, from now on."""
    seen: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: seen.append(context))
    return seen


async def _after(delay: float) -> None:
    """Return once every loop timer due within ``delay`` seconds has run (timers run in
    deadline order, so a later one firing means the earlier ones did)."""
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    loop.call_later(delay, done.set_result, None)
    await done


def test_none_is_not_told() -> None:
    assert tell_if_alive(None, "hello") is False


def test_a_live_actor_is_told(run: Any) -> None:
    async def main() -> None:
        ref = Inbox.start()
        assert tell_if_alive(ref, "hello") is True
        assert [m for m, _ in await ref.ask("received", block=False)] == ["hello"]
        await stop(ref)

    run(main())


def test_a_dead_loop_actor_drops_the_message(run: Any) -> None:
    async def main() -> None:
        ref = Inbox.start()
        await stop(ref)
        with pytest.raises(ActorDeadError):  # what every caller used to catch
            ref.tell("hello")
        assert tell_if_alive(ref, "hello") is False

    run(main())


def test_a_dead_thread_actor_drops_the_message() -> None:
    ref = Threaded.start()
    ref.stop()
    assert tell_if_alive(ref, "hello") is False


def test_other_errors_are_not_swallowed() -> None:
    with pytest.raises(RuntimeError):
        tell_if_alive(Broken(), "hello")


def test_send_after_tells_once_the_delay_is_over(run: Any) -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        ref = Inbox.start()
        armed = loop.time()
        handle = send_after(loop, ref, 0.05, "tick")
        assert handle.when() >= armed + 0.05
        await _after(0.06)
        got = await ref.ask("received", block=False)
        assert [m for m, _ in got] == ["tick"]
        # Not before its time (asyncio runs a timer up to one clock tick early).
        assert got[0][1] >= armed + 0.05 - time.get_clock_info("monotonic").resolution
        await stop(ref)

    run(main())


def test_send_after_to_a_stopped_actor_drops_it(run: Any) -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        errors = _errors(loop)
        ref = Inbox.start()
        send_after(loop, ref, 0.02, "tick")
        await stop(ref)  # stopped before the timer fires
        with pytest.raises(ActorDeadError):
            ref.tell("now")
        await _after(0.05)
        # A bare loop.call_later(delay, ref.tell, ...) reports ActorDeadError here.
        assert errors == []

    run(main())


def test_a_cancelled_send_after_never_arrives(run: Any) -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        ref = Inbox.start()
        send_after(loop, ref, 0.01, "cancelled").cancel()
        send_after(loop, ref, 0.02, "kept")
        await _after(0.04)
        assert [m for m, _ in await ref.ask("received", block=False)] == ["kept"]
        await stop(ref)

    run(main())
