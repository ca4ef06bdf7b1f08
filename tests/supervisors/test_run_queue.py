"""The loop's run queue: turns in the order actors became ready, one batch per loop iteration;
heavy turns and deferred jobs in the bulk lane, behind the others, a share per iteration."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest

from supervisors import LoopActor
from supervisors.runqueue import HEAVY_TURN, RunQueue, run_queue_for


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
        self._heavy = 0

    def _turn(self, budget: int = 256) -> None:
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


class Busy(LoopActor):
    """Each message costs ``cost`` seconds of CPU (a busy wait), then is journaled."""

    def __init__(self, name: str, journal: list[tuple[str, Any]], cost: float) -> None:
        super().__init__()
        self.name, self.journal, self.cost = name, journal, cost

    def on_receive(self, message: Any) -> Any:
        if message == "sync":
            return None
        end = time.perf_counter() + (self.cost if message != "cheap" else 0.0)
        while time.perf_counter() < end:
            pass
        self.journal.append((self.name, message))
        return None


def test_a_heavy_actor_waits_behind_the_others_one_message_at_a_time(run: Any) -> None:
    """An actor whose turn took longer than HEAVY_TURN is heavy: its later turns wait in
    the bulk lane, one message each, behind the actors that became ready after it; a
    short turn there makes it light again."""
    async def main() -> None:
        journal: list[tuple[str, Any]] = []
        slow = Busy.start("slow", journal, HEAVY_TURN * 2)
        fast = Busy.start("fast", journal, 0.0)
        await slow.ask("sync", block=False)
        await fast.ask("sync", block=False)
        slow.tell("warm-up")  # one long turn: heavy from now on
        await slow.ask("sync", block=False)
        assert slow.actor_inbox._heavy
        iterations = [0]

        def tick() -> None:  # counts loop iterations while the bulk lane works
            iterations[0] += 1
            if len(journal) < 10:
                asyncio.get_running_loop().call_soon(tick)

        asyncio.get_running_loop().call_soon(tick)
        for n in range(4):
            slow.tell(n)
        for n in range(4):
            fast.tell(n)
        await slow.ask("sync", block=False)
        await fast.ask("sync", block=False)
        assert journal[1:5] == [("fast", n) for n in range(4)]  # told later, served first
        assert journal[5:] == [("slow", n) for n in range(4)]
        assert iterations[0] >= 4  # one slow message per iteration: the loop polled between
        slow.tell("cheap")
        await slow.ask("sync", block=False)
        assert not slow.actor_inbox._heavy  # a short turn in the lane: light again
        for ref in (slow, fast):
            await ref.stop(block=False)

    run(main())


def test_deferred_jobs_run_in_order_after_the_turns_due(
        loop_factory: Callable[[], asyncio.AbstractEventLoop]) -> None:
    loop = loop_factory()
    try:
        queue = run_queue_for(loop)
        journal: list[str] = []
        queue.defer(lambda: journal.append("job 1"))
        queue.schedule(Due(journal, "turn"))
        queue.defer(lambda: journal.append("job 2"))
        loop.run_until_complete(asyncio.sleep(0))
        loop.run_until_complete(asyncio.sleep(0))
        assert journal == ["turn", "job 1", "job 2"]
        assert not queue.armed and not queue.bulk
    finally:
        loop.close()


def test_the_bulk_lane_is_not_starved_by_actors_that_never_stop(run: Any) -> None:
    """Two light actors telling each other forever keep the ready queue busy at every
    iteration; deferred jobs still get their share."""
    async def main() -> None:
        counter = [0]
        a, b = Ping.start(counter, 10**9), Ping.start(counter, 10**9)
        a.tell(b)
        b.tell(a)
        a.tell(0)
        done: list[int] = []
        queue = run_queue_for(asyncio.get_running_loop())
        for n in range(50):
            queue.defer(lambda n=n: done.append(n))
        deadline = time.monotonic() + 5
        while len(done) < 50:
            assert time.monotonic() < deadline, (len(done), counter)
            await asyncio.sleep(0)
        assert done == list(range(50)) and counter[0] > 0
        for ref in (a, b):
            await ref.stop(block=False)

    run(main())
