"""Actors layer: the session journal's interface, and the choice of implementation. Stdlib, codec, session.

See the package doc: :func:`journal_for` picks the journal of a session
actor once, at its construction.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from actorbroker.codec import Connect, Packet
from actorbroker.session import AppMessage, Effect

from ...storage.requests import SessionLoad
from ..start import StartMode
from .hold import Release
from .log import LogJournal
from .memory import MEMORY

__all__ = ["Journal", "journal_for"]


class Journal(Protocol):
    """What a session actor calls on its journal (see the module doc)."""

    @property
    def logged(self) -> bool:
        """The session's state is in the commit log: its actor's crash loses only QoS 0."""
        ...

    # what the actor saw, stashed as records
    def read(self, packets: tuple[Packet, ...]) -> None: ...

    def attached(self, connect: Connect, core: Any, peer: str, now: float,
                 owner: str | None = None) -> None: ...

    def detached(self, core: Any, reason: str, code: int | None) -> None: ...

    def held_for(self, conn: Any) -> list[Packet]: ...

    def unsent(self, packet_ids: list[int]) -> None: ...

    def subscribed(self, packet_id: int, results: tuple[int, ...] | None) -> None: ...

    def handed_back(self, group: str, messages: tuple[AppMessage, ...]) -> None: ...

    # the core's effects, and the storage actor's answers
    def intercept(self, effects: list[Effect], conn: Any, credit: Any) -> list[Effect]: ...

    def on_reply(self, message: Any, conn: Any) -> list[Release]: ...

    def retry(self) -> None: ...

    def when_released(self, callback: Callable[[], None]) -> None: ...

    # the resumed queue
    def deliverable(self, messages: tuple[AppMessage, ...], qos: int) -> tuple[AppMessage, ...]: ...

    def pump(self) -> None: ...

    # start, sleep and stop
    async def load(self, start: StartMode) -> SessionLoad | None: ...

    def restored(self, load: SessionLoad) -> None: ...

    def settle(self) -> None: ...

    def close(self) -> None: ...


def journal_for(actor: Any, node: Any) -> Journal:
    """The journal of session actor ``actor``: a :class:`LogJournal` when the node stores
    sessions (a storage actor and its settings), else the shared :class:`~.memory.MemoryJournal`."""
    settings = node.durability
    if settings is None or node.names.storage() is None:
        return MEMORY
    return LogJournal(actor, node, settings)
