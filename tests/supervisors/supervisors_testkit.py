"""Test actors and helpers shared by tests/supervisors (not a test module)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from pykka import ActorRef

import supervisors
from supervisors import ChildSpec, LoopActor, Restart, ThreadActor


class Crashed(Exception):
    """The exception test actors raise on Boom."""


@dataclass(frozen=True, slots=True)
class Boom:
    """Tell: the handler raises Crashed (the actor crashes)."""


@dataclass(frozen=True, slots=True)
class Hang:
    """Tell: the (async) handler never returns."""


@dataclass(frozen=True, slots=True)
class Count:
    """Ask: how many messages this incarnation handled."""


BOOM = Boom()


@dataclass
class Journal:
    """What happened to the test actors, in order (shared across restarts)."""

    events: list[tuple[str, Hashable]] = field(default_factory=list)

    def add(self, what: str, name: Hashable) -> None:
        self.events.append((what, name))

    def starts(self, name: Hashable) -> int:
        return self.events.count(("start", name))

    def of(self, what: str) -> list[Hashable]:
        return [name for kind, name in self.events if kind == what]


class Worker(LoopActor):
    """A loop actor that journals its life and misbehaves on request."""

    def __init__(
        self,
        name: Hashable,
        journal: Journal,
        *,
        fail_start: bool = False,
        fail_restart: bool = False,
        async_start: bool = False,
        ignore_stop: bool = False,
    ) -> None:
        super().__init__()
        self.name = name
        self.journal = journal
        # fail_restart: every start but the first fails
        self.fail_start = fail_start or (fail_restart and journal.starts(name) > 0)
        self.async_start = async_start
        self.ignore_stop = ignore_stop
        self.handled = 0

    def on_start(self) -> Any:
        if self.async_start:
            return self._start_slowly()
        self._started()
        return None

    async def _start_slowly(self) -> None:
        for _ in range(3):
            await asyncio.sleep(0)  # let everything else on the loop run
        self._started()

    def _started(self) -> None:
        self.journal.add("start", self.name)
        if self.fail_start:
            raise Crashed(f"{self.name} cannot start")

    async def on_stop(self) -> None:  # type: ignore[override]
        self.journal.add("stop", self.name)
        if self.ignore_stop:
            await asyncio.Event().wait()

    async def hang(self) -> None:
        await asyncio.Event().wait()

    def on_receive(self, message: Any) -> Any:
        self.handled += 1
        match message:
            case Boom():
                raise Crashed(f"{self.name} crashed")
            case Hang():
                return self.hang()
            case Count():
                return self.handled
            case _:
                return message


class ThreadWorker(ThreadActor):
    """A thread actor that journals its life; ``ignore_stop`` blocks on_stop."""

    def __init__(
        self,
        name: Hashable,
        journal: Journal,
        *,
        fail_start: bool = False,
        ignore_stop: bool = False,
        release: threading.Event | None = None,
    ) -> None:
        super().__init__()
        self.name = name
        self.journal = journal
        self.fail_start = fail_start
        self.ignore_stop = ignore_stop
        self.release = release or threading.Event()

    def on_start(self) -> None:
        self.journal.add("start", self.name)
        if self.fail_start:
            raise Crashed(f"{self.name} cannot start")

    def on_stop(self) -> None:
        self.journal.add("stop", self.name)
        if self.ignore_stop:
            self.release.wait(timeout=30)

    def on_receive(self, message: Any) -> Any:
        match message:
            case Boom():
                raise Crashed(f"{self.name} crashed")
            case _:
                return message


def worker(
    child_id: Hashable,
    journal: Journal,
    restart: Restart = Restart.PERMANENT,
    *,
    shutdown: float | None = None,
    thread: bool = False,
    **options: Any,
) -> ChildSpec:
    """A ChildSpec for a Worker (or ThreadWorker) journaling to ``journal``."""
    cls: Any = ThreadWorker if thread else Worker

    def start() -> ActorRef[Any]:
        return cls.start(child_id, journal, **options)  # type: ignore[no-any-return]

    return ChildSpec(id=child_id, start=start, restart=restart, shutdown=shutdown)


async def crash(ref: ActorRef[Any]) -> supervisors.ExitReason:
    """Make ``ref`` crash and wait until it is dead."""
    done = supervisors.exit_future(ref)
    ref.tell(BOOM)
    return await done


async def children_of(sup: ActorRef[Any]) -> dict[Hashable, ActorRef[Any] | None]:
    """id -> ref of a supervisor's children (waits for pending exits first)."""
    return {info.id: info.ref for info in await supervisors.which_children(sup)}


async def stop(ref: ActorRef[Any]) -> supervisors.ExitReason:
    """Stop an actor the orderly way and return its exit reason."""
    done = supervisors.exit_future(ref)
    await ref.stop(block=False)
    return await done


def monotonic_ms() -> float:
    return time.monotonic() * 1000
