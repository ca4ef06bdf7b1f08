"""Transport layer: the broker's event loop is uvloop. Imports stdlib, asyncio and uvloop only.

    from actorbroker.transport.loop import new_event_loop, run
    run(main())                       # uvloop, closed afterwards
    loop = new_event_loop()           # e.g. for supervisors.use_loop(loop)

Everything on one node (sockets, loop actors, timers) runs on one such loop
thread (docs/architecture.md).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

import uvloop

__all__ = ["is_uvloop", "new_event_loop", "run"]

T = TypeVar("T")


def new_event_loop() -> asyncio.AbstractEventLoop:
    """A new uvloop event loop (not set as the current one)."""
    return uvloop.new_event_loop()


def run(main: Coroutine[Any, Any, T], *, debug: bool | None = None) -> T:
    """Run ``main`` to completion on a fresh uvloop loop, then close the loop."""
    with asyncio.Runner(loop_factory=new_event_loop, debug=debug) as runner:
        return runner.run(main)


def is_uvloop(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether ``loop`` is a uvloop loop."""
    return isinstance(loop, uvloop.Loop)
