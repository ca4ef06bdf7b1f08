"""Strategies and intensity as pure functions: no loop, no actors."""

from __future__ import annotations

import pytest

from supervisors import (
    KILLED,
    NOPROC,
    NORMAL,
    SHUTDOWN,
    Crash,
    Intensity,
    Restart,
    Strategy,
)
from supervisors.strategy import Plan, decide, wants_restart

P, T, X = Restart.PERMANENT, Restart.TRANSIENT, Restart.TEMPORARY
CRASH = Crash(RuntimeError("boom"))
ROOMY = Intensity(max_restarts=10, period=5)


@pytest.mark.parametrize(
    ("restart", "reason", "expected"),
    [
        (P, NORMAL, True), (P, SHUTDOWN, True), (P, CRASH, True), (P, KILLED, True),
        (T, NORMAL, False), (T, SHUTDOWN, False), (T, CRASH, True), (T, KILLED, True),
        (T, NOPROC, True),
        (X, NORMAL, False), (X, CRASH, False), (X, KILLED, False),
    ],
)  # fmt: skip
def test_wants_restart(restart: Restart, reason: object, expected: bool) -> None:
    assert wants_restart(restart, reason) is expected  # type: ignore[arg-type]


CHILDREN = [("a", P), ("b", P), ("tmp", X), ("c", P)]


@pytest.mark.parametrize(
    ("strategy", "exited", "plan"),
    [
        (Strategy.ONE_FOR_ONE, "b", Plan(start=("b",))),
        (
            Strategy.ONE_FOR_ALL, "b",
            Plan(stop=("c", "tmp", "a"), start=("a", "b", "c"), drop=("tmp",)),
        ),
        (Strategy.REST_FOR_ONE, "b", Plan(stop=("c", "tmp"), start=("b", "c"), drop=("tmp",))),
        (Strategy.REST_FOR_ONE, "c", Plan(start=("c",))),
        (
            Strategy.REST_FOR_ONE, "a",
            Plan(stop=("c", "tmp", "b"), start=("a", "b", "c"), drop=("tmp",)),
        ),
    ],
)  # fmt: skip
def test_plans(strategy: Strategy, exited: str, plan: Plan) -> None:
    got, history = decide(strategy, CHILDREN, exited, CRASH, (), 100.0, ROOMY)
    assert got == plan
    assert history == (100.0,)


def test_no_restart_keeps_or_drops_and_does_not_count() -> None:
    children = [("p", P), ("t", T), ("x", X)]
    for exited, plan in [("t", Plan()), ("x", Plan(drop=("x",)))]:
        got, history = decide(Strategy.ONE_FOR_ALL, children, exited, NORMAL, (1.0,), 2.0, ROOMY)
        assert got == plan and history == (1.0,)


def test_intensity_counts_restarts_in_a_sliding_window() -> None:
    limit = Intensity(max_restarts=2, period=10)
    history: tuple[float, ...] = ()
    for now in (0.0, 1.0):
        plan, history = decide(Strategy.ONE_FOR_ONE, [("a", P)], "a", CRASH, history, now, limit)
        assert not plan.escalate
    plan, history = decide(Strategy.ONE_FOR_ONE, [("a", P)], "a", CRASH, history, 9.0, limit)
    assert plan == Plan(escalate=True, stop=("a",))
    # Restarts older than `period` seconds no longer count.
    plan, history = decide(Strategy.ONE_FOR_ONE, [("a", P)], "a", CRASH, (0.0, 1.0), 11.5, limit)
    assert not plan.escalate and history == (11.5,)


def test_zero_restarts_escalates_at_once_and_stops_all_in_reverse() -> None:
    plan, _ = decide(Strategy.ONE_FOR_ONE, CHILDREN, "a", CRASH, (), 0.0, Intensity(0, 1))
    assert plan == Plan(escalate=True, stop=("c", "tmp", "b", "a"))


def test_unknown_child_and_bad_intensity() -> None:
    with pytest.raises(KeyError):
        decide(Strategy.ONE_FOR_ONE, CHILDREN, "zz", CRASH, (), 0.0, ROOMY)
    with pytest.raises(ValueError):
        Intensity(max_restarts=-1)
    with pytest.raises(ValueError):
        Intensity(period=0)
