"""Exceptions of the supervisors runtime (stdlib and supervisors.reasons only).

"We misused the API" errors (:class:`BlockingOnLoopError`,
:class:`NoEventLoopError`, :class:`IllegalTransitionError`) are bugs in the
caller; the others report the outcome of a supervision request.
"""

from __future__ import annotations

from collections.abc import Hashable

from supervisors.reasons import ExitReason

__all__ = [
    "BlockingOnLoopError",
    "ChildNotFoundError",
    "ChildRunningError",
    "CrashRequestedError",
    "DuplicateChildError",
    "IllegalTransitionError",
    "NoEventLoopError",
    "RestartIntensityError",
    "StartChildError",
    "SupervisorError",
]


class BlockingOnLoopError(RuntimeError):
    """A blocking ``Future.get()`` was called on an event loop thread.

    The reply can only arrive once the loop runs again, so blocking would stall
    every loop actor (or deadlock). ``future`` is the future that is not ready;
    ``await`` it instead.
    """

    def __init__(self, future: object | None = None) -> None:
        super().__init__(
            "blocking get() on the event loop thread while the result is not ready:"
            " this would block every loop actor (or deadlock). Await the future"
            " instead, e.g. `await ref.ask(msg, block=False)` or"
            " `await ref.stop(block=False)`"
        )
        self.future = future


class NoEventLoopError(RuntimeError):
    """A loop actor was created off the loop thread and no loop was set."""


class CrashRequestedError(RuntimeError):
    """Raised in an actor told :func:`~supervisors.crash`: it crashes as from a bug."""


class IllegalTransitionError(RuntimeError):
    """A state machine was given an event its current state does not accept."""


class SupervisorError(RuntimeError):
    """Base of the errors a supervisor returns to a request."""


class ChildNotFoundError(SupervisorError, KeyError):
    """No child with this id (or ref) under the supervisor."""


class ChildRunningError(SupervisorError):
    """The request needs a stopped child (restart_child, delete_child)."""


class DuplicateChildError(SupervisorError):
    """start_child with an id that is already present."""


class StartChildError(SupervisorError):
    """A child's start function raised, or the child died during ``on_start``."""

    def __init__(self, child_id: Hashable, reason: ExitReason) -> None:
        super().__init__(f"child {child_id!r} failed to start: {reason}")
        self.child_id = child_id
        self.reason = reason


class RestartIntensityError(SupervisorError):
    """More restarts than the intensity allows: the supervisor gives up."""
