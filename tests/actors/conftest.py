"""Fixtures for the actor tests: a fresh uvloop loop per test, nothing left behind.

``run(coro)`` runs a coroutine on the test's loop; afterwards the fixture
checks that no pykka actor and no asyncio task is left, and fails the test
otherwise (every test stops its broker).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from pykka import ActorRegistry

import supervisors
from actorbroker.transport import new_event_loop

sys.path.insert(0, str(Path(__file__).parent))

T = TypeVar("T")


@pytest.fixture
def run() -> Iterator[Callable[..., Any]]:
    loop = new_event_loop()

    def runner(coro: Coroutine[Any, Any, T], timeout: float = 20.0) -> T:
        return loop.run_until_complete(asyncio.wait_for(coro, timeout))

    try:
        yield runner
    finally:
        leftovers = ActorRegistry.get_all()

        async def kill_all() -> None:
            for ref in reversed(leftovers):
                supervisors.kill(ref)
                await supervisors.exit_future(ref)

        if leftovers:
            loop.run_until_complete(asyncio.wait_for(kill_all(), 10))
        for _ in range(3):
            loop.run_until_complete(asyncio.sleep(0))
        tasks = asyncio.all_tasks(loop)
        for task in tasks:
            task.cancel()
        if tasks:
            loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        loop.close()
        assert not leftovers, f"actors left running: {leftovers}"
        assert not tasks, f"tasks left pending: {tasks}"
