"""Fixtures for the pipeline tests: one local SparkSession for the whole run, and logs.

* ``spark``: local[2], 2 shuffle partitions, UI off, driver memory 1g, the
  ``actorbroker`` format registered (actorbroker.pipeline.spark sets
  PYSPARK_PYTHON to this interpreter and SPARK_LOCAL_IP=127.0.0.1). Started
  once per session (it takes seconds) and stopped at the end. No Java means
  an error here, not a skip: CI installs Java.
* ``scenario_dir``: a data dir whose log holds the hand-checked scenario of
  pipeline_testkit.py (segments of 1 KiB, so that it spans several).

Helpers live in ``pipeline_testkit.py`` next to this file.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from pipeline_testkit import scenario, write_log  # noqa: E402


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    from actorbroker.pipeline.spark import start_session

    session = start_session("local[2]", app_name="actorbroker-tests", shuffle_partitions=2,
                            conf={"spark.default.parallelism": "2",
                                  "spark.sql.adaptive.coalescePartitions.enabled": "true"})
    yield session
    session.stop()


@pytest.fixture
def scenario_dir(tmp_path: Path) -> Path:
    data_dir = tmp_path / "data"
    write_log(data_dir, scenario(), segment_bytes=1024)
    return data_dir
