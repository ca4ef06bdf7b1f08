"""Transport layer: the keepalive's and the unfinished packet's timers. Imports stdlib, asyncio.

:class:`IdleTimer` calls ``on_expire`` once ``limit`` seconds pass without
``touch()``. It keeps one timer handle and re-arms it lazily when it fires
early (a packet came meanwhile), so a busy connection costs one float
assignment per read instead of a cancelled and rescheduled timer. While
``held()`` is true (the broker itself paused reading) the silence is not
the peer's: the deadline moves on. :class:`StallTimer` bounds how long one
packet may take to arrive (a slowloris sending a big PUBLISH a byte a
second, which the keepalive does not catch: it counts whole packets, and a
keepalive of 0 turns it off).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

__all__ = ["IdleTimer", "StallTimer"]


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

    def detach(self) -> None:
        """Disarm for good and drop the callbacks (they point back at the owner)."""
        self.cancel()
        self._limit = 0.0
        self._on_expire = _nothing
        self._held = _false

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


def _nothing() -> None:
    """The ``on_expire`` of a detached timer."""


def _false() -> bool:
    """The ``held`` of a detached timer."""
    return False


class StallTimer:
    """Fires ``on_expire`` when one packet has been arriving for ``limit`` seconds.

    The owner calls :meth:`started` when a read leaves a packet unfinished that
    began in that read; ``pending()`` says whether one is still unfinished. Like
    :class:`IdleTimer` it keeps one handle and checks lazily: a packet that
    completes costs nothing, the timer finds the buffer empty and stays idle.
    While ``held()`` (the broker paused reading) the clock restarts.
    """

    __slots__ = ("_loop", "_limit", "_on_expire", "_held", "_pending", "_since", "_handle")

    def __init__(self, loop: asyncio.AbstractEventLoop, limit: float, on_expire: Callable[[], None],
                 held: Callable[[], bool], pending: Callable[[], int]) -> None:
        self._loop = loop
        self._limit = limit
        self._on_expire = on_expire
        self._held = held
        self._pending = pending
        self._since = 0.0
        self._handle: asyncio.TimerHandle | None = None

    @property
    def armed(self) -> bool:
        """True while a check is scheduled."""
        return self._handle is not None

    def started(self) -> None:
        """An unfinished packet began now."""
        self._since = self._loop.time()
        if self._handle is None:
            self._handle = self._loop.call_at(self._since + self._limit, self._check)

    def detach(self) -> None:
        """Disarm for good and drop the callbacks (they point back at the owner)."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._on_expire = _nothing
        self._held = _false
        self._pending = _zero

    def _check(self) -> None:
        self._handle = None
        if not self._pending():
            return
        now = self._loop.time()
        if self._held():
            self._since = now
        deadline = self._since + self._limit
        if deadline > now:
            self._handle = self._loop.call_at(deadline, self._check)
        else:
            self._on_expire()


def _zero() -> int:
    """The ``pending`` of a detached timer."""
    return 0
