"""Persistence layer: which commit log segments may be deleted. Imports the stdlib only.

A pure function of the segment list, the policy, the time and the *needed
offset*: the lowest offset any durable session (or the latest checkpoint)
still needs. The commit log carries the plan out
(:meth:`actorbroker.persistence.log.CommitLog.apply_retention`).

Segments go oldest first, and only while all of these hold:

* the segment is not the active one (the one appends go to);
* it ends at or below the needed offset: no session needs a record in it;
* it is older than ``max_age`` (by its last write), or the log is larger
  than ``max_bytes``, or larger than ``max_disk_bytes``.

``max_age`` and ``max_bytes`` keep history for the data pipeline;
``max_disk_bytes`` is the hard bound. When the log stays above it because
sessions need the rest, the plan says so (:attr:`RetentionPlan.over_limit`):
the storage actor then refuses QoS>0 publishes as on a full disk (0x97), and
the log itself refuses appends beyond the bound.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["RetentionPlan", "RetentionPolicy", "SegmentInfo", "plan_retention"]


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    """Limits; 0 means no limit of that kind. ``max_age`` is in seconds."""

    max_age: float = 0.0
    max_bytes: int = 0
    max_disk_bytes: int = 0

    @classmethod
    def from_config(
        cls, retention_hours: float, retention_bytes: int, max_disk_bytes: int
    ) -> RetentionPolicy:
        """The policy of the [storage] options of the same names."""
        return cls(retention_hours * 3600.0, retention_bytes, max_disk_bytes)


@dataclass(frozen=True, slots=True)
class SegmentInfo:
    """One segment as retention sees it.

    ``size`` counts data bytes (offsets), ``disk_bytes`` the whole file;
    ``last_write`` is the wall-clock time of its last write (file mtime),
    seconds since the epoch.
    """

    base: int
    size: int
    disk_bytes: int
    last_write: float
    active: bool = False

    @property
    def end(self) -> int:
        """Offset just after its last record."""
        return self.base + self.size


@dataclass(frozen=True, slots=True)
class RetentionPlan:
    """Segments to delete (bases, oldest first), bytes left, and why deletion stopped.

    ``over_limit``: the log stays above ``max_disk_bytes`` (less the reserve) after the plan.
    ``pinned``: a segment that the limits would delete is needed by a session.
    """

    delete: tuple[int, ...]
    kept_bytes: int
    over_limit: bool
    pinned: bool


def plan_retention(
    segments: Sequence[SegmentInfo],
    policy: RetentionPolicy,
    *,
    now: float,
    needed_from: int | None,
    reserve: int = 0,
) -> RetentionPlan:
    """The segments ``policy`` deletes at time ``now`` (seconds since the epoch).

    ``needed_from`` is the lowest offset still needed (None: nothing is).
    ``reserve`` is room to keep free under ``max_disk_bytes`` for the appends
    to come (the log passes its segment size).
    """
    disk_bound = policy.max_disk_bytes - reserve
    ordered = sorted(segments, key=lambda s: s.base)
    total = sum(s.disk_bytes for s in ordered)
    delete: list[int] = []
    pinned = False
    for segment in ordered:
        expired = policy.max_age > 0 and now - segment.last_write > policy.max_age
        too_big = policy.max_bytes > 0 and total > policy.max_bytes
        over_disk = policy.max_disk_bytes > 0 and total > disk_bound
        if not (expired or too_big or over_disk) or segment.active:
            break
        if needed_from is not None and segment.end > needed_from:
            pinned = True
            break
        delete.append(segment.base)
        total -= segment.disk_bytes
    over_limit = policy.max_disk_bytes > 0 and total > disk_bound
    return RetentionPlan(tuple(delete), total, over_limit, pinned)
