"""Transport layer: which new sockets a listener takes, per source address. Imports stdlib only.

:class:`Admission` answers, for each accepted socket, whether its source IP
may have one more connection: at most ``per_ip`` live at once (0: no
limit) and at most ``rate`` new ones a second on average, ``burst`` at
once (a token bucket per address; 0: no limit). A refused socket is closed
by the listener before any MQTT is read (it has no version to be told in).
Memory stays bounded under a flood from many addresses: a bucket that has
refilled says nothing a new one would not, so buckets are dropped when
full, swept once their number doubles.
"""

from __future__ import annotations

__all__ = ["Admission"]


class Admission:
    """Live connections and connect-rate buckets per source address (loop thread only)."""

    __slots__ = ("_per_ip", "_rate", "_burst", "_live", "_buckets", "_sweep_at")

    def __init__(self, per_ip: int = 0, rate: float = 0.0, burst: float = 0.0) -> None:
        if per_ip < 0 or rate < 0 or burst < 0:
            raise ValueError("per_ip, rate and burst must not be negative")
        self._per_ip = per_ip
        self._rate = rate
        self._burst = max(burst or rate, 1.0)
        self._live: dict[str, int] = {}
        self._buckets: dict[str, tuple[float, float]] = {}  # ip -> (tokens, when)
        self._sweep_at = 1024

    @property
    def limited(self) -> bool:
        """False when neither limit is set (the listener then skips the bookkeeping)."""
        return bool(self._per_ip or self._rate)

    def admit(self, ip: str, now: float) -> str | None:
        """Count a new connection from ``ip``; None if admitted, else why not."""
        if self._per_ip and self._live.get(ip, 0) >= self._per_ip:
            return f"{self._per_ip} connections from {ip} already, the maximum per address"
        if self._rate:
            tokens, when = self._buckets.get(ip, (self._burst, now))
            tokens = min(self._burst, tokens + (now - when) * self._rate)
            if tokens < 1.0:
                self._buckets[ip] = (tokens, now)
                return f"{ip} connects faster than {self._rate:g} a second"
            self._buckets[ip] = (tokens - 1.0, now)
            if len(self._buckets) >= self._sweep_at:
                self._sweep(now)
        if self._per_ip:
            self._live[ip] = self._live.get(ip, 0) + 1
        return None

    def release(self, ip: str) -> None:
        """A connection from ``ip`` admitted earlier has ended."""
        if self._per_ip:
            left = self._live.get(ip, 0) - 1
            if left > 0:
                self._live[ip] = left
            else:
                self._live.pop(ip, None)

    def _sweep(self, now: float) -> None:
        full = [ip for ip, (tokens, when) in self._buckets.items()
                if tokens + (now - when) * self._rate >= self._burst]
        for ip in full:
            del self._buckets[ip]
        self._sweep_at = max(1024, 2 * len(self._buckets))
