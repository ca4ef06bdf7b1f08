"""Session layer: the lifecycle of one session, as a transition table. Stdlib only.

    NEW --attach--> CONNECTED
    NEW --restore--> DISCONNECTED             a restarted actor took back a persistent
                                              session's subscriptions from the registry
    CONNECTED --detach--> DISCONNECTED        persistent session (Clean Session 0) kept offline
    CONNECTED --end--> ENDED                  Clean Session 1: state discarded with the connection
    CONNECTED --take_over--> TAKEN_OVER       the same client id connected again ([MQTT-3.1.4-2]);
                                              the old connection is closed, the new CONNECT's
                                              Clean Session decides what survives
    TAKEN_OVER --attach--> CONNECTED
    DISCONNECTED --attach--> CONNECTED        resumed, or restarted clean by Clean Session 1
    DISCONNECTED --expire--> ENDED            offline longer than the session expiry, or removed

ENDED is final: the actor forgets the session and a later CONNECT of the same
client id starts a new one. :class:`~actorbroker.session.core.SessionCore`
moves its state only through :func:`advance`, which raises
:class:`LifecycleError` on an event the state does not accept: that is a bug
in the caller (the actor), never a peer's doing.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from types import MappingProxyType
from typing import Final

__all__ = [
    "ATTACH",
    "CHART_NAME",
    "CHART_TITLE",
    "DETACH",
    "END",
    "EXPIRE",
    "INITIAL",
    "RESTORE",
    "TAKE_OVER",
    "TRANSITIONS",
    "LifecycleError",
    "SessionState",
    "advance",
]


class LifecycleError(RuntimeError):
    """An event the session's state does not accept (a caller bug)."""


class SessionState(Enum):
    """Where a session stands."""

    NEW = "new"  # created, never attached
    CONNECTED = "connected"  # a network connection is attached
    DISCONNECTED = "disconnected"  # persistent session, client offline
    TAKEN_OVER = "taken_over"  # old connection closed for a new one, not yet attached
    ENDED = "ended"  # state discarded; final


ATTACH: Final = "attach"
DETACH: Final = "detach"
END: Final = "end"
TAKE_OVER: Final = "take_over"
EXPIRE: Final = "expire"
RESTORE: Final = "restore"

CHART_NAME: Final = "session_lifecycle"
CHART_TITLE: Final = "Session lifecycle (actorbroker.session.lifecycle)"
INITIAL: Final = SessionState.NEW

_S = SessionState
TRANSITIONS: Final[Mapping[tuple[SessionState, str], SessionState]] = MappingProxyType({
    (_S.NEW, ATTACH): _S.CONNECTED,
    (_S.NEW, RESTORE): _S.DISCONNECTED,
    (_S.CONNECTED, DETACH): _S.DISCONNECTED,
    (_S.CONNECTED, END): _S.ENDED,
    (_S.CONNECTED, TAKE_OVER): _S.TAKEN_OVER,
    (_S.TAKEN_OVER, ATTACH): _S.CONNECTED,
    (_S.DISCONNECTED, ATTACH): _S.CONNECTED,
    (_S.DISCONNECTED, EXPIRE): _S.ENDED,
})


def advance(state: SessionState, event: str) -> SessionState:
    """The state after ``event``.

    Raises:
        LifecycleError: ``state`` does not accept ``event``.
    """
    try:
        return TRANSITIONS[(state, event)]
    except KeyError:
        raise LifecycleError(
            f"session lifecycle: event {event!r} is illegal in state {state.name}"
        ) from None
