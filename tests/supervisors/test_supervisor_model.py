"""A supervisor against a small model: random crashes, stops, starts, time.

The model is a plain re-statement of Erlang's rules (which children restart
for each strategy and restart type, intensity over a sliding window); the
invariants compare it with what the real supervisor reports and with what
the children journal: who is alive, and how often each one was started.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)
from pykka import ActorDeadError, ActorRegistry

import supervisors
from supervisors import (
    ChildState,
    Intensity,
    Restart,
    RestartIntensityError,
    Strategy,
    Supervisor,
    restart_child,
    terminate_child,
    which_children,
)
from supervisors_testkit import BOOM, Journal, worker

IDS = ["c0", "c1", "c2", "c3"]
PERIOD = 10.0


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


class SupervisorModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.clock = Clock()
        self.journal = Journal()
        self.sup: Any = None

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(asyncio.wait_for(coro, 10))

    @initialize(
        strategy=st.sampled_from(Strategy),
        restarts=st.lists(st.sampled_from(Restart), min_size=len(IDS), max_size=len(IDS)),
        max_restarts=st.integers(0, 3),
    )
    def start(self, strategy: Strategy, restarts: list[Restart], max_restarts: int) -> None:
        self.strategy = strategy
        self.restart = dict(zip(IDS, restarts, strict=True))
        self.max_restarts = max_restarts
        self.specs = list(IDS)  # model: child specs in start order
        self.running = set(IDS)  # model: running children
        self.starts = dict.fromkeys(IDS, 1)  # model: starts per child
        self.history: list[float] = []
        self.alive = True

        async def go() -> None:
            specs = [worker(i, self.journal, self.restart[i]) for i in IDS]
            self.sup = Supervisor.start(
                specs, strategy=strategy, clock=self.clock,
                intensity=Intensity(max_restarts, PERIOD),
            )  # fmt: skip
            await which_children(self.sup)

        self.run(go())

    # -- the model ---------------------------------------------------------------

    def model_exit(self, child: str, abnormal: bool) -> None:
        self.running.discard(child)
        kind = self.restart[child]
        if kind is Restart.TEMPORARY or (kind is Restart.TRANSIENT and not abnormal):
            if kind is Restart.TEMPORARY:
                self.specs.remove(child)
            return
        now = self.clock.now
        self.history = [t for t in self.history if t > now - PERIOD] + [now]
        if len(self.history) > self.max_restarts:
            self.alive = False
            self.running.clear()
            return
        if self.strategy is Strategy.ONE_FOR_ONE:
            group = [child]
        elif self.strategy is Strategy.ONE_FOR_ALL:
            group = list(self.specs)
        else:
            group = self.specs[self.specs.index(child) :]
        for other in group:
            self.running.discard(other)
            if other != child and self.restart[other] is Restart.TEMPORARY:
                self.specs.remove(other)
                continue
            self.running.add(other)
            self.starts[other] += 1

    # -- driving the real one ----------------------------------------------------

    async def refs(self) -> dict[str, Any]:
        return {i.id: i.ref for i in await which_children(self.sup)}

    async def exit_child(self, child: str, crash: bool) -> None:
        ref = (await self.refs())[child]
        done = supervisors.exit_future(ref)
        if crash:
            ref.tell(BOOM)
        else:
            ref.stop(block=False)
        await done
        try:
            await which_children(self.sup)  # queued behind the exit report
        except ActorDeadError:
            pass  # the supervisor gave up

    @precondition(lambda self: self.alive and self.running)
    @rule(data=st.data())
    def crash(self, data: st.DataObject) -> None:
        child = data.draw(st.sampled_from(sorted(self.running)))
        self.run(self.exit_child(child, crash=True))
        self.model_exit(child, abnormal=True)

    @precondition(lambda self: self.alive and self.running)
    @rule(data=st.data())
    def stop_normally(self, data: st.DataObject) -> None:
        child = data.draw(st.sampled_from(sorted(self.running)))
        self.run(self.exit_child(child, crash=False))
        self.model_exit(child, abnormal=False)

    @precondition(lambda self: self.alive and self.specs)
    @rule(data=st.data())
    def terminate(self, data: st.DataObject) -> None:
        child = data.draw(st.sampled_from(self.specs))
        self.run(terminate_child(self.sup, child))  # type: ignore[arg-type]
        self.running.discard(child)
        if self.restart[child] is Restart.TEMPORARY:
            self.specs.remove(child)

    @precondition(lambda self: self.alive and set(self.specs) - self.running)
    @rule(data=st.data())
    def restart_stopped(self, data: st.DataObject) -> None:
        child = data.draw(st.sampled_from(sorted(set(self.specs) - self.running)))
        self.run(restart_child(self.sup, child))  # type: ignore[arg-type]
        self.running.add(child)
        self.starts[child] += 1

    @rule(dt=st.sampled_from([0.5, 4.0, 11.0]))
    def tick(self, dt: float) -> None:
        self.clock.now += dt

    # -- invariants --------------------------------------------------------------

    @invariant()
    def matches_the_model(self) -> None:
        if self.sup is None:
            return
        assert {c: self.journal.starts(c) for c in IDS} == self.starts
        if not self.alive:
            reason = self.run(supervisors.exit_future(self.sup))
            assert isinstance(reason, supervisors.Crash)
            assert isinstance(reason.exception, RestartIntensityError)
            assert ActorRegistry.get_all() == []
            return
        infos = self.run(which_children(self.sup))
        assert [i.id for i in infos] == self.specs
        assert {i.id for i in infos if i.state is ChildState.RUNNING} == self.running
        for info in infos:
            assert (info.ref is not None and info.ref.is_alive()) == (info.id in self.running)

    def teardown(self) -> None:
        try:
            if self.sup is not None and self.sup.is_alive():
                self.run(self.sup.stop(block=False))
            assert ActorRegistry.get_all() == []
            self.loop.run_until_complete(asyncio.sleep(0))
            assert asyncio.all_tasks(self.loop) == set()
        finally:
            self.loop.close()


SupervisorModel.TestCase.settings = settings(
    max_examples=60,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_supervisor_against_model = SupervisorModel.TestCase
