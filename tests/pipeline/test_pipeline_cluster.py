"""The cluster path: ``actorbroker pipeline report --master spark://...`` on a real Spark
standalone master and worker, started from the pyspark installation on 127.0.0.1.

The master and the worker are JVMs of their own (``spark-class``), on ports
the kernel picks; the job runs in a separate process (the CLI), whose
executor the worker starts. The tables it writes are read back with pyarrow
and must be the scenario's, and the worker's work dir must hold the
application's executor: the job did run on the cluster.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pipeline_testkit import check_tables

import pyspark
from actorbroker.pipeline.aggregates import PUBLISHED

SPARK_CLASS = Path(pyspark.__file__).parent / "bin" / "spark-class"


class Daemon:
    """A Spark daemon started with spark-class; waits for a line of its log."""

    def __init__(self, args: list[str], env: dict[str, str], log: Path) -> None:
        self.log = log
        self.lines: list[str] = []
        self._found: dict[str, threading.Event] = {}
        self.process = subprocess.Popen([str(SPARK_CLASS), *args], env=env, text=True,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        with open(self.log, "w") as copy:
            for line in self.process.stdout:
                copy.write(line)
                self.lines.append(line)

    def wait_for(self, pattern: str, timeout: float = 90) -> re.Match[str]:
        """The first log line matching ``pattern`` (waits for it, bounded)."""
        compiled = re.compile(pattern)
        self._reader.join(0)  # let the reader run
        deadline = threading.Event()
        timer = threading.Timer(timeout, deadline.set)
        timer.start()
        try:
            seen = 0
            while not deadline.is_set():
                for line in self.lines[seen:]:
                    found = compiled.search(line)
                    if found:
                        return found
                seen = len(self.lines)
                if self.process.poll() is not None and seen == len(self.lines):
                    break
                self._reader.join(0.2)  # block on the reader thread, not a bare sleep
        finally:
            timer.cancel()
        raise AssertionError(f"no {pattern!r} in {self.log}:\n{''.join(self.lines[-20:])}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(30)


@pytest.fixture
def standalone(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """(master URL, worker dir) of a master and one worker (2 cores, 1 GiB) on 127.0.0.1."""
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
           "SPARK_WORKER_DIR": str(tmp_path / "work"), "SPARK_NO_DAEMONIZE": "1"}
    daemons = []
    try:
        master = Daemon(["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                         "--port", "0", "--webui-port", "0"], env, tmp_path / "master.log")
        daemons.append(master)
        url = master.wait_for(r"Starting Spark master at (spark://127\.0\.0\.1:\d+)").group(1)
        worker = Daemon(["org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
                         "--port", "0", "--webui-port", "0", "--cores", "2", "--memory", "1g",
                         "--work-dir", str(tmp_path / "work")], env, tmp_path / "worker.log")
        daemons.append(worker)
        worker.wait_for(r"Successfully registered with master")
        yield url, tmp_path / "work"
    finally:
        for daemon in reversed(daemons):
            daemon.stop()


@pytest.mark.timeout(300)
def test_report_on_a_standalone_cluster(standalone: tuple[str, Path], scenario_dir: Path,
                                        tmp_path: Path) -> None:
    url, work = standalone
    out = tmp_path / "out"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    done = subprocess.run(
        [sys.executable, "-m", "actorbroker.cli", "pipeline", "report", "--data-dir",
         str(scenario_dir), "--out", str(out), "--master", url],
        env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "18 records, 6 messages" in done.stdout
    assert "[report]" in done.stderr  # progress lines
    check_tables({name: pq.read_table(out / name).to_pylist() for name in PUBLISHED})
    executors = list(work.glob("app-*/*/stderr"))
    assert executors, "no executor ran on the worker"
