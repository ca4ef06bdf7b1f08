"""Exponential backoff with jitter, and the MQTT 3.x in-session retransmission decisions."""

from __future__ import annotations

import pytest

from actorbroker.session.backoff import Backoff, BackoffPolicy, Retransmission


def test_delays_grow_by_the_factor_up_to_the_cap() -> None:
    policy = BackoffPolicy(base=0.5, factor=3.0, cap=10.0, jitter=0.0)
    assert [policy.nominal(n) for n in range(5)] == [0.5, 1.5, 4.5, 10.0, 10.0]
    assert policy.nominal(10_000) == 10.0, "no overflow far past the cap"


@pytest.mark.parametrize(("rand", "factor"), [(0.0, 0.8), (0.5, 1.0), (0.9999999, 1.2)])
def test_jitter_spreads_each_delay_around_its_nominal_value(rand: float, factor: float) -> None:
    policy = BackoffPolicy(base=2.0, factor=2.0, cap=100.0, jitter=0.2)
    assert policy.delay(1, lambda: rand) == pytest.approx(4.0 * factor)


def test_the_attempt_counter_resets_on_success() -> None:
    backoff = Backoff(BackoffPolicy(1.0, 2.0, 60.0, 0.0))
    assert [backoff.next() for _ in range(3)] == [1.0, 2.0, 4.0] and backoff.failing
    backoff.reset()
    assert backoff.next() == 1.0


@pytest.mark.parametrize("bad", [dict(base=0), dict(factor=0.5), dict(cap=0.1, base=1.0),
                                 dict(jitter=1.0)])
def test_nonsense_policies_are_refused(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        BackoffPolicy(**bad)


def test_retransmission_resends_only_without_progress_and_backs_off() -> None:
    retry = Retransmission(BackoffPolicy(20.0, 2.0, 300.0, 0.0))
    assert retry.arm(None) is None, "nothing in flight: no timer"
    assert retry.arm(5) == 20.0 and retry.armed
    assert retry.arm(6) is None, "armed already"
    assert retry.due(5) == (True, 40.0), "the same oldest flow: resend, wait longer"
    assert retry.due(5) == (True, 80.0)
    assert retry.due(9) == (False, 20.0), "progress: no resend, back to the base wait"
    assert retry.due(None) == (False, None) and not retry.armed
