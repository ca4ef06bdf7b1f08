"""A real ``actorbroker serve`` process on one data directory, started, killed with SIGKILL and started again; and its commit log read from outside.

Used by the kill -9 tests (test_crash_*.py). ``start`` waits for the
"listening" line of the broker's log file: polling a file, since there is
no event to wait on across processes.
"""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from actorbroker.persistence.reader import LogReader
from actorbroker.persistence.records import Record

SCRIPT = Path(sys.executable).with_name("actorbroker")
START_TIMEOUT = 20.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class BrokerProcess:
    """``actorbroker serve`` on ``port`` with ``data``; ``start`` waits for "listening"."""

    def __init__(self, data: Path, port: int, log: Path) -> None:
        self.data, self.port, self.log = data, port, log
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> float:
        """Start it; return the seconds it took to listen (AssertionError if it did not)."""
        began = time.monotonic()
        config = self.data.parent / "crash.toml"
        # No queue limit: a subscriber slowed down by a loaded machine must not have
        # messages dropped by the (documented) queue_full policy; durability is under test.
        config.write_text("[limits]\nmax_queued_messages = 0\n\n[sys]\ninterval = 0\n")
        with self.log.open("ab") as out:
            out.write(f"--- start {self.starts + 1}\n".encode())
            out.flush()
            self.proc = subprocess.Popen(
                [str(SCRIPT), "serve", "--config", str(config), "--data-dir", str(self.data),
                 "--port", str(self.port), "--log-level", "info"],
                stdout=out, stderr=subprocess.STDOUT, cwd=self.data.parent)
        mark = f"--- start {self.starts + 1}\n"
        while time.monotonic() - began < START_TIMEOUT:
            text = self.log.read_text(errors="replace")
            if re.search(r"listening on 127\.0\.0\.1:\d+", text[text.rindex(mark):]):
                self.starts += 1
                return time.monotonic() - began
            if self.proc.poll() is not None:
                break
            time.sleep(0.01)  # polling a log file: there is no event to wait on
        raise AssertionError(f"start {self.starts + 1} failed:\n{self.log.read_text()[-3000:]}")

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def committed_records(data: Path) -> list[Record]:
    """Every record below the committed offset of the broker's log in ``data`` (read from
    outside, as the pipeline does: safe while the broker runs)."""
    reader = LogReader(data / "log")
    return [entry.record for entry in reader.read()]


def wait_for_records(data: Path, predicate: object, timeout: float = 10.0) -> list[Record]:
    """Poll the committed log until ``predicate(records)`` holds (there is no event to wait on
    across processes); return the records. AssertionError on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        records = committed_records(data)
        if predicate(records):  # type: ignore[operator]
            return records
        if time.monotonic() > deadline:
            raise AssertionError(f"the log never held what was expected: {records[-20:]}")
        time.sleep(0.01)
