"""The report and stream jobs on the hand-checked scenario: exact tables, the same from both.

The stream is fed in two parts (two runs of the job, as after a restart),
so that the fold crosses a micro-batch boundary (sessions online across
it), with a crash simulated between a micro-batch's output and Spark's
commit of it (its commit file deleted): the batch runs again and no record
is counted twice. Admission control over several micro-batches is tested in
test_pipeline_stream.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pipeline_testkit import check_tables, scenario, when, write_log

from actorbroker.pipeline.aggregates import PUBLISHED
from actorbroker.pipeline.report import run_report
from actorbroker.pipeline.stream import start_stream

PNG = b"\x89PNG\r\n\x1a\n"


def read_tables(spark: Any, out: Path) -> dict[str, list[dict[str, object]]]:
    return {name: [row.asDict() for row in spark.read.parquet(str(out / name)).collect()]
            for name in PUBLISHED}


@pytest.mark.timeout(300)
def test_report_writes_the_expected_tables_and_a_page(spark: Any, scenario_dir: Path,
                                                      tmp_path: Path) -> None:
    out = tmp_path / "report"
    result = run_report(spark, scenario_dir, out)
    assert (result.records, result.messages) == (18, 6)
    check_tables(read_tables(spark, out))
    page = result.html.read_text()
    for chart in ("messages.png", "online_clients.png", "reconnects.png"):
        data = (out / "charts" / chart).read_bytes()
        assert data.startswith(PNG) and len(data) > 5000
        assert f"charts/{chart}" in page
    assert "home/temp" in page and "dev-2" in page and "23.5" in page
    # 180 s of records: 2 s buckets, the axis from the first record to the last bucket's end.
    charts = {chart.path.name: chart for chart in result.charts}
    assert charts["messages.png"].title == "Messages per 2 s, top topics"
    assert charts["messages.png"].x_range == charts["online_clients.png"].x_range == (
        when(0), when(182))
    assert not (out / "_staging").exists()


@pytest.mark.timeout(300)
def test_stream_folds_micro_batches_exactly_once_across_restarts(spark: Any, tmp_path: Path) -> None:
    records = scenario()
    data_dir, out, checkpoint = tmp_path / "data", tmp_path / "out", tmp_path / "checkpoint"
    write_log(data_dir, records[:12], segment_bytes=1024)
    first = start_stream(spark, data_dir, out, checkpoint, available_now=True, max_records=12)
    first.awaitTermination(180)
    assert first.exception() is None
    assert json.loads((out / "_stream.json").read_text())["batch"] == 0

    # A crash after batch 0 wrote its tables but before Spark committed it.
    for name in ("0", ".0.crc"):  # Hadoop's checksum file goes with it
        (checkpoint / "commits" / name).unlink()
    write_log(data_dir, records[12:], segment_bytes=1024)
    second = start_stream(spark, data_dir, out, checkpoint, available_now=True, max_records=12)
    second.awaitTermination(180)
    assert second.exception() is None
    state = json.loads((out / "_stream.json").read_text())
    assert state["batch"] == 1  # batch 0 again (same 12 records), then the 11 new ones
    assert state["versions"] == [0, 1]
    for name in PUBLISHED:
        assert (out / name).is_symlink()
        assert (out / name).resolve().parent.name == "1"
    check_tables(read_tables(spark, out))
