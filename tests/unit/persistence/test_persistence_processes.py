"""Another process appends while this one reads; a writer killed with SIGKILL loses nothing acknowledged."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from actorbroker.persistence import CommitLog, Event, LogReader

from .conftest import numbered

WRITER = Path(__file__).with_name("writer_process.py")
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def start_writer(tmp_path: Path) -> Iterator[object]:
    started: list[subprocess.Popen[str]] = []

    def start(directory: Path, mode: str, segment_bytes: int, max_records: int) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [sys.executable, str(WRITER), str(directory), mode, str(segment_bytes), str(max_records),
             str(tmp_path / "stop")],
            stdout=subprocess.PIPE, text=True, cwd=ROOT,
        )
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        assert proc.stdout is not None
        proc.stdout.close()


class Follower:
    """An incremental reader, as the pipeline's streaming source: resumes where it stopped."""

    def __init__(self, directory: Path, committed_only: bool) -> None:
        self.reader = LogReader(directory, committed_only=committed_only)
        self.position: int | None = None
        self.count = 0
        self.non_empty_reads = 0

    def poll(self) -> None:
        got = 0
        for entry in self.reader.read(self.position):
            # the next record in order, whole and identical: never torn, never skipped
            assert entry.record == numbered(self.count)
            self.count += 1
            self.position = entry.next_offset
            got += 1
        assert self.reader.problems == []
        self.non_empty_reads += got > 0


def test_readers_in_another_process_never_see_a_torn_or_missing_record(
    tmp_path: Path, start_writer: object,
) -> None:
    directory = tmp_path / "log"
    proc = start_writer(directory, "fsync", 8192, 30_000)  # type: ignore[operator]
    assert proc.stdout.readline().startswith("synced")  # the log exists now
    followers = [Follower(directory, committed_only=True), Follower(directory, committed_only=False)]
    polls = 0
    while proc.poll() is None and polls < 3000:
        for follower in followers:
            follower.poll()
        polls += 1
    (tmp_path / "stop").touch()
    lines = proc.stdout.read().split()
    assert proc.wait(timeout=60) == 0 and lines[-2] == "done"
    total = int(lines[-1])
    for follower in followers:
        follower.poll()
        assert follower.count == total
        assert follower.non_empty_reads >= 2  # it read while the writer was appending
    assert len(list(directory.glob("*.log"))) > 3  # and across segment rolls


@pytest.mark.parametrize("mode", ["fsync", "os"])
def test_kill_9_loses_no_acknowledged_record(tmp_path: Path, start_writer: object, mode: str) -> None:
    directory = tmp_path / "log"
    proc = start_writer(directory, mode, 4096, 10**9)  # type: ignore[operator]
    acknowledged = 0
    while acknowledged < 3000:
        acknowledged = int(proc.stdout.readline().split()[1])
    proc.send_signal(signal.SIGKILL)
    for line in proc.stdout.read().split("\n"):
        if line.startswith("synced"):
            acknowledged = int(line.split()[1])
    assert proc.wait(timeout=30) == -signal.SIGKILL
    with CommitLog(directory, segment_bytes=4096) as log:
        assert log.recovery is not None
        assert {e.event for e in log.recovery.events} <= {Event.TORN_TAIL}
        found = [e.record for e in log.read()]
    assert len(found) >= acknowledged
    assert found == [numbered(i) for i in range(len(found))]
