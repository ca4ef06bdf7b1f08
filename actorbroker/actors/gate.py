"""Actors layer: a session's held effects, released in order; QoS 1 routes let through early. Stdlib, codec, session.

One :class:`Gate` per :class:`~.durability.SessionDurability`: a queue of
:class:`~.held.Held` entries, one per core call whose effects wait for the
commit log (or that came while others waited). An entry is *released*
(its effects carried out by the actor) once it is at the front and its
records are stored (``Durable``) or refused (``NotDurable``); an entry
without records of its own goes when it reaches the front. So no packet
overtakes a pending PUBACK, and a publisher's messages are routed in order.

**Early routes** (mode fsync). An entry whose logged messages are all QoS 1
(``Held.early``) is told ``Durable(token, offsets, synced=False)`` once its
records are written, before their fdatasync. Its routes are then carried
out at once, with their offsets, if every entry before it is released or
holds nothing that routes must not overtake (``Held.blocking`` False: it
only holds packets to this client, timers, and PUBACKs of messages routed
early); else when that becomes true. The PUBACKs and everything else of the
entry stay held until ``Durable``. Safe for QoS 1: if the broker dies
before the sync, the publisher got no PUBACK and resends (at least once
allows the duplicate), and any record a subscriber's session writes about
the offset lands after the ``PublishAccepted`` in the same append-only log, so it
is never durable without it. Not for QoS 2: lost with the sync and resent,
the message would be delivered twice. (docs/storage.md, "What is synced
before what".)

A ``NotDurable`` after an early route refuses the PUBACK all the same (MQTT
5: the reason code; 3.x: no PUBACK, the connection closes): the publisher
sends the message again, which its subscribers then get twice (at least
once).
"""

from __future__ import annotations

from collections import deque
from typing import Any

from actorbroker.codec import Packet
from actorbroker.session import Effect, Send

from .held import Held

__all__ = ["Gate"]


class Gate:
    """The held entries of one session actor (see the module doc)."""

    __slots__ = ("_actor", "_entries", "_waiting", "releasing")

    def __init__(self, actor: Any) -> None:
        self._actor = actor
        self._entries: deque[Held] = deque()
        self._waiting = 0  # entries written early whose routes wait for an entry before them
        self.releasing = False  # effects carried out now come from the gate: not held again

    def __bool__(self) -> bool:
        return bool(self._entries)

    def hold(self, held: Held) -> None:
        """Queue ``held`` behind everything held so far; it holds the read credit of the
        effects (if they came from a read) until its routes are carried out."""
        held.credit = self._actor.held_credit()
        self._entries.append(held)

    def packets_for(self, conn: Any) -> list[Packet]:
        """The packets held for ``conn``: once it is gone, never written (``Held.release``
        gives them to that closed connection, which drops them)."""
        return [packet for held in self._entries if held.conn is conn
                for effect in held.effects if type(effect) is Send
                for packet in effect.packets]

    def find(self, token: int) -> Held | None:
        """The entry waiting for ``token`` (None: none, e.g. answered already)."""
        for held in self._entries:
            if held.token == token:
                return held
        return None

    def written(self, held: Held, offsets: tuple[int, ...]) -> None:
        """The records of ``held`` are written at ``offsets``, not synced: route early if it
        may go now."""
        if not held.early or held.done or not held.blocking:
            return
        held.written = offsets
        self._waiting += 1
        self._route_early()

    def release_ready(self) -> None:
        """Release the entries at the front that are answered (or have no records)."""
        entries = self._entries
        while entries and (entries[0].done or entries[0].token is None):
            held = entries.popleft()
            if held.written is not None:  # written early, never routed early: routed now
                self._waiting -= 1
            self.releasing = True
            try:
                held.release(self._actor)
            finally:
                self.releasing = False
        if self._waiting:
            self._route_early()

    def _route_early(self) -> None:
        for held in self._entries:
            if held.written is not None:
                self._waiting -= 1
                credit, held.credit = held.credit, None
                self.carry_out(held.route_early(), credit)  # each with its read's credit
                if credit is not None:
                    credit.take()
            if held.blocking:
                break

    def carry_out(self, effects: list[Effect], credit: Any = None) -> None:
        """Carry ``effects`` out through the actor now, past the gate; what they route
        carries ``credit``."""
        self.releasing = True
        try:
            self._actor.run_effects(effects, credit)
        finally:
            self.releasing = False

    def when_released(self, callback: Any) -> None:
        """Call ``callback()`` once everything held so far is carried out (now if nothing is)."""
        if self._entries:
            self._entries[-1].then.append(callback)
        else:
            callback()
