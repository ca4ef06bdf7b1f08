"""Actors layer: how a session actor starts (:class:`StartMode`). Stdlib only.

The gateway decides it from the name table's entry for the client id and
passes it to the actor's constructor (through its ``SessionStarter``); the
actor's journal reads it to know whether the log may hold the session.
"""

from __future__ import annotations

from enum import Enum

__all__ = ["StartMode"]


class StartMode(Enum):
    """Why a session actor is starting."""

    FRESH = "fresh"      # no entry for the client id: the log holds nothing of it
    WAKE = "wake"        # the entry was Asleep: the session is in the log, load it
    RESTART = "restart"  # its supervisor restarts it after a crash: load what survived
