"""Fixtures for the supervisors tests: a fresh loop per test, nothing left behind.

Every test that uses ``run`` gets a new event loop (the default asyncio loop,
or uvloop where a module asks for it); afterwards the fixture checks that
pykka's registry is empty, that no asyncio task is pending and that no
ThreadActor thread is alive, and fails the test otherwise.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import uvloop
from pykka import ActorRegistry

import supervisors

# Shared test actors live next to this file (tests use --import-mode=importlib).
sys.path.insert(0, str(Path(__file__).parent))

T = TypeVar("T")
Runner = Callable[..., Any]


async def _stop_leftovers() -> None:
    for ref in reversed(ActorRegistry.get_all()):
        supervisors.kill(ref)
        await supervisors.exit_future(ref)


@pytest.fixture
def loop_factory() -> Callable[[], asyncio.AbstractEventLoop]:
    """The loop the ``run`` fixture uses; modules may override (see uvloop tests)."""
    return asyncio.new_event_loop


@pytest.fixture
def run(loop_factory: Callable[[], asyncio.AbstractEventLoop]) -> Iterator[Runner]:
    """``run(coro, timeout=10)`` runs a coroutine on this test's own loop."""
    threads_before = set(threading.enumerate())
    loop = loop_factory()
    supervisors.use_loop(loop)

    def runner(coro: Coroutine[Any, Any, T], timeout: float = 10.0) -> T:
        return loop.run_until_complete(asyncio.wait_for(coro, timeout))

    try:
        yield runner
    finally:
        leftovers = ActorRegistry.get_all()
        if leftovers:
            loop.run_until_complete(asyncio.wait_for(_stop_leftovers(), 10))
        # Let tasks cancelled by a kill unwind (one loop pass each).
        for _ in range(3):
            loop.run_until_complete(asyncio.sleep(0))
        tasks = asyncio.all_tasks(loop)
        for task in tasks:
            task.cancel()
        if tasks:
            loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        supervisors.use_loop(None)
        loop.close()
        new_threads = [t for t in set(threading.enumerate()) - threads_before if t.is_alive()]
        for thread in new_threads:
            thread.join(timeout=5)  # an actor thread ends right after its exit fires
        alive = [t.name for t in new_threads if t.is_alive()]
        assert not leftovers, f"actors left running: {leftovers}"
        assert not tasks, f"tasks left pending: {tasks}"
        assert not alive, f"threads left running: {alive}"


@pytest.fixture(params=["asyncio", "uvloop"])
def any_loop(request: pytest.FixtureRequest) -> Callable[[], asyncio.AbstractEventLoop]:
    """Use as ``loop_factory`` override to run a module on both loops."""
    return asyncio.new_event_loop if request.param == "asyncio" else uvloop.new_event_loop
