"""Monitors, links, exit futures and kill."""

from __future__ import annotations

import gc
from typing import Any

import pykka
import pytest

import supervisors
from supervisors import (
    KILLED,
    NORMAL,
    SHUTDOWN,
    Crash,
    Down,
    Exited,
    LoopActor,
)
from supervisors_testkit import Crashed, Journal, Worker, crash, stop


class Watcher(LoopActor):
    """Collects Down/Exited messages; ``ask("received")`` returns them."""

    trap_exits = True

    def __init__(self) -> None:
        super().__init__()
        self.inbox: list[Any] = []

    def on_receive(self, message: Any) -> Any:
        if message == "received":
            return list(self.inbox)
        self.inbox.append(message)
        return None


class Plain(LoopActor):
    """Does not trap exits."""

    def on_receive(self, message: Any) -> Any:
        return message


def test_monitor_delivers_down_once_with_the_crash(run: Any) -> None:
    async def main() -> None:
        watcher = Watcher.start()
        target = Worker.start("t", Journal())
        mon = supervisors.monitor(target, watcher)
        second = supervisors.monitor(target, watcher)
        supervisors.demonitor(second)
        reason = await crash(target)
        inbox = await watcher.ask("received", block=False)
        assert len(inbox) == 1
        down = inbox[0]
        assert isinstance(down, Down) and down.monitor == mon and down.ref is target
        assert down.reason == reason and isinstance(reason, Crash)
        assert isinstance(reason.exception, Crashed)
        await stop(watcher)

    run(main())


def test_monitoring_a_dead_actor_sends_its_recorded_reason(run: Any) -> None:
    async def main() -> None:
        watcher = Watcher.start()
        target = Plain.start()
        await stop(target)
        supervisors.monitor(target, watcher)
        (down,) = await watcher.ask("received", block=False)
        assert isinstance(down, Down) and down.ref is target and down.reason == NORMAL
        await stop(watcher)

    run(main())


def test_a_plain_pykka_actor_cannot_be_monitored() -> None:
    class Old(pykka.ThreadingActor):
        pass

    ref = Old.start()
    try:
        with pytest.raises(TypeError, match="LoopActor"):
            supervisors.exit_future(ref)
    finally:
        ref.stop()


def test_trapping_actor_receives_exited_for_each_reason(run: Any) -> None:
    async def main() -> None:
        watcher = Watcher.start()
        normal, shut, killed, crashed = (Plain.start() for _ in range(4))
        for ref in (normal, shut, killed, crashed):
            supervisors.link(watcher, ref)
        await stop(normal)
        supervisors.shutdown(shut)
        await supervisors.exit_future(shut)
        supervisors.kill(killed)
        await supervisors.exit_future(killed)
        supervisors.kill(crashed, Crash(Crashed("x")))
        await supervisors.exit_future(crashed)
        inbox = await watcher.ask("received", block=False)
        assert [m.reason for m in inbox][:3] == [NORMAL, SHUTDOWN, KILLED]
        assert all(isinstance(m, Exited) for m in inbox)
        assert [m.ref for m in inbox] == [normal, shut, killed, crashed]
        await stop(watcher)

    run(main())


def test_abnormal_exit_kills_a_linked_actor_that_does_not_trap(run: Any) -> None:
    async def main() -> None:
        a, b, c = Worker.start("a", Journal()), Plain.start(), Plain.start()
        supervisors.link(a, b)
        supervisors.link(b, c)
        reason = await crash(a)
        assert await supervisors.exit_future(b) == reason  # same reason, Erlang-style
        assert await supervisors.exit_future(c) == reason

    run(main())


def test_normal_exit_does_not_kill_linked_actors(run: Any) -> None:
    async def main() -> None:
        a, b = Plain.start(), Plain.start()
        supervisors.link(a, b)
        await stop(a)
        assert await b.ask("still here", block=False) == "still here"
        supervisors.unlink(a, b)  # no-op on a dead link
        await stop(b)

    run(main())


def test_unlink_stops_propagation(run: Any) -> None:
    async def main() -> None:
        a, b = Worker.start("a", Journal()), Plain.start()
        supervisors.link(a, b)
        supervisors.unlink(a, b)
        await crash(a)
        assert await b.ask("alive", block=False) == "alive"
        await stop(b)

    run(main())


def test_linking_to_a_dead_actor_signals_at_once(run: Any) -> None:
    async def main() -> None:
        watcher, gone = Watcher.start(), Plain.start()
        supervisors.kill(gone)
        await supervisors.exit_future(gone)
        supervisors.link(watcher, gone)
        assert await watcher.ask("received", block=False) == [Exited(gone, KILLED)]
        await stop(watcher)

    run(main())


def test_exit_reason_outlives_the_actor_object(run: Any) -> None:
    async def main() -> None:
        ref = Plain.start()
        await stop(ref)
        gc.collect()
        assert ref._actor_weakref() is None  # the actor object is gone
        assert await supervisors.exit_future(ref) == NORMAL  # kept on the inbox

    run(main())
