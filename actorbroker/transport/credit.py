"""Transport layer: the read credits one connection has outstanding, and their time bound. Stdlib, asyncio, ports.

Each ``Inbound`` carries a :class:`~actorbroker.ports.ReadCredit`; with
``max_batches`` of them outstanding the connection stops reading. A credit
comes back when everything its read routed was taken by the subscribers'
sessions (docs/architecture.md, "Backpressure"), which is normally soon;
:class:`ReadCredits` also bounds it in time: while reading is paused for
credit, a credit older than ``timeout`` is given back whatever still holds
it (counted ``credits_expired``). That is the safety net for a credit that
would never come back (it sat in the inbox of an actor that crashed); a
subscriber that is only stuck gives its credits back itself, sooner.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable

from actorbroker.ports import ReadCredit

from .stats import TransportStats

__all__ = ["ReadCredits"]


class ReadCredits:
    """The outstanding read credits of one connection, oldest first."""

    __slots__ = ("_conn_id", "_loop", "_max", "_on_free", "_out", "_stats", "_timeout", "_timer")

    def __init__(self, conn_id: int, loop: asyncio.AbstractEventLoop, max_batches: int,
                 timeout: float, stats: TransportStats, on_free: Callable[[], None]) -> None:
        self._conn_id = conn_id
        self._loop = loop
        self._max = max_batches
        self._timeout = timeout
        self._stats = stats
        self._on_free = on_free  # called when a credit came back and reading may resume
        self._out: deque[ReadCredit] = deque()
        self._timer: asyncio.TimerHandle | None = None

    @property
    def exhausted(self) -> bool:
        """True while ``max_batches`` credits are outstanding: reading must pause."""
        return len(self._out) >= self._max

    def issue(self) -> ReadCredit:
        """A credit for the next Inbound."""
        credit = ReadCredit(self._back, self._conn_id, self._loop.time())
        self._out.append(credit)
        return credit

    def wait(self) -> None:
        """Reading paused for credit: give the oldest back at the latest after ``timeout``."""
        if self._timer is None and self._out:
            self._timer = self._loop.call_at(self._out[0].born + self._timeout, self._expire)

    def batch_done(self) -> None:
        """The receiver of the oldest Inbound handed nothing on: its credit is back."""
        if self._out:
            self._out[0].take()

    def cancel(self) -> None:
        """The connection is gone: no more time bound (late credits still come back here)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def detach(self) -> None:
        """The connection is gone: drop its callback, so that nothing here points back at it.

        Credits still out keep this object alive (their ``take`` lands here), but no
        longer the connection: without the cycle, reference counting frees the
        connection and its buffers as soon as the last outside reference goes,
        instead of at the next full collection (which a quiet broker may never run).
        """
        self.cancel()
        self._on_free = _nothing

    def _back(self, credit: ReadCredit) -> None:
        self._out.remove(credit)  # at most max_batches long
        if not self.exhausted:
            self.cancel()
            self._on_free()

    def _expire(self) -> None:
        self._timer = None
        due = self._loop.time() - self._timeout
        out = self._out
        while out and out[0].born <= due:
            self._stats.credits_expired += 1
            out[0].expire()  # back through _back, which may resume reading
        if self.exhausted:
            self.wait()


def _nothing() -> None:
    """The callback of a detached :class:`ReadCredits`."""
