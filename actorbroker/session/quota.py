"""Session layer: the per-client publish quota, a token bucket. Stdlib only.

:class:`PublishQuota` says how many PUBLISH packets a client may send in a
burst (``burst``) and at what sustained rate (``rate`` per second); it is
part of the :class:`~.config.SessionConfig`. :class:`TokenBucket` is the
state of one client: it reads no clock, each :meth:`TokenBucket.take` is
given ``now`` (monotonic seconds). A client that finds the bucket empty has
exceeded its quota; the session core then closes its connection (MQTT 5:
DISCONNECT 0x97, Quota exceeded), as EMQX does for its per-client limits.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PublishQuota", "TokenBucket"]


@dataclass(frozen=True, slots=True)
class PublishQuota:
    """PUBLISH packets a client may send: ``rate`` per second (0: unlimited), ``burst`` at once.

    ``burst`` 0 means "the rate, at least 1" (the ``[limits]`` default).
    """

    rate: float = 0.0
    burst: float = 0.0

    def __post_init__(self) -> None:
        if self.rate < 0 or self.burst < 0:
            raise ValueError("publish quota rate and burst must be >= 0")

    @property
    def unlimited(self) -> bool:
        """True when no quota applies."""
        return self.rate == 0

    @property
    def capacity(self) -> float:
        """Tokens the bucket holds when full: ``burst``, or the rate (at least 1)."""
        return self.burst if self.burst > 0 else max(self.rate, 1.0)


class TokenBucket:
    """The tokens one client has left; one per PUBLISH, refilled at the quota's rate.

    The bucket starts full. It never refills past its capacity, and time
    going backwards (``now`` earlier than before) adds nothing.
    """

    __slots__ = ("quota", "tokens", "_last")

    def __init__(self, quota: PublishQuota, now: float | None = None) -> None:
        self.quota = quota
        self.tokens = quota.capacity
        self._last = now

    def take(self, now: float, count: float = 1.0) -> bool:
        """Spend ``count`` tokens at ``now``; False (nothing spent) if there are not enough."""
        quota = self.quota
        if quota.unlimited:
            return True
        last = self._last
        if last is not None and now > last:
            self.tokens = min(quota.capacity, self.tokens + (now - last) * quota.rate)
        if last is None or now > last:
            self._last = now
        if self.tokens < count:
            return False
        self.tokens -= count
        return True

    def refill(self, now: float | None = None) -> None:
        """Fill the bucket again (a new connection starts with its full burst)."""
        self.tokens = self.quota.capacity
        self._last = now
