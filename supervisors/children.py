"""Starting and stopping one supervised child (runtime layer; pykka + stdlib).

Shared by :class:`~supervisors.Supervisor` and
:class:`~supervisors.DynamicSupervisor`; runs on the supervisor's loop. A
child is *started* once its ``on_start`` has finished (the supervisor waits,
so children start in order), and *stopped* once it is fully dead (its exit
hooks fired), so a restarted child never overlaps its predecessor.

The supervisor stays linked to a child it is stopping: if the supervisor is
killed meanwhile the child dies with it. The child's own ``Exited`` signal
then arrives for a ref that is no longer current and is ignored.
"""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pykka import ActorDeadError, ActorRef

from supervisors.errors import StartChildError
from supervisors.future import LoopFuture
from supervisors.lifecycle import ChildState, advance
from supervisors.links import PING, Linkable, actor_of, exit_future, kill, link, shutdown
from supervisors.reasons import KILLED, NOPROC, Crash, ExitReason
from supervisors.spec import BRUTAL_KILL, ChildSpec

__all__ = ["Child", "spawn", "start", "terminate", "terminate_many"]


@dataclass(slots=True)
class Child:
    """A supervisor's record of one child: its spec, state and current ref."""

    spec: ChildSpec
    state: ChildState = ChildState.DEFINED
    ref: ActorRef[Any] | None = None
    #: Times the supervisor started it again after it exited (an operator's figure).
    restarts: int = 0

    def move(self, event: str) -> None:
        """Apply a lifecycle event (raises IllegalTransitionError if illegal)."""
        self.state = advance(self.state, event)


def spawn(owner: Linkable, child: Child) -> ActorRef[Any]:
    """Start ``child`` linked to ``owner`` without waiting for its on_start.

    The child is RUNNING on return (``spec.wait_start`` False): an on_start
    that fails later is an exit like any other.

    Raises:
        StartChildError: the start function raised, returned something that is
            not a supervisable actor, or the actor is dead already.
    """
    ref = _create(owner, child)
    child.ref = ref
    child.move("started")
    return ref


def _create(owner: Linkable, child: Child) -> ActorRef[Any]:
    """Run the start function and link the new actor to ``owner`` (state STARTING)."""
    if child.state is ChildState.EXITED:
        child.restarts += 1
        child.move("restart")
    else:
        child.move("start")
    spec = child.spec
    try:
        ref = spec.start()
        if not isinstance(ref, ActorRef):
            raise TypeError(f"start returned {ref!r}, not an ActorRef")
    except Exception as exc:
        child.move("start_failed")
        raise StartChildError(spec.id, Crash(exc)) from exc
    try:
        actor = actor_of(ref)  # a strong ref: keeps the exit reason readable
    except TypeError as exc:  # a plain pykka actor: cannot be supervised
        ref.stop(block=False)
        child.move("start_failed")
        raise StartChildError(spec.id, Crash(exc)) from exc
    if actor is None:
        child.move("start_failed")
        raise StartChildError(spec.id, NOPROC)
    link(owner.actor_ref, ref)
    actor._parent = owner.actor_ref
    return ref


async def start(owner: Linkable, child: Child) -> ActorRef[Any]:
    """Start ``child`` linked to ``owner``; return once its on_start is done.

    With ``spec.wait_start`` False, return at once (see :func:`spawn`).

    Raises:
        StartChildError: the start function raised, returned something that is
            not a supervisable actor, or the actor died or timed out in on_start.
    """
    spec = child.spec
    if not spec.wait_start:
        return spawn(owner, child)
    ref = _create(owner, child)
    loop = asyncio.get_running_loop()
    timer = None
    if spec.start_timeout != math.inf:
        timer = loop.call_later(spec.start_timeout, kill, ref, KILLED)
    try:
        await ref.ask(PING, block=False)
    except ActorDeadError:
        reason = await exit_future(ref)
        child.move("start_failed")
        raise StartChildError(spec.id, reason) from None
    finally:
        if timer is not None:
            timer.cancel()
    child.ref = ref
    child.move("started")
    return ref


def _ask_to_stop(child: Child) -> float:
    """Send shutdown (or kill at once) to a running child; return its timeout."""
    ref = child.ref
    assert ref is not None
    timeout = child.spec.shutdown_timeout
    if timeout == BRUTAL_KILL:
        child.move("brutal_kill")
        kill(ref, KILLED)
    else:
        child.move("terminate")
        shutdown(ref)
    return timeout


def _kill_stragglers(stopping: list[tuple[Child, ActorRef[Any]]]) -> None:
    """Shutdown timeout: kill each child that is still stopping."""
    for child, ref in stopping:
        if child.ref is ref and child.state is ChildState.STOPPING:
            child.move("shutdown_timeout")
            kill(ref, KILLED)


async def terminate(child: Child) -> ExitReason:
    """Stop a running child within its shutdown timeout, else kill it."""
    ref = child.ref
    assert ref is not None and child.state is ChildState.RUNNING
    done = exit_future(ref)
    timeout = _ask_to_stop(child)
    timer = None
    if timeout not in (BRUTAL_KILL, math.inf):
        loop = asyncio.get_running_loop()
        timer = loop.call_later(timeout, _kill_stragglers, [(child, ref)])
    try:
        reason = await done
    finally:
        if timer is not None:
            timer.cancel()
    child.move("stopped")
    child.ref = None
    return reason


class _Countdown:
    """Resolves ``done`` when ``left`` exit hooks have fired (from any thread)."""

    def __init__(self, left: int) -> None:
        self.left = left
        self.lock = threading.Lock()
        self.done: LoopFuture[None] = LoopFuture()
        if left == 0:
            self.done.set(None)

    def exited(self, _ref: ActorRef[Any], _reason: ExitReason) -> None:
        with self.lock:
            self.left -= 1
            last = self.left == 0
        if last:
            self.done.set(None)


async def terminate_many(children: Iterable[Child]) -> None:
    """Stop running children all at once (dynamic supervisors do this).

    Every child is asked (or killed) first; one timer per distinct shutdown
    timeout then kills the stragglers, so 100k children cost 100k messages,
    not 100k timers and futures.
    """
    running = [c for c in children if c.state is ChildState.RUNNING and c.ref is not None]
    countdown = _Countdown(len(running))
    by_timeout: dict[float, list[tuple[Child, ActorRef[Any]]]] = {}
    for child in running:
        ref = child.ref
        assert ref is not None
        actor = actor_of(ref)
        if actor is None or actor._add_exit_hook(countdown.exited) is None:
            countdown.exited(ref, NOPROC)
        by_timeout.setdefault(_ask_to_stop(child), []).append((child, ref))
    loop = asyncio.get_running_loop()
    timers = [
        loop.call_later(timeout, _kill_stragglers, group)
        for timeout, group in by_timeout.items()
        if timeout not in (BRUTAL_KILL, math.inf)
    ]
    try:
        await countdown.done
    finally:
        for timer in timers:
            timer.cancel()
    for child in running:
        child.move("stopped")
        child.ref = None
