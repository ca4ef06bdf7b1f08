"""Auth layer: failed logins per source address, with backoff. Stdlib only; pure (takes ``now``).

Every failed login from an address counts; from the ``free``-th failure on,
the address is *blocked* for ``base`` seconds, doubled with each further
failure up to ``ceiling``. A login from a blocked address is refused
without checking its password (the guess is not even tried, and costs the
broker no hash) and does not count: a client that keeps reconnecting with
the right password behind the same address gets in once the block ends. A success clears the address; an address that has not
failed for ``forget`` seconds is forgotten. At most ``capacity`` addresses
are tracked: the oldest entries go first, so a flood of addresses costs a
bounded amount of memory.

    throttle = LoginThrottle()
    if throttle.blocked(host, now): refuse
    elif password wrong: throttle.failed(host, now)
    else: throttle.succeeded(host)
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LoginThrottle"]


@dataclass(slots=True)
class _Record:
    failures: int
    last: float
    until: float


class LoginThrottle:
    """Failed logins per address (see the module doc); loop thread only."""

    __slots__ = ("free", "base", "ceiling", "forget", "capacity", "_records")

    def __init__(self, *, free: int = 5, base: float = 1.0, ceiling: float = 60.0,
                 forget: float = 600.0, capacity: int = 65536) -> None:
        self.free = free
        self.base = base
        self.ceiling = ceiling
        self.forget = forget
        self.capacity = capacity
        self._records: dict[str, _Record] = {}

    def blocked(self, address: str, now: float) -> float:
        """Seconds ``address`` stays blocked (0.0: it may try)."""
        record = self._records.get(address)
        if record is None:
            return 0.0
        if now - record.last > self.forget:
            del self._records[address]
            return 0.0
        return max(0.0, record.until - now)

    def failed(self, address: str, now: float) -> None:
        """A login from ``address`` failed its password check."""
        record = self._records.pop(address, None)
        if record is None or now - record.last > self.forget:
            record = _Record(0, now, now)
        record.failures += 1
        record.last = now
        over = record.failures - self.free
        if over >= 0:
            record.until = now + min(self.ceiling, self.base * 2.0 ** min(over, 32))
        self._records[address] = record  # re-inserted: the dict keeps recency order
        if len(self._records) > self.capacity:
            del self._records[next(iter(self._records))]

    def succeeded(self, address: str) -> None:
        """A login from ``address`` succeeded: its failures are forgotten."""
        self._records.pop(address, None)

    def __len__(self) -> int:
        return len(self._records)
