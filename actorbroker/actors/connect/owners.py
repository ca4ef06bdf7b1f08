"""Actors layer: which user each session belongs to. Stdlib only.

A session belongs to the user who made it: a CONNECT with its client id
from another user name is refused, so that no one takes over another user's session: without it,
bob, with a valid password, connecting with alice's client id and Clean
Session 0 would get her queued messages. The gateway asks :meth:`Owners.claim` at every
accepted CONNECT; the first claim of a client id makes its user the owner
(``""``: anonymous), later claims by the same user renew it, others are
refused.

An owner is let go when its session ends (a clean session's connection
ended, a persistent one expired), by whoever ends it, with the claim number
it attached with: :meth:`release` forgets the owner only if no CONNECT
claimed the client id since, so a session ending while its client is
already reconnecting does not leave the new session without an owner.

Durable sessions keep their owner across restarts: the user name is in
their ``SessionConnected`` records, the fold keeps it, and the keeper puts
every offline session's owner back here before the listeners open.

A user name counts only when it is checked (``checked``: the broker has a
user file). Without one, anyone may send any user name, so every client is
the same anonymous owner: a client that changes its (unchecked) user name
keeps its session, as before ownership existed. Loop thread only.
"""

from __future__ import annotations

__all__ = ["Owners"]


class Owners:
    """client id -> (user name, claim number) of every live session (see the module doc)."""

    __slots__ = ("_owners", "_claims", "checked")

    def __init__(self, *, checked: bool = True) -> None:
        self._owners: dict[str, tuple[str, int]] = {}
        self._claims = 0
        self.checked = checked

    def owner(self, client_id: str) -> str | None:
        """The user ``client_id``'s session belongs to ("" anonymous), None if no session."""
        entry = self._owners.get(client_id)
        return None if entry is None else entry[0]

    def claim(self, client_id: str, user: str, *, takeover: bool = False) -> int | None:
        """``user`` connects as ``client_id``: the claim number, or None if another user owns it
        (``takeover``: ``user`` may use it all the same, and the session stays its owner's)."""
        user = user if self.checked else ""
        entry = self._owners.get(client_id)
        if entry is not None and entry[0] != user:
            if not takeover:
                return None
            user = entry[0]
        self._claims += 1
        self._owners[client_id] = (user, self._claims)
        return self._claims

    def restore(self, client_id: str, user: str) -> None:
        """A durable session found at start-up belongs to ``user`` (claim 0)."""
        self._owners.setdefault(client_id, (user if self.checked else "", 0))

    def release(self, client_id: str, claim: int | None = None) -> bool:
        """``client_id``'s session ended: forget its owner unless claimed after ``claim``.

        ``claim`` None: the latest claim, whatever it is (an offline session
        that expired without any connection since it went to sleep).
        """
        entry = self._owners.get(client_id)
        if entry is None or (claim is not None and entry[1] > claim):
            return False
        del self._owners[client_id]
        return True

    def __len__(self) -> int:
        return len(self._owners)
