"""Actors layer: what a session actor's components may use of it (``SessionHost``). Stdlib, codec, session.

The components a session actor is made of (its :class:`~.output.Output`
and :class:`~.retransmit.Retransmitter`) hold the actor as this protocol,
not as the actor's class: the few members below are all they reach.
``connection`` and ``epoch`` are plain attributes of the actor, so that the
``Deliver`` hot path reads them without a call.
"""

from __future__ import annotations

from typing import Any, Protocol

from actorbroker.ports import Connection, ReadCredit
from actorbroker.session import Effect

__all__ = ["SessionHost"]


class SessionHost(Protocol):
    """The session actor as its components see it (loop thread only)."""

    #: The client id the session serves.
    client_id: str
    #: The attached connection (None: none attached).
    connection: Connection | None
    #: The epoch of the session's current subscriptions (actors/messages.py: stale Delivers).
    epoch: int

    @property
    def credit(self) -> ReadCredit | None:
        """The read credit of the read whose effects are carried out now (None: no read's)."""

    def run_effects(self, effects: list[Effect], credit: ReadCredit | None = None) -> None:
        """Carry ``effects`` out through the journal; what they route carries ``credit``."""

    def carry_out(self, effects: list[Effect]) -> None:
        """Carry ``effects`` out now, past the journal (what the journal let through)."""

    def call_later(self, delay: float, message: Any) -> None:
        """Tell the actor ``message`` in ``delay`` seconds (its ref holds the timer, not it)."""
