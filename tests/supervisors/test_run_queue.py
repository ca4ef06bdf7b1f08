"""The loop's run queue: turns in the order actors became ready, one batch per loop iteration."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from supervisors import LoopActor
from supervisors.runqueue import RunQueue, run_queue_for


@pytest.fixture
def loop_factory(any_loop: Callable[[], asyncio.AbstractEventLoop]) -> Any:
    return any_loop


class Recorder(LoopActor):
    """Appends (name, message) to a shared journal; an ask of "sync" just answers."""

    def __init__(self, name: str, journal: list[tuple[str, Any]]) -> None:
        super().__init__()
        self.name = name
        self.journal = journal

    def on_receive(self, message: Any) -> Any:
        if message != "sync":
            self.journal.append((self.name, message))
        return None


class Ping(LoopActor):
    """Tells its peer the count plus one until ``limit``; each hop is a new turn."""

    def __init__(self, counter: list[int], limit: int) -> None:
        super().__init__()
        self.peer: Any = None
        self.counter = counter
        self.limit = limit

    def on_receive(self, message: Any) -> None:
        if not isinstance(message, int):
            self.peer = message
            return
        self.counter[0] = message
        if message < self.limit:
            self.peer.tell(message + 1)


def test_turns_run_in_the_order_the_actors_became_ready(run: Any) -> None:
    async def main() -> None:
        journal: list[tuple[str, Any]] = []
        refs = {name: Recorder.start(name, journal) for name in "abcd"}
        for ref in refs.values():
            await ref.ask("sync", block=False)
        for name, message in [("c", 1), ("a", 2), ("c", 3), ("d", 4), ("b", 5), ("a", 6)]:
            refs[name].tell(message)
        for ref in refs.values():
            await ref.ask("sync", block=False)
        # c became ready first, then a, d, b: each handles all it has in its turn
        assert journal == [("c", 1), ("c", 3), ("a", 2), ("a", 6), ("d", 4), ("b", 5)]
        for ref in refs.values():
            await ref.stop(block=False)

    run(main())


def test_turns_made_due_during_a_run_wait_for_the_next_loop_iteration(run: Any) -> None:
    """Two actors telling each other forever must not starve the loop: every hop is a
    turn made due during a run, so it runs at the next iteration, after other callbacks."""
    async def main() -> None:
        limit = 20_000
        counter = [0]
        a, b = Ping.start(counter, limit), Ping.start(counter, limit)
        a.tell(b)
        b.tell(a)
        a.tell(0)
        seen = []
        for _ in range(10):
            await asyncio.sleep(0)  # one loop iteration each
            seen.append(counter[0])
        assert seen[-1] < limit, "the exchange ran to its end before the loop iterated"
        assert len(set(seen)) > 1, "the exchange made no progress between iterations"
        while counter[0] < limit:
            await asyncio.sleep(0)
        for ref in (a, b):
            await ref.stop(block=False)

    run(main())


class Due:
    """A stand-in mailbox: its turn records itself (or raises ``error``)."""

    def __init__(self, journal: list[str], name: str, error: BaseException | None = None) -> None:
        self.journal, self.name, self.error = journal, name, error

    def _turn(self) -> None:
        self.journal.append(self.name)
        if self.error is not None:
            raise self.error


def test_a_turn_raising_base_exception_leaves_the_rest_queued(
        loop_factory: Callable[[], asyncio.AbstractEventLoop]) -> None:
    loop = loop_factory()
    try:
        queue = run_queue_for(loop)
        assert run_queue_for(loop) is queue and isinstance(queue, RunQueue)
        journal: list[str] = []
        queue.schedule(Due(journal, "first", KeyboardInterrupt()))
        queue.schedule(Due(journal, "second"))
        with pytest.raises(KeyboardInterrupt):
            loop.run_until_complete(asyncio.sleep(0))
        loop.run_until_complete(asyncio.sleep(0))  # (uvloop may have run it already)
        assert journal == ["first", "second"]
        assert not queue.armed and not queue.ready
    finally:
        loop.close()
