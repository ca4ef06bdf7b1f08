"""Application: run a root until it exits; a failed root stops the app loudly."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
import uvloop
from pykka import ActorRegistry

from supervisors import SHUTDOWN, Application, LoopActor, Supervisor, main
from supervisors_testkit import Journal, worker


class StopsAtOnce(LoopActor):
    def on_start(self) -> None:
        self.stop()


class FailsAtOnce(LoopActor):
    def on_start(self) -> None:
        raise RuntimeError("root cannot start")


def test_stop_shuts_the_root_down(run: Any) -> None:
    async def body() -> None:
        journal = Journal()
        app = Application(lambda: Supervisor.start([worker("a", journal)]), name="app")
        app.stop()  # before the root exists: applied as soon as it does
        assert await app.run() == SHUTDOWN
        assert journal.of("stop") == ["a"]
        assert app.root is not None and not app.root.is_alive()

    run(body())


@pytest.mark.parametrize("factory", [asyncio.new_event_loop, uvloop.new_event_loop])
def test_main_returns_zero_after_an_orderly_stop(factory: Any) -> None:
    assert main(StopsAtOnce.start, loop_factory=factory) == 0
    assert ActorRegistry.get_all() == []


def test_main_returns_one_and_logs_when_the_root_fails(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.CRITICAL, logger="supervisors"):
        assert main(FailsAtOnce.start, name="demo") == 1
    (line,) = [r.getMessage() for r in caplog.records if r.levelno == logging.CRITICAL]
    assert line.startswith("demo: root FailsAtOnce") and "root cannot start" in line
    assert "stopping the application" in line
    assert ActorRegistry.get_all() == []
