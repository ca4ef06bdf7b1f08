"""Crash checker: the broker process, started, stopped by a signal and started again on one data directory.

The broker's output goes through a pipe to a reader thread that appends it
to the run's log file and wakes up whoever waits for a line (``listening``,
a checkpoint): events across processes without polling a file. With power
loss on, the broker runs under :mod:`.shim`, and before each restart
:func:`.powerloss.cut` takes the data directory back to what was synced.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from . import powerloss

SCRIPT = Path(sys.executable).with_name("actorbroker")
SHIM = Path(__file__).with_name("shim.py")
START_TIMEOUT = 20.0
STOP_TIMEOUT = 20.0
LISTENING = re.compile(r"actorbroker started: listening on")
CHECKPOINT = re.compile(r"checkpoint \d+ at offset")
RETENTION = re.compile(r"retention: \d+ segment\(s\) deleted")


class StartFailed(Exception):
    """The broker did not listen within START_TIMEOUT (it exited, or hung)."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Broker:
    """``actorbroker serve`` on ``workdir``/data, its log in ``workdir``/broker.log."""

    def __init__(self, workdir: Path, config_toml: str, *, power_loss: bool) -> None:
        self.workdir = workdir
        self.data = workdir / "data"
        self.log_path = workdir / "broker.log"
        self.config = workdir / "broker.toml"
        self.config.write_text(config_toml)
        self.port = free_port()
        self.power_loss = power_loss
        self.syncs = workdir / "syncs.txt"
        self.baseline: powerloss.Files = {}
        self.starts = 0
        self.startup_seconds: list[float] = []
        self.cuts: list[str] = []
        self.proc: subprocess.Popen[bytes] | None = None
        self._lines: list[str] = []  # this incarnation's log lines
        self._changed = threading.Condition()
        self._reader: threading.Thread | None = None

    def spawn(self) -> None:
        """Start the process; return at once (see :meth:`wait_listening`)."""
        self.starts += 1
        args = ["serve", "--config", str(self.config), "--data-dir", str(self.data),
                "--port", str(self.port), "--log-level", "info"]
        env = dict(os.environ)
        if self.power_loss:
            self.syncs.unlink(missing_ok=True)
            env[powerloss.SYNC_LOG_ENV] = str(self.syncs)
            command = [sys.executable, str(SHIM), *args]
        else:
            command = [str(SCRIPT), *args]
        with self._changed:
            self._lines = []
        with self.log_path.open("ab") as out:
            out.write(f"--- start {self.starts}\n".encode())
        self.began = time.monotonic()
        self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     cwd=self.workdir, env=env)
        self._reader = threading.Thread(target=self._read, args=(self.proc,), daemon=True)
        self._reader.start()

    def _read(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        with self.log_path.open("ab") as out:
            for raw in proc.stdout:
                out.write(raw)
                out.flush()
                with self._changed:
                    self._lines.append(raw.decode(errors="replace"))
                    self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def wait_line(self, pattern: re.Pattern[str], timeout: float, skip: int = 0) -> int | None:
        """Index of the first line of this incarnation from ``skip`` on that matches, waiting
        up to ``timeout`` s; None if none came (or the process ended)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for i in range(skip, len(self._lines)):
                    if pattern.search(self._lines[i]):
                        return i
                skip = len(self._lines)
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc is not None and self.proc.poll() is not None
                                 and not (self._reader and self._reader.is_alive())):
                    return None
                self._changed.wait(left)

    def line_count(self) -> int:
        with self._changed:
            return len(self._lines)

    def wait_listening(self) -> None:
        if self.wait_line(LISTENING, START_TIMEOUT) is None:
            raise StartFailed(f"start {self.starts} did not listen within {START_TIMEOUT} s "
                              f"(exit code {self.proc.poll() if self.proc else None})")
        self.startup_seconds.append(time.monotonic() - self.began)

    def start(self) -> None:
        self.spawn()
        self.wait_listening()

    def stop(self, how: str) -> int | None:
        """Send SIGKILL ("KILL") or SIGTERM ("TERM") and wait for the exit; its code (None:
        it did not stop within STOP_TIMEOUT and was killed). With power loss on, the data
        directory is then cut back to what was synced."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL if how == "KILL" else signal.SIGTERM)
        try:
            code: int | None = self.proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(STOP_TIMEOUT)
            code = None
        if self._reader is not None:
            self._reader.join(STOP_TIMEOUT)
        if self.power_loss:
            self.cuts.append(powerloss.cut(self.data, self.baseline, self.syncs))
            self.baseline = powerloss.files_of(self.data)
        return code

    def log_tail(self, lines: int = 40) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])
