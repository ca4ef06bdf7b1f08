"""Ops layer: bounds on HTTP connections (count, slow requests) in front of aiohttp. Stdlib only.

aiohttp parses requests safely (line, header and body limits) but waits for
a request's headers as long as the client likes: fifty clients each
sending a header byte a minute (slowloris) would hold fifty sockets for
ever. :class:`ConnectionGuard` wraps aiohttp's protocol factory:

* at most ``max_connections`` HTTP connections at once; one more is closed
  as soon as it is accepted;
* a connection that is not in a request (still sending its headers, or idle
  between requests) for ``idle_timeout`` seconds is closed.

The handlers mark a request's start and end (:meth:`ConnectionGuard.begin`,
:meth:`~ConnectionGuard.end`, from a middleware): a long response (a big
tree) is never cut. One timer per connection, re-armed lazily: no cost
per byte.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

__all__ = ["ConnectionGuard"]

log = logging.getLogger("actorbroker.http")


class _Guarded(asyncio.Protocol):
    """Forwards to aiohttp's protocol; closes the connection when it outstays its welcome."""

    def __init__(self, guard: ConnectionGuard, inner: Any) -> None:
        self._guard = guard
        self._inner = inner
        self.transport: asyncio.Transport | None = None
        self.busy = 0                      # requests in progress
        self.since = guard.loop.time()     # when it last became idle
        self._timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        if not self._guard.admit(self):
            transport.close()
            return
        self._inner.connection_made(transport)
        self._arm(self._guard.idle_timeout)

    def data_received(self, data: bytes) -> None:
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        result: bool | None = self._inner.eof_received()
        return result

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._guard.release(self):
            self._inner.connection_lost(exc)

    def _arm(self, delay: float) -> None:
        self._timer = self._guard.loop.call_later(delay, self._check)

    def _check(self) -> None:
        self._timer = None
        if self.transport is None or self.transport.is_closing():
            return
        if self.busy:
            self._arm(self._guard.idle_timeout)
            return
        left = self.since + self._guard.idle_timeout - self._guard.loop.time()
        if left > 0:
            self._arm(left)
            return
        self._guard.timeouts += 1
        self.transport.abort()  # no request in time: a slow or idle client


class ConnectionGuard:
    """Counts HTTP connections and closes the slow ones (see the module doc)."""

    def __init__(self, factory: Callable[[], Any], *, max_connections: int = 256,
                 idle_timeout: float = 10.0) -> None:
        self.loop = asyncio.get_running_loop()
        self.factory = factory
        self.max_connections = max_connections
        self.idle_timeout = idle_timeout
        self.open: set[_Guarded] = set()
        self.refused = 0    # connections closed at once: max_connections reached
        self.timeouts = 0   # connections closed for sending no request in time
        self._by_transport: dict[Any, _Guarded] = {}

    def __call__(self) -> asyncio.Protocol:
        return _Guarded(self, self.factory())

    def admit(self, conn: _Guarded) -> bool:
        if len(self.open) >= self.max_connections:
            self.refused += 1
            if self.refused == 1 or self.refused % 1000 == 0:
                log.warning("http: %d connection(s) refused so far: max %d at once",
                            self.refused, self.max_connections)
            return False
        self.open.add(conn)
        self._by_transport[conn.transport] = conn
        return True

    def release(self, conn: _Guarded) -> bool:
        """Forget ``conn``; False if it was never admitted."""
        if conn not in self.open:
            return False
        self.open.discard(conn)
        self._by_transport.pop(conn.transport, None)
        return True

    def begin(self, transport: Any) -> None:
        """A request's headers arrived on ``transport``."""
        conn = self._by_transport.get(transport)
        if conn is not None:
            conn.busy += 1

    def end(self, transport: Any) -> None:
        """The response to that request was written."""
        conn = self._by_transport.get(transport)
        if conn is not None:
            conn.busy -= 1
            conn.since = self.loop.time()

    def close_all(self) -> None:
        """Abort every connection (the listener is stopping)."""
        for conn in list(self.open):
            if conn.transport is not None:
                conn.transport.abort()
