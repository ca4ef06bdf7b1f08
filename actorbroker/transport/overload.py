"""Transport layer: is the broker overloaded? Imports stdlib and asyncio only.

:class:`OverloadGuard` samples, every ``interval`` seconds on the loop, the
process's resident memory (/proc/self/statm) and the event loop's lag (how
late its own timer fires: the time every callback waits behind the others).
While either is over its limit (0: not watched), :attr:`busy` says why, and
listeners refuse new MQTT connections at their CONNECT (v5 CONNACK 0x89
Server busy, v3 0x03 Server unavailable) instead of taking on work that
would make the broker fall over; connections already open are served as
before. It clears at the first sample under the limits. Entering and
leaving the state are logged.
"""

from __future__ import annotations

import asyncio
import logging
import os

__all__ = ["OverloadGuard", "resident_bytes"]

log = logging.getLogger("actorbroker.transport")

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def resident_bytes() -> int | None:
    """This process's resident set, or None where /proc is not available."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


class OverloadGuard:
    """Memory and loop-lag limits, sampled on ``loop`` (start/stop on the loop thread)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, max_memory: int = 0,
                 max_loop_lag: float = 0.0, interval: float = 0.25) -> None:
        self._loop = loop
        self._max_memory = max_memory
        self._max_lag = max_loop_lag
        self._interval = interval
        self._due = 0.0
        self._handle: asyncio.TimerHandle | None = None
        #: Why new connections are refused now, or None.
        self.busy: str | None = None

    @property
    def watching(self) -> bool:
        """True if any limit is set."""
        return bool(self._max_memory or self._max_lag)

    def start(self) -> None:
        """Begin sampling (nothing to do without limits)."""
        if self.watching and self._handle is None:
            self._due = self._loop.time() + self._interval
            self._handle = self._loop.call_at(self._due, self._sample)

    def stop(self) -> None:
        """Stop sampling."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _sample(self) -> None:
        now = self._loop.time()
        lag = now - self._due
        reasons = []
        if self._max_lag and lag > self._max_lag:
            reasons.append(f"event loop lag {lag:.2f}s over max_loop_lag {self._max_lag:g}s")
        if self._max_memory:
            rss = resident_bytes()
            if rss is not None and rss > self._max_memory:
                reasons.append(f"resident memory {rss // 1024 // 1024} MiB over max_memory"
                               f" {self._max_memory // 1024 // 1024} MiB")
        busy = "; ".join(reasons) or None
        if busy and not self.busy:
            log.warning("overloaded, refusing new connections: %s", busy)
        elif self.busy and not busy:
            log.warning("no longer overloaded: accepting new connections again")
        self.busy = busy
        self._due = now + self._interval
        self._handle = self._loop.call_at(self._due, self._sample)
