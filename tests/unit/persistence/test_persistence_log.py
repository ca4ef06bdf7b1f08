"""CommitLog: offsets, group commit, reads, segment roll, modes, the committed file, the lock."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from actorbroker.errors import DiskFullError, LogLockedError
from actorbroker.persistence import CommitLog
from actorbroker.persistence.committed import Committed, read_committed
from actorbroker.persistence.records import PublishAccepted, RetainedCleared, encode_record
from actorbroker.persistence.segment import FRAME, HEADER, segment_name

Make = Callable[..., PublishAccepted]
Seq = Callable[..., int]


def frame_size(record: PublishAccepted) -> int:
    return FRAME.size + len(encode_record(record))


def test_offsets_are_byte_positions_and_next_offset_follows(log_dir: Path, make: Make) -> None:
    with CommitLog(log_dir) as log:
        assert (log.next_offset, log.first_offset, log.committed_offset) == (0, 0, 0)
        offsets = log.append([make(0), make(1)])
        assert offsets == [0, frame_size(make(0))]
        assert log.next_offset == offsets[1] + frame_size(make(1))
        assert log.committed_offset == 0  # appended is not committed
        assert log.sync() == log.next_offset == log.committed_offset
        assert log.append([]) == []


def test_appended_records_read_back_before_and_after_sync(log_dir: Path, make: Make, seq: Seq) -> None:
    with CommitLog(log_dir) as log:
        log.append(make(i) for i in range(3))
        assert [seq(e.record) for e in log.read()] == [0, 1, 2]
        log.sync()
        log.append([make(3)])
        entries = list(log.read())
        assert [seq(e.record) for e in entries] == [0, 1, 2, 3]
        assert all(a.next_offset == b.offset for a, b in zip(entries, entries[1:]))
        assert entries[-1].next_offset == log.next_offset
        assert [seq(e.record) for e in log.read(entries[1].offset, entries[3].offset)] == [1, 2]
        assert log.read_at(entries[2].offset) == make(2)


def test_read_at_an_offset_that_is_no_record(log_dir: Path, make: Make) -> None:
    with CommitLog(log_dir) as log:
        log.append([make(0)])
        with pytest.raises(ValueError):
            log.read_at(log.next_offset)
        with pytest.raises(ValueError):
            log.read_at(-1)


def test_segments_roll_at_segment_bytes_and_reads_cross_them(
    log_dir: Path, make: Make, seq: Seq,
) -> None:
    with CommitLog(log_dir, segment_bytes=1024) as log:
        offsets = log.append(make(i) for i in range(40))
        log.sync()
        segments = log.segments()
        assert len(segments) > 3
        assert all(HEADER.size + s.size <= 1024 for s in segments)
        assert all(a.end == b.base for a, b in zip(segments, segments[1:]))
        assert [s.active for s in segments] == [False] * (len(segments) - 1) + [True]
        assert {s.base for s in segments} <= set(offsets)
        assert [seq(e.record) for e in log.read()] == list(range(40))
    names = sorted(p.name for p in log_dir.glob("*.log"))
    assert names == [segment_name(s.base) for s in segments]


def test_a_record_larger_than_a_segment_gets_a_segment_of_its_own(log_dir: Path, make: Make) -> None:
    with CommitLog(log_dir, segment_bytes=1024) as log:
        log.append([make(0), make(1, size=4000), make(2)])
        log.sync()
        assert [s.size > 1024 for s in log.segments()] == [False, True, False]
        assert [e.record for e in log.read()] == [make(0), make(1, size=4000), make(2)]


def test_reopening_continues_at_the_same_offset(log_dir: Path, make: Make, seq: Seq) -> None:
    with CommitLog(log_dir, segment_bytes=1024) as log:
        log.append(make(i) for i in range(30))
        end = log.next_offset
    with CommitLog(log_dir, segment_bytes=1024) as log:
        assert log.recovery is not None and log.recovery.clean
        assert log.next_offset == log.committed_offset == end
        log.append([make(30)])
    with CommitLog(log_dir, segment_bytes=1024) as log:
        assert [seq(e.record) for e in log.read()] == list(range(31))


def test_the_committed_file_follows_sync(log_dir: Path, make: Make) -> None:
    with CommitLog(log_dir) as log:
        assert read_committed(log_dir) == Committed(0, 0)
        log.append([make(0)])
        log.flush()
        assert read_committed(log_dir) == Committed(0, 0)  # written, not yet committed
        end = log.sync()
        assert read_committed(log_dir) == Committed(end, end)


def test_mode_os_commits_on_write_and_syncs_at_roll(log_dir: Path, make: Make) -> None:
    with CommitLog(log_dir, mode="os", segment_bytes=1024) as log:
        log.append([make(0)])
        end = log.sync()
        assert end == log.committed_offset == log.next_offset
        assert read_committed(log_dir) == Committed(0, end)  # written, not fsynced
        log.append(make(i) for i in range(1, 40))
        log.sync()
        found = read_committed(log_dir)
        active = log.segments()[-1]
        assert found == Committed(active.base, log.next_offset)
    assert read_committed(log_dir) == Committed(log.next_offset, log.next_offset)


def test_mode_memory_writes_nothing_and_reads_the_same(tmp_path: Path, make: Make, seq: Seq) -> None:
    log = CommitLog(None, mode="memory", segment_bytes=1024)
    offsets = log.append(make(i) for i in range(30))
    assert log.committed_offset == log.next_offset == log.sync()
    assert [seq(e.record) for e in log.read()] == list(range(30))
    assert log.read_at(offsets[7]) == make(7)
    assert len(log.segments()) > 1
    log.close()
    with CommitLog(tmp_path / "unused", mode="memory") as log:
        log.append([make(0)])
    assert not (tmp_path / "unused").exists()


def test_a_second_writer_is_refused(log_dir: Path) -> None:
    with CommitLog(log_dir):
        with pytest.raises(LogLockedError):
            CommitLog(log_dir)
    CommitLog(log_dir).close()  # released on close


def test_max_bytes_refuses_the_whole_append_and_nothing_is_buffered(log_dir: Path, make: Make) -> None:
    with CommitLog(log_dir, segment_bytes=1024, max_bytes=4096) as log:
        while True:
            try:
                log.append([make(log.next_offset)])
            except DiskFullError as exc:
                assert exc.reason_code == 0x97
                break
        before = log.next_offset
        with pytest.raises(DiskFullError):
            log.append([RetainedCleared("t", timestamp_us=0), make(0)])
        assert log.next_offset == before and log.size_bytes <= 4096
        assert not log.probe()


def test_max_bytes_below_two_segments_makes_segments_smaller(log_dir: Path) -> None:
    with CommitLog(log_dir, segment_bytes=1 << 20, max_bytes=8192) as log:
        assert log.segment_bytes == 4096


def test_bad_arguments_are_value_errors(log_dir: Path, make: Make) -> None:
    for kwargs in ({"mode": "disk"}, {"segment_bytes": 100}, {"max_bytes": 1000}):
        with pytest.raises(ValueError):
            CommitLog(log_dir, **kwargs)
    with pytest.raises(ValueError):
        CommitLog(None)
    with CommitLog(log_dir) as log:
        with pytest.raises(ValueError):
            log.append([make(0), PublishAccepted("t", b"", qos=5, timestamp_us=0)])
        assert log.next_offset == 0  # nothing of that call was appended
