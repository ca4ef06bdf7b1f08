"""Restart strategies and restart intensity, as pure functions (stdlib only).

No actors, no loop, no clock: :func:`decide` takes the children in start
order, the one that exited, why, the restart history and ``now``, and returns
a :class:`Plan` plus the new history. The supervisor carries the plan out.
Erlang semantics:

* one_for_one: restart the child that exited;
* one_for_all: stop all others (reverse start order), restart all;
* rest_for_one: stop those started after it (reverse order), restart it and them;
* temporary children are never restarted and their specs are dropped, also
  when they are stopped as siblings; transient ones only after an abnormal
  exit;
* intensity: if more than ``max_restarts`` restarts fall within ``period``
  seconds, the supervisor stops all children and fails (escalates).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from enum import Enum

from supervisors.reasons import ExitReason, is_abnormal
from supervisors.spec import Restart

__all__ = ["Intensity", "Plan", "Strategy", "decide", "wants_restart"]


class Strategy(Enum):
    """Which siblings restart with a child that exited."""

    ONE_FOR_ONE = "one_for_one"
    ONE_FOR_ALL = "one_for_all"
    REST_FOR_ONE = "rest_for_one"


@dataclass(frozen=True, slots=True)
class Intensity:
    """At most ``max_restarts`` restarts in any ``period`` seconds (Erlang: 1 in 5)."""

    max_restarts: int = 1
    period: float = 5.0

    def __post_init__(self) -> None:
        if self.max_restarts < 0 or not self.period > 0:
            raise ValueError("intensity needs max_restarts >= 0 and period > 0")


@dataclass(frozen=True, slots=True)
class Plan:
    """What a supervisor does about one exit.

    Attributes:
        escalate: too many restarts: stop every child, then fail.
        stop: running siblings to stop first, in this (reverse start) order.
        start: children to start, in this (start) order.
        drop: children whose specs are removed (temporary ones).
    """

    escalate: bool = False
    stop: tuple[Hashable, ...] = ()
    start: tuple[Hashable, ...] = ()
    drop: tuple[Hashable, ...] = ()


def wants_restart(restart: Restart, reason: ExitReason) -> bool:
    """Erlang's rule: permanent always, transient if abnormal, temporary never."""
    if restart is Restart.PERMANENT:
        return True
    if restart is Restart.TRANSIENT:
        return is_abnormal(reason)
    return False


def _record(
    history: tuple[float, ...], now: float, intensity: Intensity
) -> tuple[tuple[float, ...], bool]:
    """Add a restart at ``now``; False if that exceeds the intensity.

    ``history`` is in time order; only the restarts inside the window are
    kept, and never more than ``max_restarts + 1`` of them.
    """
    start = bisect_right(history, now - intensity.period)
    kept = history[start:][-(intensity.max_restarts + 1) :] + (now,)
    return kept[-(intensity.max_restarts + 1) :], len(kept) <= intensity.max_restarts


def decide(
    strategy: Strategy,
    children: Sequence[tuple[Hashable, Restart]],
    exited: Hashable,
    reason: ExitReason,
    history: tuple[float, ...],
    now: float,
    intensity: Intensity,
) -> tuple[Plan, tuple[float, ...]]:
    """Plan the response to ``exited`` leaving with ``reason``.

    ``children`` lists every child spec in start order (running or not), with
    its restart type; ``exited`` must be among them. Returns the plan and the
    restart history to keep (timestamps of recent restarts).
    """
    ids = [child_id for child_id, _ in children]
    restart_of = dict(children)
    if exited not in restart_of:
        raise KeyError(exited)
    if not wants_restart(restart_of[exited], reason):
        dropped = (exited,) if restart_of[exited] is Restart.TEMPORARY else ()
        return Plan(drop=dropped), history
    history, within = _record(history, now, intensity)
    if not within:
        return Plan(escalate=True, stop=tuple(reversed(ids))), history
    if strategy is Strategy.ONE_FOR_ONE:
        return Plan(start=(exited,)), history
    index = ids.index(exited)
    siblings = ids if strategy is Strategy.ONE_FOR_ALL else ids[index:]
    others = [child_id for child_id in siblings if child_id != exited]
    temporary = tuple(c for c in others if restart_of[c] is Restart.TEMPORARY)
    return (
        Plan(
            stop=tuple(reversed(others)),
            start=tuple(c for c in siblings if c not in temporary),
            drop=temporary,
        ),
        history,
    )
