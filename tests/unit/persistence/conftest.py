"""Fixtures of the commit log tests: records that say which they are, and log directories."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from actorbroker.persistence import CommitLog
from actorbroker.persistence.records import PublishAccepted, Record

SEGMENT = 1024  # small segments, so that a few dozen records span several


def numbered(i: int, size: int = 40) -> PublishAccepted:
    """Record number ``i``: its topic, payload and timestamp all encode ``i``."""
    return PublishAccepted(f"seq/{i}", (b"%08d" % i) * (size // 8), qos=1, client_id="writer",
                   packet_id=i % 65535 + 1, timestamp_us=1_700_000_000_000_000 + i)


def number_of(record: Record) -> int:
    assert isinstance(record, PublishAccepted)
    return int(record.topic.split("/")[1])


@pytest.fixture
def make() -> Callable[..., PublishAccepted]:
    return numbered


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    return tmp_path / "log"


@pytest.fixture
def filled(log_dir: Path) -> Callable[[int], list[int]]:
    """Write records 0..n-1 to ``log_dir`` in 1 KiB segments, synced and closed; return offsets."""

    def fill(n: int) -> list[int]:
        with CommitLog(log_dir, segment_bytes=SEGMENT) as log:
            offsets = log.append(numbered(i) for i in range(n))
            log.sync()
        return offsets

    return fill


def image(source: Path, target: Path) -> Path:
    """Copy a log directory as a crash would leave it on disk (what the OS had)."""
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("lock"))
    return target


@pytest.fixture
def crash_image() -> Callable[[Path, Path], Path]:
    return image


@pytest.fixture
def seq() -> Callable[[Record], int]:
    return number_of
