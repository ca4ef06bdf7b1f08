"""Transport layer: an accept loop that outlives EMFILE. Imports stdlib and asyncio only.

Why our own loop instead of ``loop.create_server``'s (measured on this
machine, Python 3.11.7, uvloop 0.23, RLIMIT_NOFILE 40; see
docs/benchmarks.md and tests/integration/transport/test_transport_emfile.py):

* uvloop (libuv) survives EMFILE with libuv's "EMFILE trick": it closes a
  reserved descriptor, accepts every pending connection and closes it at
  once, then reopens the reserve. The listener lives on, but the dropped
  clients are never reported (no log line, no exception handler call, no
  counter). And, reading uvloop's source (handles/streamserver.pyx), any
  other error status libuv hands to the listen callback (ENOBUFS, ENOMEM,
  EMFILE when the reserve could not be reopened) goes to ``_fatal_error``,
  which closes the listening handle and reports only non-OSError
  exceptions: the listener would be gone without a word. (We could not
  provoke that path in a test; the trick itself recovered every time.)
* asyncio's selector loop logs EMFILE and re-arms the listener a second
  later, but (3.11) does not leave its accept loop after the error: one
  readable event logs up to ``backlog`` times and schedules as many
  re-arms (696 log calls in about 6 s in our run).

:class:`Acceptor` watches a non-blocking listening socket with
``loop.add_reader``, accepts up to ``burst`` sockets per wake-up and hands
each to a callback. ECONNABORTED (the client gave up in the backlog) is
skipped. Any other failure of ``accept()`` (EMFILE, ENFILE, ENOBUFS,
ENOMEM, ...) is counted, logged (rate limited) and answered by removing the
reader for an exponentially growing pause, ``backoff_min`` doubling up to
``backoff_max``; the first successful accept resets it and logs the
recovery. Pending clients wait in the kernel's backlog meanwhile instead of
being dropped. Nothing stops the acceptor but :meth:`stop`.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable
from typing import Any

from .stats import LogLimiter, TransportStats

__all__ = ["Acceptor"]

log = logging.getLogger("actorbroker.transport")


class Acceptor:
    """Accepts connections on ``sock`` and passes them to ``on_accept(sock, address)``."""

    def __init__(self, loop: asyncio.AbstractEventLoop, sock: socket.socket,
                 on_accept: Callable[[socket.socket, Any], None], stats: TransportStats, *,
                 burst: int = 64, backoff_min: float = 0.05, backoff_max: float = 2.0) -> None:
        self._loop = loop
        self._sock = sock
        self._fd = sock.fileno()
        self._on_accept = on_accept
        self._stats = stats
        self._burst = burst
        self._backoff_min = backoff_min
        self._backoff_max = backoff_max
        self._delay = 0.0        # current back-off; 0 when healthy
        self._errors = 0         # accept failures in the current episode
        self._timer: asyncio.TimerHandle | None = None
        self._running = False
        self._limiter = LogLimiter(log)
        self._name = _name(sock)

    def start(self) -> None:
        """Begin accepting."""
        if not self._running:
            self._running = True
            self._loop.add_reader(self._fd, self._on_readable)

    def stop(self) -> None:
        """Stop accepting for good (the socket is the caller's to close)."""
        if self._running:
            self._running = False
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            else:
                self._loop.remove_reader(self._fd)

    def _on_readable(self) -> None:
        for _ in range(self._burst):
            try:
                conn, address = self._sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except ConnectionAbortedError:
                continue  # ECONNABORTED: the client left the backlog before we came
            except OSError as exc:
                self._back_off(exc)
                return
            if self._delay:
                log.warning("listener %s: accepting again after %d failed accept() calls",
                            self._name, self._errors)
                self._delay = 0.0
                self._errors = 0
            try:
                self._on_accept(conn, address)
            except Exception:  # a bug in the callback must not stop the listener
                log.exception("listener %s: handling an accepted socket failed", self._name)
                conn.close()
            if not self._running:
                return

    def _back_off(self, exc: OSError) -> None:
        self._stats.accept_errors += 1
        self._errors += 1
        self._delay = min(self._backoff_max, self._delay * 2 if self._delay else self._backoff_min)
        self._loop.remove_reader(self._fd)
        self._timer = self._loop.call_later(self._delay, self._resume)
        self._limiter.warning(self._loop.time(), "listener %s: accept() failed: %s;"
                              " pausing accepts for %.2fs", self._name, exc, self._delay)

    def _resume(self) -> None:
        self._timer = None
        if self._running:
            self._loop.add_reader(self._fd, self._on_readable)


def _name(sock: socket.socket) -> str:
    try:
        host, port = sock.getsockname()[:2]
    except OSError:
        return "?"
    return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"
