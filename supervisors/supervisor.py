"""Supervisor: an Erlang-style supervisor as a loop actor (runtime layer).

Imports pykka, the stdlib and the rest of ``supervisors``. The supervisor
links to every child and traps exits, so each child exit reaches it as an
``Exited(ref, reason)`` message, handled in inbox order like any other
request; the pure :func:`~supervisors.strategy.decide` says what to do, and
the supervisor does it (awaiting each stop and start, so its own inbox waits
meanwhile, as a gen_server would).

Children start in spec order, each once the previous one's ``on_start`` has
finished; they stop in reverse order, each within its shutdown timeout, then
killed. When restarts exceed the intensity, the supervisor stops all its
children and fails with RestartIntensityError: its own supervisor sees a
crash, and so on up to the root (see :mod:`supervisors.application`). If the
supervisor's parent dies, it stops its children and exits too.
"""

from __future__ import annotations

import abc
import logging
from collections.abc import Callable, Coroutine, Hashable, Sequence
from typing import TYPE_CHECKING, Any

from pykka import ActorRef

from supervisors import children as ops
from supervisors.children import Child
from supervisors.errors import (
    ChildNotFoundError,
    ChildRunningError,
    DuplicateChildError,
    RestartIntensityError,
    StartChildError,
)
from supervisors.lifecycle import ChildState
from supervisors.links import Exited
from supervisors.loop_actor import LoopActor
from supervisors.reasons import ExitReason
from supervisors.requests import (
    ChildCounts,
    ChildInfo,
    CountChildren,
    DeleteChild,
    RestartChild,
    StartChild,
    TerminateChild,
    WhichChildren,
)
from supervisors.spec import ChildKind, ChildSpec, Restart
from supervisors.strategy import Intensity, Strategy, decide

if TYPE_CHECKING:
    from types import TracebackType

__all__ = ["Supervisor", "SupervisorBase", "supervisor_spec"]

logger = logging.getLogger("supervisors")

Clock = Callable[[], float]


