"""Actors layer: ListenerActor, one network listener under the Listeners supervisor. Stdlib and supervisors only.

The actor does not know the transport: :mod:`actorbroker.app` hands it an
``open_listener`` coroutine function that binds the socket and returns a
:class:`ListenerHandle` (``actorbroker.transport.Listener`` fits). Its
``on_start`` opens the listener (a bind failure fails the start, so the
broker does not come up half-listening); its ``on_stop`` stops accepting and
then closes every connection of the listener, waiting until they are gone,
so their sessions see ``ConnectionLost`` while the rest of the tree still
runs. Listeners start last and stop first (docs/architecture.md,
"The tree").
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

from supervisors import LoopActor

__all__ = ["ListenerActor", "ListenerHandle"]

log = logging.getLogger("actorbroker.listener")


class ListenerHandle(Protocol):
    """A bound listener as the actor drives it."""

    @property
    def port(self) -> int: ...

    name: str

    def reload_certificates(self) -> bool: ...

    async def close(self) -> None: ...

    async def close_all(self) -> None: ...


class ListenerActor(LoopActor):
    """Owns one listener from bind to close."""

    def __init__(self, open_listener: Callable[[], Awaitable[ListenerHandle]],
                 on_bound: Callable[[ListenerHandle | None], None] | None = None) -> None:
        super().__init__()
        self._open = open_listener
        self._on_bound = on_bound
        self.listener: ListenerHandle | None = None

    async def on_start(self) -> None:  # type: ignore[override]
        self.listener = await self._open()
        if self._on_bound is not None:
            self._on_bound(self.listener)

    async def on_stop(self) -> None:  # type: ignore[override]
        await self._close()

    async def on_failure(self, *_exc: object) -> None:  # type: ignore[override]
        await self._close()

    async def _close(self) -> None:
        listener, self.listener = self.listener, None
        if listener is None:
            return
        if self._on_bound is not None:
            self._on_bound(None)
        await listener.close()
        await listener.close_all()
        log.info("listener %s: every connection closed", listener.name)
