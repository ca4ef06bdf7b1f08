"""Transport layer: the keepalive's idle timer. Imports stdlib and asyncio only.

:class:`IdleTimer` calls ``on_expire`` once ``limit`` seconds pass without
``touch()``. It keeps one timer handle and re-arms it lazily when it fires
early (a packet came meanwhile), so a busy connection costs one float
assignment per read instead of a cancelled and rescheduled timer. While
``held()`` is true (the broker itself paused reading) the silence is not
the peer's: the deadline moves on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

__all__ = ["IdleTimer"]


class IdleTimer:
    """Fires ``on_expire`` after ``limit`` seconds of silence; 0 disables."""

    __slots__ = ("_loop", "_on_expire", "_held", "_limit", "_last", "_handle")

    def __init__(self, loop: asyncio.AbstractEventLoop, on_expire: Callable[[], None],
                 held: Callable[[], bool]) -> None:
        self._loop = loop
        self._on_expire = on_expire
        self._held = held
        self._limit = 0.0
        self._last = loop.time()
        self._handle: asyncio.TimerHandle | None = None

    @property
    def limit(self) -> float:
        """Seconds of silence allowed; 0 when disabled."""
        return self._limit

    def touch(self) -> None:
        """The peer was heard from (or reading resumed): restart the period."""
        self._last = self._loop.time()

    def set(self, limit: float) -> None:
        """Allow ``limit`` seconds from the last ``touch``; 0 disables."""
        self.cancel()
        self._limit = max(limit, 0.0)
        if self._limit:
            self._handle = self._loop.call_at(self._last + self._limit, self._check)

    def cancel(self) -> None:
        """Disarm (``set`` arms again)."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _check(self) -> None:
        self._handle = None
        if not self._limit:
            return
        now = self._loop.time()
        deadline = now + self._limit if self._held() else self._last + self._limit
        if deadline > now:
            self._handle = self._loop.call_at(deadline, self._check)
        else:
            self._on_expire()
