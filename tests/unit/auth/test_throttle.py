"""Failed logins per address: blocked from the fifth on, with doubling backoff."""

from __future__ import annotations

from actorbroker.auth import LoginThrottle


def test_backoff_doubles_to_the_ceiling_and_success_clears() -> None:
    throttle = LoginThrottle(free=3, base=1.0, ceiling=8.0)
    for _ in range(2):
        throttle.failed("h", 0.0)
    assert throttle.blocked("h", 0.0) == 0.0
    throttle.failed("h", 0.0)
    assert throttle.blocked("h", 0.0) == 1.0
    throttle.failed("h", 1.0)
    assert throttle.blocked("h", 1.0) == 2.0
    for _ in range(10):
        throttle.failed("h", 5.0)
    assert throttle.blocked("h", 5.0) == 8.0
    assert throttle.blocked("other", 5.0) == 0.0
    throttle.succeeded("h")
    assert throttle.blocked("h", 5.0) == 0.0


def test_old_failures_are_forgotten_and_memory_is_bounded() -> None:
    throttle = LoginThrottle(free=1, forget=10.0, capacity=100)
    throttle.failed("h", 0.0)
    assert throttle.blocked("h", 0.5) > 0
    assert throttle.blocked("h", 11.0) == 0.0
    for n in range(1000):
        throttle.failed(f"10.0.{n // 256}.{n % 256}", 20.0)
    assert len(throttle) == 100
