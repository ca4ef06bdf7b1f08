"""The ``actorbroker`` data source as a stream: admission control, AvailableNow, restarts from a
checkpoint, a torn tail, and retention deleting records under a running query.

A light ``foreachBatch`` sink records (batch id, rows, first and last offset)
of every micro-batch; a sink that waits on an Event holds a running query
between two micro-batches while the test applies retention, so nothing
depends on timing.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from pipeline_testkit import publishes, tear_tail, write_log

from actorbroker.persistence import CommitLog, LogReader, RetentionPolicy


class Sink:
    """foreachBatch: remembers what each micro-batch held; may hold the query after batch 0."""

    def __init__(self, hold: bool = False) -> None:
        self.batches: list[tuple[int, int, int | None, int | None]] = []
        self.first_done = threading.Event()
        self.release = threading.Event()
        if not hold:
            self.release.set()

    def __call__(self, frame: Any, batch_id: int) -> None:
        row = frame.selectExpr("count(*)", "min(offset)", "max(offset)").first()
        self.batches.append((batch_id, row[0], row[1], row[2]))
        self.first_done.set()
        assert self.release.wait(120), "the test never released the query"

    @property
    def counts(self) -> list[int]:
        return [b[1] for b in self.batches]


def start(spark: Any, data_dir: Path, checkpoint: Path, sink: Sink, *,
          available_now: bool = True, **options: str) -> Any:
    writer = (spark.readStream.format("actorbroker").options(**options).load(str(data_dir))
              .writeStream.foreachBatch(sink).option("checkpointLocation", str(checkpoint)))
    if available_now:
        writer = writer.trigger(availableNow=True)
    return writer.start()


def run(spark: Any, data_dir: Path, checkpoint: Path, **options: str) -> Sink:
    sink = Sink()
    query = start(spark, data_dir, checkpoint, sink, **options)
    assert query.awaitTermination(120), "AvailableNow did not stop"
    assert query.exception() is None
    return sink


@pytest.mark.timeout(300)
def test_admission_control_then_a_restart_reads_only_new_records(spark: Any, tmp_path: Path) -> None:
    data_dir, checkpoint = tmp_path / "data", tmp_path / "checkpoint"
    write_log(data_dir, publishes(23), segment_bytes=1024)
    offsets = [e.offset for e in LogReader(data_dir / "log").read()]
    first = run(spark, data_dir, checkpoint, maxRecordsPerBatch="5")
    assert first.counts == [5, 5, 5, 5, 3]
    assert [(b[2], b[3]) for b in first.batches] == [
        (offsets[i], offsets[min(i + 4, 22)]) for i in range(0, 23, 5)]

    write_log(data_dir, publishes(7, start=23), segment_bytes=1024)
    second = run(spark, data_dir, checkpoint, maxRecordsPerBatch="5")
    assert second.counts == [5, 2]
    assert second.batches[0][0] == 5  # batch ids go on from the checkpoint
    assert second.batches[0][2] > first.batches[-1][3]
    assert sum(second.counts) == 7


@pytest.mark.timeout(300)
def test_a_stream_never_reads_a_torn_tail(spark: Any, tmp_path: Path) -> None:
    data_dir, checkpoint = tmp_path / "data", tmp_path / "checkpoint"
    log_dir = write_log(data_dir, publishes(40))
    tear_tail(log_dir)
    assert run(spark, data_dir, checkpoint).counts == [40]
    # The broker restarts: recovery truncates the torn tail, appends go on after it.
    write_log(data_dir, publishes(3, start=40))
    again = run(spark, data_dir, checkpoint)
    assert again.counts == [3]
    assert len(list(LogReader(log_dir).read())) == 43


@pytest.mark.timeout(300)
@pytest.mark.parametrize("fail", [True, False])
def test_retention_under_a_running_stream(spark: Any, tmp_path: Path, fail: bool) -> None:
    data_dir, checkpoint = tmp_path / "data", tmp_path / "checkpoint"
    log_dir = data_dir / "log"
    with CommitLog(log_dir, mode="os", segment_bytes=2048) as log:
        log.append(publishes(240))
        log.sync()
        sink = Sink(hold=True)
        query = start(spark, data_dir, checkpoint, sink, available_now=False,
                      maxRecordsPerBatch="10", failOnDataLoss=str(fail).lower())
        try:
            assert sink.first_done.wait(120)
            # Batch 0 read 10 records of the first segment; the rest of it and the next
            # segments go now, before the query has read them.
            plan = log.apply_retention(RetentionPolicy(max_bytes=6000), needed_from=None)
            assert len(plan.delete) >= 3
            kept = [e.offset for e in LogReader(log_dir).read()]
            sink.release.set()
            if fail:
                with pytest.raises(Exception, match="deleted.*failOnDataLoss=false"):
                    query.awaitTermination(120)
                return
            query.processAllAvailable()
        finally:
            sink.release.set()
            query.stop()
    assert sink.counts[0] == 10
    assert sum(sink.counts[1:]) == len(kept)  # every record still there, nothing twice
    assert sink.batches[1][2] == kept[0]
