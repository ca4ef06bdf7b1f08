"""A broker in a subprocess (``actorbroker serve``) whose memory a test can watch.

RSS in the test process would mix the broker with the clients; a
subprocess has its own /proc/PID/status: ``VmRSS`` now and ``VmHWM``, the
peak since start, which catches a spike between two samples. Options are
written to a TOML config file by their names, each in its own section
(as :func:`actorbroker.testing.broker_config` finds them).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mqtt_testkit import Serve

from actorbroker.config import SECTIONS


def status(pid: int, field: str) -> int:
    """A ``kB`` field of /proc/PID/status (``VmRSS``, ``VmHWM``), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(field)


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return repr(value)


class Served:
    """``actorbroker serve`` on 127.0.0.1, port chosen by the system, data in ``cwd/data``."""

    def __init__(self, cwd: Path, **options: Any) -> None:
        cwd.mkdir(parents=True, exist_ok=True)
        owners = {name: s for s in SECTIONS for name, _ in s.options()}
        sections: dict[str, list[str]] = {}
        for name, value in options.items():
            sections.setdefault(owners[name].header, []).append(f"{name} = {_toml(value)}")
        sections.setdefault("[[listeners]]", []).extend(['bind = "127.0.0.1"', "port = 0"])
        text = "\n".join(f"{header}\n" + "\n".join(lines) for header, lines in sections.items())
        (cwd / "broker.toml").write_text(text + "\n")
        self.serve = Serve(cwd, "-c", "broker.toml", "--data-dir", "data")
        listening = self.serve.wait_for(r"listening for MQTT on (?:tcp )?127\.0\.0\.1:(\d+)")
        self.port = int(listening[1])
        self.host = "127.0.0.1"
        self.pid = self.serve.proc.pid

    @property
    def rss(self) -> int:
        """Resident memory now, bytes."""
        return status(self.pid, "VmRSS")

    @property
    def peak(self) -> int:
        """Highest resident memory since the start, bytes."""
        return status(self.pid, "VmHWM")

    def log_lines(self) -> list[str]:
        """Every log line so far (read without waiting)."""
        while not self.serve.lines.empty():
            line = self.serve.lines.get_nowait()
            if line is not None:
                self.serve.log.append(line)
        return self.serve.log

    def wait_until(self, predicate: Callable[[], bool], timeout: float = 10.0,
                   what: str = "condition") -> None:
        """Poll ``predicate`` until true (AssertionError after ``timeout``)."""
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError(f"{what} not reached in {timeout}s")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.serve.proc.poll() is None:
            self.serve.stop()