class SupervisorBase(LoopActor):
    """What static and dynamic supervisors share: exits, intensity, shutdown."""

    trap_exits = True

    def __init__(
        self, *, intensity: Intensity, name: str | None, clock: Clock | None
    ) -> None:
        super().__init__()
        self.name = name or f"{type(self).__name__}-{self.actor_urn[-8:]}"
        self._intensity = intensity
        self._clock = clock
        self._history: tuple[float, ...] = ()
        #: Children started again after an exit, ever (count_children reports it).
        self.restarts = 0

    def __str__(self) -> str:
        return f"{type(self).__name__} {self.name!r} ({self.actor_urn})"

    def _now(self) -> float:
        return self._clock() if self._clock is not None else self.actor_loop.time()

    def on_receive(self, message: Any) -> Any:
        match message:
            case Exited(ref=ref, reason=reason):
                if ref is self._parent:
                    return self._parent_exited(reason)
                return self._child_exited(ref, reason)
            case WhichChildren():
                return self._which()
            case CountChildren():
                return self._count()
            case _:
                return self._request(message)

    def _parent_exited(self, reason: ExitReason) -> Any:
        logger.info("%s: parent exited (%s); stopping", self, reason)
        self._stop_reason = reason
        return self._stop()

    async def _escalate(self, child_id: Hashable, reason: ExitReason) -> None:
        message = (
            f"supervisor {self.name!r}: more than {self._intensity.max_restarts}"
            f" restart(s) in {self._intensity.period:g} s (last: child {child_id!r},"
            f" {reason}); stopping all children and failing"
        )
        logger.error(message)
        await self._terminate_children()
        raise RestartIntensityError(message)

    # pykka types the hooks "-> None"; LoopActor also accepts coroutines.
    async def on_stop(self) -> None:  # type: ignore[override]
        await self._terminate_children()

    async def on_failure(  # type: ignore[override]
        self,
        exception_type: type[BaseException] | None,
        exception_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self._terminate_children()

    # -- per kind -----------------------------------------------------------------

    @abc.abstractmethod
    def _child_exited(self, ref: ActorRef[Any], reason: ExitReason) -> Any:
        """A linked child exited with ``reason``: restart it (or not) by this kind's rules."""

    def _request(self, message: Any) -> Any:
        return super().on_receive(message)

    @abc.abstractmethod
    def _which(self) -> list[ChildInfo]:
        """The children, as ``which_children`` reports them."""

    @abc.abstractmethod
    def _count(self) -> ChildCounts:
        """The children counted, as ``count_children`` reports them."""

    @abc.abstractmethod
    async def _terminate_children(self) -> None:
        """Stop every child, in this kind's order, each within its shutdown timeout."""


def _info(child: Child) -> ChildInfo:
    spec = child.spec
    return ChildInfo(spec.id, child.ref, spec.kind, spec.restart, child.state, child.restarts)


def count_records(records: Sequence[Child], restarts: int = 0) -> ChildCounts:
    """Erlang's count_children over child records, with the supervisor's ``restarts``."""
    supervisors = sum(1 for c in records if c.spec.kind is ChildKind.SUPERVISOR)
    return ChildCounts(
        specs=len(records),
        active=sum(1 for c in records if c.state is ChildState.RUNNING),
        supervisors=supervisors,
        workers=len(records) - supervisors,
        restarts=restarts,
    )


class Supervisor(SupervisorBase):
    """A supervisor with a list of child specs and a restart strategy.

    ``Supervisor.start(children, strategy=..., intensity=...)``; the ref
    accepts the requests of :mod:`supervisors.requests` (start_child,
    terminate_child, restart_child, delete_child, which_children,
    count_children), children named by id.
    """

    def __init__(
        self,
        children: Sequence[ChildSpec] = (),
        *,
        strategy: Strategy = Strategy.ONE_FOR_ONE,
        intensity: Intensity = Intensity(),
        name: str | None = None,
        clock: Clock | None = None,
    ) -> None:
        super().__init__(intensity=intensity, name=name, clock=clock)
        self._strategy = strategy
        self._children: dict[Hashable, Child] = {}
        self._by_ref: dict[ActorRef[Any], Child] = {}
        for spec in children:
            if spec.id in self._children:
                raise DuplicateChildError(f"duplicate child id {spec.id!r}")
            self._children[spec.id] = Child(spec)

    async def on_start(self) -> None:  # type: ignore[override]
        for child in list(self._children.values()):
            try:
                await self._start(child)
            except StartChildError:
                await self._terminate_children()
                raise

    # -- child exits ---------------------------------------------------------------

    def _child_exited(
        self, ref: ActorRef[Any], reason: ExitReason
    ) -> Coroutine[Any, Any, None] | None:
        child = self._by_ref.pop(ref, None)
        if child is None or child.state is not ChildState.RUNNING:
            return None  # stale: a child we stopped ourselves, or an old ref
        child.ref = None
        child.move("exited")
        return self._respond(child, reason)

    async def _respond(self, exited: Child, reason: ExitReason) -> None:
        pending: tuple[Child, ExitReason] | None = (exited, reason)
        while pending is not None:
            exited, reason = pending
            pending = None
            order = [(c.spec.id, c.spec.restart) for c in self._children.values()]
            plan, self._history = decide(
                self._strategy, order, exited.spec.id, reason,
                self._history, self._now(), self._intensity,
            )  # fmt: skip
            if plan.escalate:
                exited.move("keep")
                await self._escalate(exited.spec.id, reason)
            if plan.start:
                logger.warning(
                    "%s: child %r exited (%s); restarting %s",
                    self, exited.spec.id, reason, list(plan.start),
                )
            for child_id in plan.stop:
                if self._children[child_id].state is ChildState.RUNNING:
                    await self._terminate(self._children[child_id])
            for child_id in plan.drop:
                self._remove(child_id)
            if exited.state is ChildState.EXITED and exited.spec.id not in plan.start:
                exited.move("keep")
            for child_id in plan.start:
                child = self._children[child_id]
                try:
                    await self._start(child)
                except StartChildError as error:
                    logger.error("%s: %s", self, error)
                    pending = (child, error.reason)
                    break
                self.restarts += 1

    # -- operations ----------------------------------------------------------------

    async def _start(self, child: Child) -> ActorRef[Any]:
        ref = await ops.start(self, child)
        self._by_ref[ref] = child
        return ref

    async def _terminate(self, child: Child) -> None:
        ref = child.ref
        await ops.terminate(child)
        self._by_ref.pop(ref, None)  # type: ignore[arg-type]

    def _remove(self, child_id: Hashable) -> None:
        self._children[child_id].move("delete")
        del self._children[child_id]

    async def _terminate_children(self) -> None:
        for child in reversed(list(self._children.values())):
            if child.state is ChildState.RUNNING:
                await self._terminate(child)

    def _get(self, child_id: Hashable) -> Child:
        try:
            return self._children[child_id]
        except KeyError:
            raise ChildNotFoundError(f"{self.name}: no child {child_id!r}") from None

    def _request(self, message: Any) -> Any:
        match message:
            case StartChild(spec=spec):
                return self._start_new(spec)
            case TerminateChild(child=child_id):
                return self._terminate_child(child_id)
            case RestartChild(child_id=child_id):
                return self._restart_child(child_id)
            case DeleteChild(child_id=child_id):
                return self._delete_child(child_id)
            case _:
                return super()._request(message)

    async def _start_new(self, spec: ChildSpec) -> ActorRef[Any]:
        if spec.id in self._children:
            raise DuplicateChildError(f"{self.name}: child {spec.id!r} already present")
        child = self._children[spec.id] = Child(spec)
        try:
            return await self._start(child)
        except StartChildError:
            del self._children[spec.id]
            raise

    async def _terminate_child(self, child_id: Hashable) -> None:
        child = self._get(child_id)
        if child.state is ChildState.RUNNING:
            await self._terminate(child)
        if child.spec.restart is Restart.TEMPORARY:
            self._remove(child_id)

    async def _restart_child(self, child_id: Hashable) -> ActorRef[Any]:
        child = self._get(child_id)
        if child.state is not ChildState.DEFINED:
            raise ChildRunningError(f"{self.name}: child {child_id!r} is {child.state.name}")
        return await self._start(child)

    def _delete_child(self, child_id: Hashable) -> None:
        child = self._get(child_id)
        if child.state is not ChildState.DEFINED:
            raise ChildRunningError(f"{self.name}: child {child_id!r} is {child.state.name}")
        self._remove(child_id)

    def _which(self) -> list[ChildInfo]:
        return [_info(c) for c in self._children.values()]

    def _count(self) -> ChildCounts:
        return count_records(list(self._children.values()), self.restarts)


def supervisor_spec(
    child_id: Hashable,
    children: Sequence[ChildSpec],
    *,
    strategy: Strategy = Strategy.ONE_FOR_ONE,
    intensity: Intensity = Intensity(),
    restart: Restart = Restart.PERMANENT,
    shutdown: float | None = None,
    clock: Clock | None = None,
) -> ChildSpec:
    """A ChildSpec that starts a nested :class:`Supervisor`."""
    specs = tuple(children)

    def start() -> ActorRef[Any]:
        return Supervisor.start(
            specs, strategy=strategy, intensity=intensity, name=str(child_id), clock=clock
        )

    return ChildSpec(
        id=child_id, start=start, restart=restart, shutdown=shutdown,
        kind=ChildKind.SUPERVISOR,
    )  # fmt: skip
