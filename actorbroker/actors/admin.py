"""Actors layer: the commands an operator sends through the admin API. Stdlib only.

    admin => session   DiscardSession   an ask: end an offline session now, as its expiry would
    admin => keeper    ExpireSession    an ask: the same for a hibernated session

Both answer True when the session ended (its end then follows the usual
path: registry and commit log told, name dropped), False when it was not
theirs to end (connected again, or woken meanwhile): the caller says so.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DiscardSession", "ExpireSession"]


@dataclass(frozen=True, slots=True)
class DiscardSession:
    """End this offline session now (its Will, if still due, is published)."""


@dataclass(frozen=True, slots=True)
class ExpireSession:
    """End the hibernated session of ``client_id`` now."""

    client_id: str
