"""metrics.Histogram: Prometheus-style cumulative buckets and bucket-bound quantiles."""

from __future__ import annotations

import math

from actorbroker.metrics import Histogram


def test_buckets_are_cumulative_and_end_with_the_count() -> None:
    h = Histogram((0.001, 0.01, 0.1))
    for value in (0.0005, 0.001, 0.002, 0.05, 0.05, 3.0):
        h.observe(value)
    assert h.cumulative() == [(0.001, 2), (0.01, 3), (0.1, 5), (math.inf, 6)]
    assert h.count == 6 and math.isclose(h.total, 3.1035)


def test_quantiles_are_the_upper_bound_of_their_bucket() -> None:
    h = Histogram((0.001, 0.01, 0.1))
    assert h.quantile(0.99) == 0.0  # empty
    for _ in range(98):
        h.observe(0.0002)
    h.observe(0.05)
    h.observe(7.0)  # above every bound: reported as the last bound, never inf
    assert h.quantile(0.5) == 0.001
    assert h.quantile(0.99) == 0.1
    assert h.quantile(1.0) == 0.1
