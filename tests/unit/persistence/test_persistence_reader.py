"""LogReader (another process's view) and the generated format tables of docs/storage.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from actorbroker.errors import CorruptRecordError
from actorbroker.persistence import CommitLog, LogReader
from actorbroker.persistence.committed import COMMITTED_NAME
from actorbroker.persistence.formatdoc import DOC_PATH, render_tables, splice
from actorbroker.persistence.records import UnknownRecord

from .conftest import SEGMENT, number_of, numbered


def test_reads_stop_at_the_committed_offset_not_at_the_last_frame(log_dir: Path) -> None:
    with CommitLog(log_dir, segment_bytes=SEGMENT) as log:
        log.append(numbered(i) for i in range(10))
        end = log.sync()
        log.append(numbered(i) for i in range(10, 20))
        log.flush()  # on disk, not committed
        reader = LogReader(log_dir)
        assert reader.end_offset() == end
        assert [number_of(e.record) for e in reader.read()] == list(range(10))
        eager = LogReader(log_dir, committed_only=False)
        assert eager.end_offset() is None
        assert [number_of(e.record) for e in eager.read()] == list(range(20))


def test_reads_resume_at_next_offset_and_partition_by_segment(log_dir: Path) -> None:
    with CommitLog(log_dir, segment_bytes=SEGMENT) as log:
        log.append(numbered(i) for i in range(50))
    reader = LogReader(log_dir)
    entries = list(reader.read())
    middle = entries[20].offset
    assert [number_of(e.record) for e in reader.read(middle)] == list(range(20, 50))
    assert [number_of(e.record) for e in reader.read(None, middle)] == list(range(20))
    assert list(reader.read(entries[-1].next_offset)) == [] and reader.problems == []
    parts = [list(reader.read_segment(s.base)) for s in reader.segments()]
    assert len(parts) > 2 and [e for part in parts for e in part] == entries


def test_a_segment_deleted_under_the_reader_is_skipped(log_dir: Path) -> None:
    with CommitLog(log_dir, segment_bytes=SEGMENT) as log:
        log.append(numbered(i) for i in range(50))
    reader = LogReader(log_dir)
    listed = reader.segments()
    listed[0].path.unlink()  # retention ran between listing and reading
    assert list(reader.read_segment(listed[0].base)) == []
    assert number_of(next(iter(reader.read())).record) > 0 and reader.problems == []


def test_unknown_records_are_skipped_unless_asked_for(log_dir: Path) -> None:
    future = UnknownRecord(200, 1, b"from a newer broker", timestamp_us=5)
    with CommitLog(log_dir) as log:
        log.append([numbered(0), future, numbered(1)])
    assert [e.record for e in LogReader(log_dir).read()] == [numbered(0), numbered(1)]
    everything = [e.record for e in LogReader(log_dir, skip_unknown=False).read()]
    assert everything == [numbered(0), future, numbered(1)]


def test_a_record_that_passes_its_crc_but_does_not_decode_is_skipped_alone(log_dir: Path) -> None:
    broken = UnknownRecord(1, 1, b"\x05", timestamp_us=0)  # a PublishAccepted body with a QoS of 5
    with CommitLog(log_dir) as log:
        log.append([numbered(0), broken, numbered(1)])
        with pytest.raises(CorruptRecordError):
            list(log.read())
    reader = LogReader(log_dir)
    assert [e.record for e in reader.read()] == [numbered(0), numbered(1)]
    assert len(reader.problems) == 1 and "skipped" in reader.problems[0]


def test_without_a_committed_file_it_reads_every_valid_frame(log_dir: Path) -> None:
    with CommitLog(log_dir) as log:
        log.append(numbered(i) for i in range(5))
    (log_dir / COMMITTED_NAME).unlink()
    reader = LogReader(log_dir)
    assert reader.end_offset() is None
    assert [number_of(e.record) for e in reader.read()] == list(range(5))


def test_a_torn_committed_file_read_is_retried_then_ignored(log_dir: Path) -> None:
    with CommitLog(log_dir) as log:
        log.append([numbered(0)])
    path = log_dir / COMMITTED_NAME
    data = bytearray(path.read_bytes())
    data[10] ^= 1
    path.write_bytes(bytes(data))
    assert LogReader(log_dir).end_offset() is None


def test_the_format_tables_in_docs_storage_md_are_up_to_date() -> None:
    current = DOC_PATH.read_text()
    assert splice(current, render_tables()) == current, (
        "docs/storage.md is stale: run python -m actorbroker.persistence --write"
    )
