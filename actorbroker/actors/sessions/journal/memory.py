"""Actors layer: the journal of a session on a node without storage: nothing to write, nothing held. Stdlib, codec.

With ``[storage] durability = "memory"`` a session keeps its state in RAM
only, so its journal records nothing and holds nothing: each method below
does nothing, or hands back what it was given. One instance serves every
session (:data:`MEMORY`): it keeps no state.

The session actor binds its effect path once when it takes this journal
(:func:`~actorbroker.actors.sessions.journal.journal_for`): the core's
effects and the QoS 0 fast path's packets never pass through here, so the
hot path pays no call for a journal it does not have.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from actorbroker.codec import Connect, Packet
from actorbroker.session import AppMessage, Effect

from ..start import StartMode
from .hold import Release

__all__ = ["MEMORY", "MemoryJournal"]


class MemoryJournal:
    """A session's journal without a commit log (see the module doc)."""

    __slots__ = ()

    #: Nothing of the session survives its actor: a crash loses its queue and flows.
    logged = False

    def read(self, packets: tuple[Packet, ...]) -> None:
        pass

    def attached(self, connect: Connect, core: Any, peer: str, now: float,
                 owner: str | None = None) -> None:
        pass

    def detached(self, core: Any, reason: str, code: int | None) -> None:
        pass

    def held_for(self, conn: Any) -> list[Packet]:
        return []  # nothing is ever held

    def unsent(self, packet_ids: list[int]) -> None:
        pass

    def subscribed(self, packet_id: int, results: tuple[int, ...] | None) -> None:
        pass

    def handed_back(self, group: str, messages: tuple[AppMessage, ...]) -> None:
        pass  # no log owes them to the group: the registry's redelivery is all

    def on_reply(self, message: object, conn: Any) -> list[Release]:
        raise TypeError(f"a storage answer without storage: {message!r}")

    def retry(self) -> None:
        raise TypeError("a journal retry without storage")

    def when_released(self, callback: Callable[[], None]) -> None:
        callback()  # nothing is held: released already

    # The actor's paths bound for this journal never call these two (see the module doc);
    # they keep the interface whole, and show what passing through it would do.

    def intercept(self, effects: list[Effect], conn: Any, credit: Any) -> list[Effect]:
        return effects  # all of them now: nothing waits for a log

    def deliverable(self, messages: tuple[AppMessage, ...], qos: int) -> tuple[AppMessage, ...]:
        return messages  # no resumed queue to wait behind

    def pump(self) -> None:
        pass

    def settle(self) -> None:
        pass

    async def load(self, start: StartMode) -> None:
        return None  # no log to load from

    def restored(self, load: object) -> None:
        raise TypeError("a session loaded from a log without storage")

    def close(self) -> None:
        pass


#: The one MemoryJournal (it keeps no state).
MEMORY = MemoryJournal()
