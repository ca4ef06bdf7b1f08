"""The log side of the data source, without Spark: finding the log, planning, walking frames."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pipeline_testkit import publishes, scenario, segment_files, tear_tail, write_log

from actorbroker.persistence import CommitLog, LogReader, RetentionPolicy
from actorbroker.pipeline.errors import DataLossError, PipelineError
from actorbroker.pipeline.logscan import (
    Range,
    SegmentGoneError,
    Snapshot,
    advance,
    find_log_dir,
    read_chunks,
)


def offsets_read(log_dir: Path, ranges: list[Range], chunk_bytes: int = 1 << 20) -> list[int]:
    found = []
    for rng in ranges:
        for chunk in read_chunks(log_dir, rng, chunk_bytes=chunk_bytes):
            found += (chunk.starts + chunk.offset).tolist()
    return found


def test_find_log_dir_accepts_the_data_dir_or_the_log_dir(scenario_dir: Path) -> None:
    assert find_log_dir(scenario_dir) == scenario_dir / "log"
    assert find_log_dir(scenario_dir / "log") == scenario_dir / "log"


@pytest.mark.parametrize("make, message", [
    (lambda p: p / "missing", "does not exist"),
    (lambda p: (p / "file").write_text("x") and p / "file", "is not a directory"),
    (lambda p: (p / "other.log").write_text("x") and p, "holds no commit log"),
])
def test_find_log_dir_says_what_is_wrong(tmp_path: Path, make: object, message: str) -> None:
    with pytest.raises(PipelineError, match=message):
        find_log_dir(make(tmp_path))  # type: ignore[operator]


def test_ranges_and_pieces_cover_every_committed_frame_once(tmp_path: Path) -> None:
    log_dir = write_log(tmp_path, publishes(500), segment_bytes=16 << 10)
    expected = [e.offset for e in LogReader(log_dir).read()]
    snapshot = Snapshot.take(log_dir)
    assert len(snapshot.segments) >= 4
    per_segment = snapshot.ranges(None, snapshot.end)
    assert [r.base for r in per_segment] == [s.base for s in snapshot.segments]
    assert offsets_read(log_dir, per_segment) == expected
    pieces = snapshot.ranges(None, snapshot.end, min_ranges=4 * len(snapshot.segments))
    assert len(pieces) == 4 * len(snapshot.segments)
    assert offsets_read(log_dir, pieces) == expected
    assert offsets_read(log_dir, per_segment, chunk_bytes=300) == expected  # many small chunks


def test_a_range_stops_at_the_committed_offset_and_never_reads_a_torn_tail(tmp_path: Path) -> None:
    log_dir = write_log(tmp_path, publishes(50))
    expected = [e.offset for e in LogReader(log_dir).read()]
    tear_tail(log_dir)
    snapshot = Snapshot.take(log_dir)
    assert offsets_read(log_dir, snapshot.ranges(None, snapshot.end)) == expected
    # Without a committed file: up to the last complete frame, the torn one left out.
    (log_dir / "committed").unlink()
    loose = Snapshot.take(log_dir)
    assert loose.end is None
    assert offsets_read(log_dir, loose.ranges(None, None)) == expected


def test_a_damaged_frame_costs_that_frame(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    log_dir = write_log(tmp_path, publishes(20))
    entries = list(LogReader(log_dir).read())
    segment = segment_files(log_dir)[0]
    with open(segment, "r+b") as handle:  # flip a payload byte of the 11th frame
        handle.seek(16 + entries[10].offset + 30)
        byte = handle.read(1)
        handle.seek(-1, os.SEEK_CUR)
        handle.write(bytes([byte[0] ^ 0xFF]))
    snapshot = Snapshot.take(log_dir)
    assert offsets_read(log_dir, snapshot.ranges(None, snapshot.end)) == [
        e.offset for e in entries if e is not entries[10]]
    assert (f"bad crc frame at offset {entries[10].offset}; offsets {entries[10].offset}.."
            f"{entries[11].offset} skipped") in caplog.text


def test_advance_counts_frames_for_admission_control(tmp_path: Path) -> None:
    log_dir = write_log(tmp_path, publishes(100), segment_bytes=4096)
    offsets = [e.offset for e in LogReader(log_dir).read()] + [Snapshot.take(log_dir).end]
    snapshot = Snapshot.take(log_dir)
    end = snapshot.end
    assert end is not None
    assert advance(snapshot, offsets[0], end, 7) == offsets[7]
    assert advance(snapshot, offsets[7], end, 30) == offsets[37]  # across segments
    assert advance(snapshot, offsets[90], end, 30) == end
    assert advance(snapshot, offsets[37], offsets[40], 1000) == offsets[40]


def test_lost_offsets_are_seen_after_retention(tmp_path: Path) -> None:
    log_dir = tmp_path / "log"
    with CommitLog(log_dir, mode="os", segment_bytes=2048) as log:
        log.append(publishes(60))
        log.sync()
        before = Snapshot.take(log_dir)
        first, second = before.segments[0], before.segments[1]
        assert before.lost_before(first.base + 10) is None
        log.apply_retention(RetentionPolicy(max_bytes=1), needed_from=None)
    after = Snapshot.take(log_dir)
    oldest = after.segments[0].base
    assert oldest > second.base
    assert after.lost_before(first.base + 10) == oldest
    assert after.lost_before(oldest) is None
    assert after.lost_before(after.head()) is None
    with pytest.raises(DataLossError, match="failOnDataLoss=false"):
        after.check_lost(first.base, fail=True, what="test")
    assert after.check_lost(first.base, fail=False, what="test") == oldest
    with pytest.raises(SegmentGoneError, match="deleted"):
        list(read_chunks(log_dir, Range(first.base, first.base, first.end)))


def test_chunks_decode_to_the_same_records_as_the_log_reader(scenario_dir: Path) -> None:
    from actorbroker.persistence.records import decode_record

    log_dir = scenario_dir / "log"
    snapshot = Snapshot.take(log_dir)
    decoded = []
    for rng in snapshot.ranges(None, snapshot.end):
        for chunk in read_chunks(log_dir, rng):
            for start, length in zip(chunk.starts, chunk.lengths, strict=True):
                decoded.append(decode_record(chunk.buf[start + 8:start + 8 + length]))
    assert decoded == [e.record for e in LogReader(log_dir, skip_unknown=False).read()]
    assert len(decoded) == len(scenario())
