"""The ``actorbroker`` data source in batch: schema, exact counts, partitions, torn tail, options."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pipeline_testkit import (
    SCENARIO_EVENTS,
    SCENARIO_MESSAGES,
    publishes,
    segment_files,
    tear_tail,
    write_log,
)

from actorbroker.persistence import LogReader
from actorbroker.pipeline.logscan import SegmentGoneError
from actorbroker.pipeline.schema import MESSAGES, SESSIONS
from actorbroker.pipeline.source import BatchReader, Options


def read(spark: Any, data_dir: Path, **options: str) -> Any:
    return spark.read.format("actorbroker").options(**options).load(str(data_dir))


def test_messages_and_session_events_with_their_schemas(spark: Any, scenario_dir: Path) -> None:
    messages = read(spark, scenario_dir)
    assert messages.columns == [c.name for c in MESSAGES]
    assert messages.count() == SCENARIO_MESSAGES
    sessions = read(spark, scenario_dir, records="sessions")
    assert sessions.columns == [c.name for c in SESSIONS]
    counts = {r["event"]: r["count"] for r in sessions.groupBy("event").count().collect()}
    assert counts == {"connected": 6, "disconnected": 3, "queued": 2, "subscribed": 1}
    assert sum(counts.values()) == SCENARIO_EVENTS
    restated = read(spark, scenario_dir, records="all", includeRestated="true")
    assert restated.filter("client_id = 'dev-9'").count() == 2


def test_one_partition_per_segment_and_exact_counts(spark: Any, tmp_path: Path) -> None:
    log_dir = write_log(tmp_path, publishes(3000, topics=7), segment_bytes=64 << 10)
    segments = len(segment_files(log_dir))
    assert segments >= 5
    frame = read(spark, tmp_path)
    assert frame.rdd.getNumPartitions() == segments
    rows = frame.groupBy("topic").count().collect()
    assert {r["topic"]: r["count"] for r in rows} == {
        f"bulk/{t}": len(range(t, 3000, 7)) for t in range(7)}
    offsets = [e.offset for e in LogReader(log_dir).read()]
    found = [r["offset"] for r in frame.select("offset").orderBy("offset").collect()]
    assert found == offsets
    pieces = read(spark, tmp_path, minPartitions=str(3 * segments))
    assert pieces.rdd.getNumPartitions() == 3 * segments
    assert pieces.count() == 3000


def test_a_torn_tail_is_never_read(spark: Any, tmp_path: Path) -> None:
    log_dir = write_log(tmp_path, publishes(200))
    tear_tail(log_dir)
    assert read(spark, tmp_path).count() == 200
    assert read(spark, tmp_path, committedOnly="false").count() == 200
    (log_dir / "committed").unlink()  # no committed file: up to the last valid frame
    assert read(spark, tmp_path).count() == 200


@pytest.mark.parametrize("options, message", [
    ({"records": "everything"}, "option records must be one of"),
    ({"maxRecordsPerBatch": "0"}, "must be a positive integer"),
    ({"failOnDataLoss": "maybe"}, "must be true or false"),
    ({"colour": "blue"}, "unknown option"),
])
def test_bad_options_are_named(spark: Any, scenario_dir: Path, options: dict[str, str],
                               message: str) -> None:
    with pytest.raises(Exception, match=message):
        read(spark, scenario_dir, **options).count()


def test_a_missing_data_dir_is_named(spark: Any, tmp_path: Path) -> None:
    with pytest.raises(Exception, match="does not exist"):
        read(spark, tmp_path / "nowhere").count()


def test_a_segment_deleted_after_planning_fails_the_read_or_is_skipped(tmp_path: Path) -> None:
    write_log(tmp_path, publishes(300), segment_bytes=4096)
    strict = BatchReader(Options.parse({"path": str(tmp_path)}))
    lenient = BatchReader(Options.parse({"path": str(tmp_path), "failOnDataLoss": "false"}))
    planned, planned_lenient = strict.partitions(), lenient.partitions()
    segment_files(tmp_path / "log")[0].unlink()  # retention, between planning and reading
    with pytest.raises(SegmentGoneError, match="failOnDataLoss=false"):
        list(strict.read(planned[0]))
    assert list(lenient.read(planned_lenient[0])) == []
    assert sum(b.num_rows for b in lenient.read(planned_lenient[1])) > 0


def test_the_columns_option_projects_in_the_source(spark: Any, scenario_dir: Path) -> None:
    frame = read(spark, scenario_dir, records="all", columns="event, offset,cause")
    assert frame.columns == ["event", "offset", "cause"]
    rows = frame.filter("event = 'disconnected'").orderBy("offset").collect()
    assert [r["cause"] for r in rows] == ["connection_lost", "client_disconnect",
                                          "keepalive_timeout"]
    with pytest.raises(Exception, match="not columns of records=messages"):
        read(spark, scenario_dir, columns="offset,cause").count()
