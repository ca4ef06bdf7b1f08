"""LoopFuture: pykka's Future API, awaitable, thread-safe, loop-safe."""

from __future__ import annotations

import asyncio
import queue
import threading
from typing import Any

import pykka
import pytest

from supervisors import BlockingOnLoopError, LoopFuture


def test_get_set_from_threads() -> None:
    future: LoopFuture[int] = LoopFuture()
    setter = threading.Thread(target=future.set, args=(7,))
    setter.start()
    assert future.get(timeout=5) == 7
    setter.join()
    assert future.get() == 7  # again, no blocking
    with pytest.raises(queue.Full):
        future.set(8)


def test_timeout_and_exceptions() -> None:
    future: LoopFuture[int] = LoopFuture()
    with pytest.raises(pykka.Timeout):
        future.get(timeout=0.01)  # the bounded wait is what is under test
    try:
        raise KeyError("k")
    except KeyError:
        future.set_exception()
    with pytest.raises(KeyError):
        future.get()


def test_get_on_the_loop_raises_unless_done() -> None:
    async def main() -> None:
        pending: LoopFuture[int] = LoopFuture()
        with pytest.raises(BlockingOnLoopError) as raised:
            pending.get()
        assert raised.value.future is pending
        done: LoopFuture[int] = LoopFuture()
        done.set(1)
        assert done.get() == 1

    asyncio.run(main())


def test_await_resumes_when_set_from_another_thread() -> None:
    async def main() -> int:
        future: LoopFuture[int] = LoopFuture()
        threading.Thread(target=future.set, args=(42,)).start()
        return await future

    assert asyncio.run(main()) == 42


def test_awaiting_hooked_futures_replays_the_hook() -> None:
    async def main() -> Any:
        a: LoopFuture[int] = LoopFuture()
        b: LoopFuture[int] = LoopFuture()
        joined = a.join(b).map(sum)
        mapped = a.map(lambda x: x * 10)
        loop = asyncio.get_running_loop()
        loop.call_soon(a.set, 1)
        loop.call_soon(b.set, 2)
        return await joined, await mapped

    assert asyncio.run(main()) == (3, 10)


def test_abandon_fails_pending_and_ignores_late_sets() -> None:
    future: LoopFuture[int] = LoopFuture()
    future.abandon("gone")
    with pytest.raises(pykka.ActorDeadError, match="gone"):
        future.get()
    future.set(1)  # a late reply from an abandoned thread is dropped
    done: LoopFuture[int] = LoopFuture()
    done.set(5)
    done.abandon("gone")
    assert done.get() == 5


def test_done_callbacks_run_once() -> None:
    future: LoopFuture[int] = LoopFuture()
    seen: list[int] = []
    future.add_done_callback(lambda f: seen.append(f.get()))
    future.set(3)
    future.add_done_callback(lambda f: seen.append(f.get() + 1))
    assert seen == [3, 4]
