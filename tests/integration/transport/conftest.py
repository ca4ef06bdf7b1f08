"""Fixtures for the transport tests: a fresh uvloop loop per test, nothing left behind.

Tests are plain functions that hand a coroutine to ``run``; the coroutine
starts a real listener on 127.0.0.1 port 0 (``transport_testkit.Broker``)
and talks to it over real sockets.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from actorbroker.transport import new_event_loop

# The shared test kit lives next to this file (tests use --import-mode=importlib).
sys.path.insert(0, str(Path(__file__).parent))

T = TypeVar("T")
Runner = Callable[..., Any]


@pytest.fixture
def run() -> Iterator[Runner]:
    """``run(coro, timeout=20)`` runs a coroutine on this test's own uvloop loop."""
    loop = new_event_loop()

    def runner(coro: Coroutine[Any, Any, T], timeout: float = 20.0) -> T:
        return loop.run_until_complete(asyncio.wait_for(coro, timeout))

    try:
        yield runner
    finally:
        for _ in range(3):
            loop.run_until_complete(asyncio.sleep(0))
        tasks = asyncio.all_tasks(loop)
        for task in tasks:
            task.cancel()
        if tasks:
            loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        loop.close()
        assert not tasks, f"tasks left pending: {tasks}"
