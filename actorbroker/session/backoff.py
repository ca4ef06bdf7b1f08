"""Session layer: exponential backoff with jitter, for every retry the broker makes. Stdlib only.

One policy for everything that is tried again after a failure or a
silence: retransmission of unacknowledged QoS 1/2 PUBLISHes to MQTT 3.x
clients, probing a full disk, re-sending journal records the storage
refused. Pure: the caller keeps the attempt count and owns the timer (the
core asks for timers, it does not make them); randomness is injected so
that tests are exact.

The n-th retry (n = 0, 1, ...) waits ``min(cap, base * factor ** n)``
seconds, spread by ``jitter``: a fraction of it drawn uniformly from
``[-jitter, +jitter]`` ("equal jitter" around the nominal delay), so that
many clients or sessions failing at once do not retry in lockstep.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["Backoff", "BackoffPolicy", "Retransmission"]


@dataclass(frozen=True, slots=True)
class BackoffPolicy:
    """``base`` seconds, times ``factor`` per attempt, at most ``cap``, +/- ``jitter`` (a fraction)."""

    base: float = 1.0
    factor: float = 2.0
    cap: float = 60.0
    jitter: float = 0.2

    def __post_init__(self) -> None:
        if not self.base > 0:
            raise ValueError(f"base must be > 0, not {self.base}")
        if self.factor < 1:
            raise ValueError(f"factor must be >= 1, not {self.factor}")
        if self.cap < self.base:
            raise ValueError(f"cap ({self.cap}) must be >= base ({self.base})")
        if not 0 <= self.jitter < 1:
            raise ValueError(f"jitter must be in [0, 1), not {self.jitter}")

    def nominal(self, attempt: int) -> float:
        """The delay before retry ``attempt`` (0-based), without jitter."""
        if attempt < 0:
            raise ValueError("attempt must be >= 0")
        # Stop multiplying once past the cap (factor ** attempt would overflow).
        delay = self.base
        for _ in range(attempt):
            delay *= self.factor
            if delay >= self.cap:
                return self.cap
        return min(delay, self.cap)

    def delay(self, attempt: int, rand: Callable[[], float] = random.random) -> float:
        """The jittered delay before retry ``attempt``; ``rand()`` returns [0, 1)."""
        nominal = self.nominal(attempt)
        return nominal * (1.0 + self.jitter * (2.0 * rand() - 1.0))


@dataclass(slots=True)
class Backoff:
    """An attempt counter over a :class:`BackoffPolicy`: :meth:`next` after a failure, :meth:`reset` on success."""

    policy: BackoffPolicy = field(default_factory=BackoffPolicy)
    rand: Callable[[], float] = random.random
    attempt: int = 0

    def next(self) -> float:
        """The delay before the next retry; counts the attempt."""
        delay = self.policy.delay(self.attempt, self.rand)
        self.attempt += 1
        return delay

    def reset(self) -> None:
        """Success: the next failure starts again from ``base``."""
        self.attempt = 0

    @property
    def failing(self) -> bool:
        """True after a failure that no success has followed."""
        return self.attempt > 0


class Retransmission:
    """When to send an MQTT 3.x client's unacknowledged QoS 1/2 flows again while it stays connected.

    One timer per session, not per message: :meth:`armed` after the first
    QoS 1/2 PUBLISH goes out; when it fires, :meth:`due` compares the oldest
    packet id in flight with the one seen when it was armed. The same one
    means no progress: resend every flow (PUBLISH with DUP=1, or PUBREL)
    and wait longer (backoff); another one means the client is working
    through them: wait ``base`` again. No flow left: the timer stops.
    MQTT 5 forbids this ([MQTT-4.4.0-1]): resends happen on reconnect only.
    """

    __slots__ = ("_backoff", "_oldest", "armed")

    def __init__(self, policy: BackoffPolicy, rand: Callable[[], float] = random.random) -> None:
        self._backoff = Backoff(policy, rand)
        self._oldest: int | None = None
        self.armed = False

    def arm(self, oldest: int | None) -> float | None:
        """A flow went out: the delay to arm the timer with, None if armed already or nothing flies."""
        if self.armed or oldest is None:
            return None
        self.armed = True
        self._oldest = oldest
        self._backoff.reset()
        return self._backoff.next()

    def due(self, oldest: int | None) -> tuple[bool, float | None]:
        """The timer fired: (resend now?, delay to re-arm with or None to stop)."""
        self.armed = False
        if oldest is None:
            return False, None
        resend = oldest == self._oldest
        if not resend:
            self._backoff.reset()
        self._oldest = oldest
        self.armed = True
        return resend, self._backoff.next()

    def reset(self) -> None:
        """The connection ended: nothing is armed any more."""
        self.armed = False
        self._oldest = None
        self._backoff.reset()
