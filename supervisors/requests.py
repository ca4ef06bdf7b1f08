"""Requests to supervisors and their replies (runtime layer; pykka + stdlib).

Messages are frozen slotted dataclasses; the functions send them with
``ask(block=False)`` and return the future: ``await`` it on the loop, or
``get()`` it from another thread.

Children are named by id in a :class:`~supervisors.Supervisor` and by ref in a
:class:`~supervisors.DynamicSupervisor`. Failures come back as exceptions
from the future: ChildNotFoundError, ChildRunningError, DuplicateChildError,
StartChildError.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, cast

from pykka import ActorRef, Future

from supervisors.lifecycle import ChildState
from supervisors.spec import ChildKind, ChildSpec, Restart

__all__ = [
    "ChildCounts",
    "ChildInfo",
    "CountChildren",
    "DeleteChild",
    "RestartChild",
    "StartChild",
    "TerminateChild",
    "WhichChildren",
    "count_children",
    "delete_child",
    "restart_child",
    "start_child",
    "terminate_child",
    "which_children",
]


@dataclass(frozen=True, slots=True)
class StartChild:
    """Add a child and start it; replies with its ref."""

    spec: ChildSpec


@dataclass(frozen=True, slots=True)
class TerminateChild:
    """Stop a child (by id, or by ref for dynamic supervisors); replies None."""

    child: Hashable


@dataclass(frozen=True, slots=True)
class RestartChild:
    """Start a stopped child again from its spec; replies with its ref."""

    child_id: Hashable


@dataclass(frozen=True, slots=True)
class DeleteChild:
    """Drop the spec of a stopped child; replies None."""

    child_id: Hashable


@dataclass(frozen=True, slots=True)
class WhichChildren:
    """Replies with a list of ChildInfo, in start order."""


@dataclass(frozen=True, slots=True)
class CountChildren:
    """Replies with ChildCounts."""


@dataclass(frozen=True, slots=True)
class ChildInfo:
    """One row of which_children (``ref`` is None when not running)."""

    id: Hashable
    ref: ActorRef[Any] | None
    kind: ChildKind
    restart: Restart
    state: ChildState
    #: Times the supervisor started this child again after it exited.
    restarts: int = 0


@dataclass(frozen=True, slots=True)
class ChildCounts:
    """Erlang's count_children: specs, running ones, and specs by kind."""

    specs: int
    active: int
    supervisors: int
    workers: int
    #: Children started again after an exit since the supervisor started (not
    #: Erlang's: an operator's figure, e.g. to see a restart storm).
    restarts: int = 0


def start_child(sup: ActorRef[Any], spec: ChildSpec) -> Future[ActorRef[Any]]:
    """Add and start a child; the future holds its ref."""
    return cast("Future[ActorRef[Any]]", sup.ask(StartChild(spec), block=False))


def terminate_child(sup: ActorRef[Any], child: Hashable) -> Future[None]:
    """Stop a child within its shutdown timeout (then kill it)."""
    return cast("Future[None]", sup.ask(TerminateChild(child), block=False))


def restart_child(sup: ActorRef[Any], child_id: Hashable) -> Future[ActorRef[Any]]:
    """Start a stopped child of a static supervisor again."""
    return cast("Future[ActorRef[Any]]", sup.ask(RestartChild(child_id), block=False))


def delete_child(sup: ActorRef[Any], child_id: Hashable) -> Future[None]:
    """Drop the spec of a stopped child of a static supervisor."""
    return cast("Future[None]", sup.ask(DeleteChild(child_id), block=False))


def which_children(sup: ActorRef[Any]) -> Future[list[ChildInfo]]:
    """List the children in start order."""
    return cast("Future[list[ChildInfo]]", sup.ask(WhichChildren(), block=False))


def count_children(sup: ActorRef[Any]) -> Future[ChildCounts]:
    """Count the children."""
    return cast("Future[ChildCounts]", sup.ask(CountChildren(), block=False))
