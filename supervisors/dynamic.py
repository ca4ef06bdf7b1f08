"""DynamicSupervisor: children started on demand (runtime layer; pykka + stdlib).

Elixir's DynamicSupervisor / Erlang's simple_one_for_one: no children at
start, ``start_child(sup, spec)`` adds one, children are named by their ref,
strategy is one_for_one. A transient child that exits normally and a
temporary child that exits for any reason are forgotten. A child whose spec
has ``wait_start=False`` starts within the request's handler, without
awaiting its ``on_start`` (one message per start, no task). On stop, all
children are asked to stop at once and their shutdown timeouts run
concurrently (ordering between thousands of sessions means nothing, and
stopping 100k children one by one would take minutes).
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

from pykka import ActorRef

from supervisors import children as ops
from supervisors.children import Child
from supervisors.errors import ChildNotFoundError, StartChildError, SupervisorError
from supervisors.lifecycle import ChildState
from supervisors.reasons import ExitReason
from supervisors.requests import ChildCounts, ChildInfo, StartChild, TerminateChild
from supervisors.spec import ChildSpec
from supervisors.strategy import Intensity, Strategy, decide
from supervisors.supervisor import Clock, SupervisorBase, count_records

__all__ = ["DynamicSupervisor"]


class DynamicSupervisor(SupervisorBase):
    """A one_for_one supervisor whose children come and go at run time.

    Requests: start_child(sup, spec) -> ref, terminate_child(sup, ref),
    which_children, count_children.
    """

    def __init__(
        self,
        *,
        intensity: Intensity = Intensity(),
        max_children: int | None = None,
        name: str | None = None,
        clock: Clock | None = None,
    ) -> None:
        super().__init__(intensity=intensity, name=name, clock=clock)
        self._max_children = max_children
        self._children: dict[ActorRef[Any], Child] = {}  # current ref -> record

    def _request(self, message: Any) -> Any:
        match message:
            case StartChild(spec=spec):
                if not spec.wait_start:
                    return self._spawn_new(spec)  # no task, no Ping: the reply is immediate
                return self._start_new(spec)
            case TerminateChild(child=ref):
                return self._terminate_child(ref)
            case _:
                return super()._request(message)

    def _check_room(self) -> None:
        if self._max_children is not None and len(self._children) >= self._max_children:
            raise SupervisorError(
                f"{self.name}: max_children ({self._max_children}) reached"
            )

    async def _start_new(self, spec: ChildSpec) -> ActorRef[Any]:
        self._check_room()
        child = Child(spec)
        ref = await ops.start(self, child)
        self._children[ref] = child
        return ref

    def _spawn_new(self, spec: ChildSpec) -> ActorRef[Any]:
        self._check_room()
        child = Child(spec)
        ref = ops.spawn(self, child)
        self._children[ref] = child
        return ref

    async def _terminate_child(self, ref: Any) -> None:
        child = self._children.get(ref)
        if child is None:
            raise ChildNotFoundError(f"{self.name}: no child {ref!r}")
        del self._children[ref]
        if child.state is ChildState.RUNNING:
            await ops.terminate(child)
        child.move("delete")

    def _child_exited(
        self, ref: ActorRef[Any], reason: ExitReason
    ) -> Coroutine[Any, Any, None] | None:
        child = self._children.pop(ref, None)
        if child is None or child.state is not ChildState.RUNNING:
            return None  # stale
        child.ref = None
        child.move("exited")
        return self._respond(child, reason)

    async def _respond(self, child: Child, reason: ExitReason) -> None:
        while True:
            order = [(0, child.spec.restart)]
            plan, self._history = decide(
                Strategy.ONE_FOR_ONE, order, 0, reason,
                self._history, self._now(), self._intensity,
            )  # fmt: skip
            if plan.escalate:
                child.move("keep")
                await self._escalate(child.spec.id, reason)
            if not plan.start:
                child.move("delete")
                return
            try:
                ref = await ops.start(self, child)
            except StartChildError as error:
                reason = error.reason
                continue
            self._children[ref] = child
            self.restarts += 1
            return

    async def _terminate_children(self) -> None:
        running = list(self._children.values())
        self._children.clear()
        await ops.terminate_many(running)

    def _which(self) -> list[ChildInfo]:
        return [
            ChildInfo(c.spec.id, c.ref, c.spec.kind, c.spec.restart, c.state, c.restarts)
            for c in self._children.values()
        ]

    def _count(self) -> ChildCounts:
        return count_records(list(self._children.values()), self.restarts)
