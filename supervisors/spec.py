"""Child specifications (pure data; stdlib + pykka types only).

A :class:`ChildSpec` says how a supervisor starts a child, when it restarts
it, and how long it waits for it to stop, as in Erlang's ``child_spec()``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from enum import Enum
from typing import Any, Final

from pykka import ActorRef

__all__ = [
    "BRUTAL_KILL",
    "INFINITY",
    "ChildKind",
    "ChildSpec",
    "Restart",
]


class Restart(Enum):
    """When a child is restarted after it exits."""

    PERMANENT = "permanent"  # always
    TRANSIENT = "transient"  # only after an abnormal exit (not normal/shutdown)
    TEMPORARY = "temporary"  # never; its spec is dropped when it exits


class ChildKind(Enum):
    """Worker or supervisor: changes the default shutdown and the counts."""

    WORKER = "worker"
    SUPERVISOR = "supervisor"


#: ``shutdown=BRUTAL_KILL``: kill at once, without asking the child to stop.
BRUTAL_KILL: Final = 0.0
#: ``shutdown=INFINITY``: wait as long as it takes (default for supervisors).
INFINITY: Final = math.inf

_DEFAULT_WORKER_SHUTDOWN = 5.0


@dataclass(frozen=True, slots=True)
class ChildSpec:
    """How to run one child.

    Attributes:
        id: unique among the supervisor's children (any hashable).
        start: called on the supervisor's loop thread; starts the actor and
            returns its ref (e.g. ``lambda: Worker.start(cfg)``). The actor
            must be a LoopActor or a ThreadActor. The child counts as started
            when its ``on_start`` has finished.
        restart: PERMANENT, TRANSIENT or TEMPORARY.
        shutdown: seconds to wait for an orderly stop before killing;
            BRUTAL_KILL (0) kills at once; INFINITY waits forever. Default:
            5 s for workers, INFINITY for supervisors (as in Erlang).
        kind: WORKER or SUPERVISOR.
        start_timeout: seconds ``on_start`` may take before the child is
            killed and the start counts as failed (INFINITY: no limit).
        wait_start: False: the child counts as started as soon as it exists,
            without waiting for its ``on_start`` (its mailbox holds what it
            is told until ``on_start`` ran, so its ref is usable at once); a
            failing ``on_start`` is then an exit, not a failed start, and
            ``start_timeout`` does not apply. For many short-lived dynamic
            children whose ``on_start`` cannot fail in a way the starter
            must hear of (Erlang: an ``init`` that acknowledges first).
    """

    id: Hashable
    start: Callable[[], ActorRef[Any]]
    restart: Restart = Restart.PERMANENT
    shutdown: float | None = None
    kind: ChildKind = ChildKind.WORKER
    start_timeout: float = 5.0
    wait_start: bool = True

    def __post_init__(self) -> None:
        if not callable(self.start):
            raise TypeError(f"child {self.id!r}: start must be callable")
        if self.shutdown is not None and not self.shutdown >= 0:
            raise ValueError(f"child {self.id!r}: shutdown must be >= 0 seconds")
        if not self.start_timeout > 0:
            raise ValueError(f"child {self.id!r}: start_timeout must be > 0 seconds")

    @property
    def shutdown_timeout(self) -> float:
        """The effective shutdown timeout, defaults applied."""
        if self.shutdown is not None:
            return self.shutdown
        if self.kind is ChildKind.SUPERVISOR:
            return INFINITY
        return _DEFAULT_WORKER_SHUTDOWN
