"""Pipeline layer: progress lines for long jobs, from Spark's status tracker. Imports pyspark and the stdlib only.

    with Progress(spark, "report") as progress:
        progress.step("reading the log")          # a line per step
        ...                                         # a line per second while tasks run

On a terminal the task line is redrawn in place as a bar
(``[report] stage 3: [#######.....] 12/23 tasks``); otherwise (a log file,
CI) it prints a plain line when the numbers change, at most once every
``interval`` seconds. Lines go to stderr so that stdout stays for results.
"""

from __future__ import annotations

import sys
import threading
import time
from types import TracebackType
from typing import TextIO

from pyspark.sql import SparkSession

__all__ = ["Progress"]


class Progress:
    """Prints step lines and, from a background thread, the progress of running stages."""

    def __init__(self, spark: SparkSession, job: str, *, stream: TextIO | None = None,
                 interval: float = 1.0, enabled: bool = True) -> None:
        self.job = job
        self.stream = stream or sys.stderr
        self.interval = interval
        self.enabled = enabled
        self._tracker = spark.sparkContext.statusTracker()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last = ""
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._started = time.monotonic()

    def __enter__(self) -> Progress:
        if self.enabled:
            self._thread = threading.Thread(target=self._run, name="pipeline-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._tty and self._last:
            self.stream.write("\n")
        self._last = ""

    def step(self, text: str) -> None:
        """One line: what the job does now, with the time since it started."""
        if not self.enabled:
            return
        if self._tty and self._last:
            self.stream.write("\n")
            self._last = ""
        elapsed = time.monotonic() - self._started
        self.stream.write(f"[{self.job}] {elapsed:6.1f}s {text}\n")
        self.stream.flush()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            line = self._line()
            if line and line != self._last:
                if self._tty:
                    self.stream.write("\r" + line.ljust(len(self._last)))
                else:
                    self.stream.write(line + "\n")
                self.stream.flush()
                self._last = line

    def _line(self) -> str:
        done = total = 0
        stages = []
        for stage_id in self._tracker.getActiveStageIds():
            info = self._tracker.getStageInfo(stage_id)
            if info is None:
                continue
            stages.append(str(stage_id))
            done += info.numCompletedTasks
            total += info.numTasks
        if not total:
            return ""
        width = 24
        filled = width * done // total
        bar = "#" * filled + "." * (width - filled)
        label = "stage" if len(stages) == 1 else "stages"
        return f"[{self.job}] {label} {','.join(stages)}: [{bar}] {done}/{total} tasks"
