"""The lifecycle of one supervised child, as a transition table (stdlib only).

A supervisor keeps one state per child and moves it only through
:func:`advance`, which raises on an event the state does not accept.
``python -m actorbroker.statecharts --write`` draws this table into
docs/statecharts/child_lifecycle.svg.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from types import MappingProxyType

from supervisors.errors import IllegalTransitionError

__all__ = [
    "CHART_NAME",
    "CHART_TITLE",
    "INITIAL",
    "TRANSITIONS",
    "ChildState",
    "advance",
]


class ChildState(Enum):
    """Where a child is, as its supervisor sees it."""

    DEFINED = "defined"  # spec known, no actor running
    STARTING = "starting"  # start function called, on_start not finished
    RUNNING = "running"
    STOPPING = "stopping"  # asked to stop, within its shutdown timeout
    KILLING = "killing"  # kill sent (timeout or brutal_kill), exit not seen yet
    EXITED = "exited"  # died on its own; the strategy decides what next
    REMOVED = "removed"  # spec dropped: temporary, deleted, or dynamic child gone


CHART_NAME = "child_lifecycle"
CHART_TITLE = "Supervised child lifecycle (supervisors.lifecycle)"
INITIAL = ChildState.DEFINED

_S = ChildState
TRANSITIONS: Mapping[tuple[ChildState, str], ChildState] = MappingProxyType(
    {
        (_S.DEFINED, "start"): _S.STARTING,
        (_S.DEFINED, "delete"): _S.REMOVED,
        (_S.STARTING, "started"): _S.RUNNING,
        (_S.STARTING, "start_failed"): _S.EXITED,
        (_S.RUNNING, "exited"): _S.EXITED,
        (_S.RUNNING, "terminate"): _S.STOPPING,
        (_S.RUNNING, "brutal_kill"): _S.KILLING,
        (_S.STOPPING, "stopped"): _S.DEFINED,
        (_S.STOPPING, "shutdown_timeout"): _S.KILLING,
        (_S.KILLING, "stopped"): _S.DEFINED,
        (_S.EXITED, "restart"): _S.STARTING,
        (_S.EXITED, "keep"): _S.DEFINED,
        (_S.EXITED, "delete"): _S.REMOVED,
    }
)


def advance(state: ChildState, event: str) -> ChildState:
    """The state after ``event``.

    Raises:
        IllegalTransitionError: ``state`` does not accept ``event``.
    """
    try:
        return TRANSITIONS[(state, event)]
    except KeyError:
        raise IllegalTransitionError(
            f"child lifecycle: event {event!r} is illegal in state {state.name}"
        ) from None
