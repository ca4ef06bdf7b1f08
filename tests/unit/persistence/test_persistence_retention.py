"""Retention: by age and by size, never past the needed offset, with a hard disk bound."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from actorbroker.errors import DiskFullError
from actorbroker.persistence import CommitLog, LogReader, RetentionPolicy, SegmentInfo, plan_retention

from .conftest import SEGMENT, number_of, numbered

HOUR = 3600.0
NOW = 1_700_000_000.0


def segs(*ages_hours: float, size: int = 1000) -> list[SegmentInfo]:
    """Segments of ``size`` data bytes, last written ``ages_hours`` ago; the last is active."""
    return [
        SegmentInfo(i * size, size, size + 16, NOW - age * HOUR, active=i == len(ages_hours) - 1)
        for i, age in enumerate(ages_hours)
    ]


def plan(segments: list[SegmentInfo], needed_from: int | None = None, **policy: float) -> tuple[int, ...]:
    found = plan_retention(segments, RetentionPolicy(**policy), now=NOW,  # type: ignore[arg-type]
                           needed_from=needed_from)
    return found.delete


def test_by_age_oldest_first_never_the_active_segment() -> None:
    assert plan(segs(50, 30, 10, 1), max_age=20 * HOUR) == (0, 1000)
    assert plan(segs(50, 40, 30), max_age=20 * HOUR) == (0, 1000)  # not the active one
    assert plan(segs(50, 30), max_age=100 * HOUR) == ()
    assert plan(segs(50, 30, 10)) == ()  # no limits, nothing goes


def test_by_size_until_under_the_limit() -> None:
    assert plan(segs(4, 3, 2, 1), max_bytes=2100) == (0, 1000)
    assert plan(segs(4, 3, 2, 1), max_bytes=4 * 1016) == ()


def test_the_needed_offset_pins_its_segment_and_all_after_it() -> None:
    four = segs(50, 40, 30, 1)
    assert plan(four, needed_from=2000, max_age=HOUR) == (0, 1000)  # 1000..2000 ends at 2000
    assert plan(four, needed_from=1999, max_age=HOUR) == (0,)
    assert plan(four, needed_from=0, max_age=HOUR) == ()
    assert plan(four, needed_from=None, max_age=HOUR) == (0, 1000, 2000)
    found = plan_retention(four, RetentionPolicy(max_age=HOUR), now=NOW, needed_from=1500)
    assert found.pinned and found.delete == (0,)


def test_the_disk_bound_deletes_young_segments_but_reports_when_sessions_pin_them() -> None:
    four = segs(3, 2, 1, 0)
    found = plan_retention(four, RetentionPolicy(max_disk_bytes=2100), now=NOW, needed_from=None)
    assert found.delete == (0, 1000) and not found.over_limit
    pinned = plan_retention(four, RetentionPolicy(max_disk_bytes=2100), now=NOW, needed_from=1000)
    assert pinned.delete == (0,) and pinned.over_limit and pinned.pinned
    assert pinned.kept_bytes == 3 * 1016
    reserved = plan_retention(four, RetentionPolicy(max_disk_bytes=3100), now=NOW, needed_from=None,
                              reserve=1016)
    assert reserved.delete == (0, 1000) and not reserved.over_limit


def test_policy_from_config() -> None:
    assert RetentionPolicy.from_config(168.0, 1 << 30, 0) == RetentionPolicy(168 * HOUR, 1 << 30, 0)


def age(path: Path, hours: float) -> None:
    os.utime(path, (NOW - hours * HOUR, NOW - hours * HOUR))


def test_a_log_deletes_old_segment_files_by_their_mtime(log_dir: Path) -> None:
    with CommitLog(log_dir, segment_bytes=SEGMENT, clock=lambda: NOW) as log:
        log.append(numbered(i) for i in range(60))
        log.sync()
        files = sorted(log_dir.glob("*.log"))
        for index, path in enumerate(files):
            age(path, 100 - index)  # 100 h, 99 h, ...
        infos = log.segments()
        keep_from = infos[3].base
        found = log.apply_retention(RetentionPolicy(max_age=97.5 * HOUR), needed_from=None)
        assert found.delete == tuple(s.base for s in infos[:3])
        assert log.first_offset == keep_from
        assert sorted(log_dir.glob("*.log")) == files[3:]
        kept = [number_of(e.record) for e in log.read()]
        assert kept == list(range(kept[0], 60))
        # a session needs an offset in the next segment: it stays, though old enough
        found = log.apply_retention(RetentionPolicy(max_age=0.5 * HOUR), needed_from=infos[4].base + 1)
        assert found.delete == (infos[3].base,) and found.pinned
        log.append([numbered(60)])
    with CommitLog(log_dir, segment_bytes=SEGMENT) as log:
        assert log.recovery is not None and log.recovery.clean  # retention leaves no gap
        assert [number_of(e.record) for e in log.read()][-1] == 60
    read = [number_of(e.record) for e in LogReader(log_dir).read()]
    assert read == list(range(read[0], 61)) and read[0] > kept[0]


def test_a_log_deletes_by_size_and_refuses_appends_at_the_disk_bound(log_dir: Path) -> None:
    with CommitLog(log_dir, segment_bytes=SEGMENT, max_bytes=4 * SEGMENT) as log:
        with pytest.raises(DiskFullError):
            for i in range(1000):
                log.append([numbered(i)])
                log.sync()
        policy = RetentionPolicy(max_disk_bytes=4 * SEGMENT)
        pinned = log.apply_retention(policy, needed_from=0)
        assert pinned.delete == () and pinned.pinned and pinned.over_limit
        assert not log.probe()
        freed = log.apply_retention(RetentionPolicy(max_bytes=2 * SEGMENT), needed_from=None)
        assert freed.delete and log.size_bytes <= 2 * SEGMENT + SEGMENT
        assert log.probe()
        log.append([numbered(5000)])
        log.sync()


def test_memory_mode_retention_uses_the_clock(tmp_path: Path) -> None:
    now = [NOW]
    log = CommitLog(None, mode="memory", segment_bytes=SEGMENT, clock=lambda: now[0])
    log.append(numbered(i) for i in range(30))
    now[0] += 10 * HOUR
    log.append(numbered(i) for i in range(30, 60))
    found = log.apply_retention(RetentionPolicy(max_age=5 * HOUR), needed_from=None)
    assert found.delete
    assert [number_of(e.record) for e in log.read()][0] <= 30
    assert all(s.last_write == NOW + 10 * HOUR for s in log.segments())


def test_segments_with_unsynced_records_are_never_deleted(log_dir: Path) -> None:
    with CommitLog(log_dir, segment_bytes=SEGMENT, clock=lambda: NOW) as log:
        log.append(numbered(i) for i in range(60))  # several segments, nothing synced yet
        assert all(s.active for s in log.segments())
        found = log.apply_retention(RetentionPolicy(max_bytes=1), needed_from=None)
        assert found.delete == ()
        log.sync()
        found = log.apply_retention(RetentionPolicy(max_bytes=1), needed_from=None)
        assert len(found.delete) == len(log.segments()) + len(found.delete) - 1
