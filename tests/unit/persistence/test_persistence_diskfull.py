"""A full disk: a real 1 MiB tmpfs, mounted for the test (root only; skipped otherwise).

The log must refuse the batch that does not fit (DiskFullError, reason code
0x97), stay consistent and readable, and take appends again by itself once
room comes back. I/O errors other than ENOSPC cannot be made on demand
here, so that one case (EIO from fdatasync) is an injected fault.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from actorbroker.errors import DiskFullError, StorageIOError
from actorbroker.persistence import CommitLog, Event, LogReader
from actorbroker.persistence.records import PublishAccepted

from .conftest import number_of, numbered

BIG = 8 * 1024


def big(i: int) -> PublishAccepted:
    return numbered(i, size=BIG)


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs, unmounted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("mounting a size-limited tmpfs needs root")
    if shutil.which("mount") is None:
        pytest.skip("no mount command")
    mountpoint = tmp_path / "small"
    mountpoint.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mountpoint)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"mount -t tmpfs is not permitted here: {done.stderr.strip()}")
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", str(mountpoint)], check=True)


def fill_up(path: Path, leave: int) -> None:
    """Write zeros to ``path`` until about ``leave`` bytes are free on its file system."""
    free = shutil.disk_usage(path.parent).free
    with path.open("wb") as f:
        f.write(bytes(max(0, free - leave)))
        f.flush()
        os.fsync(f.fileno())


def test_disk_full_refuses_the_batch_keeps_the_log_and_recovers_by_itself(small_fs: Path) -> None:
    directory = small_fs / "log"
    filler = small_fs / "filler"
    with CommitLog(directory, segment_bytes=64 * 1024) as log:
        fill_up(filler, leave=200 * 1024)
        stored: list[int] = []
        with pytest.raises(DiskFullError) as caught:
            for batch in range(1000):
                log.append(big(batch * 3 + k) for k in range(3))
                log.sync()
                stored += [batch * 3 + k for k in range(3)]
        assert caught.value.reason_code == 0x97 and "disk full" in str(caught.value)
        assert stored and log.failure is caught.value
        # consistent: exactly what was synced, nothing of the failed batch, no torn bytes
        assert log.next_offset == log.committed_offset
        assert [number_of(e.record) for e in log.read()] == stored
        for committed_only in (True, False):
            reader = LogReader(directory, committed_only=committed_only)
            assert [number_of(e.record) for e in reader.read()] == stored and reader.problems == []
        files = sum(p.stat().st_size for p in directory.glob("*.log"))
        assert files == log.size_bytes
        assert not log.probe()
        with pytest.raises(DiskFullError):  # still full: refused again, still consistent
            log.append(big(10_000 + k) for k in range(10))  # more than the room left
            log.sync()
        assert [number_of(e.record) for e in log.read()] == stored

        filler.unlink()  # room comes back
        assert log.probe() and log.failure is None
        log.append([big(20_000)])
        log.sync()
        stored.append(20_000)
    with CommitLog(directory, segment_bytes=64 * 1024) as log:
        assert log.recovery is not None and log.recovery.clean
        assert [number_of(e.record) for e in log.read()] == stored


def test_disk_full_when_a_new_segment_is_created(small_fs: Path) -> None:
    """The roll to a new file fails: the file is removed, the old segment stays as it was."""
    directory = small_fs / "log"
    with CommitLog(directory, segment_bytes=BIG + 1024) as log:
        log.append([big(0)])
        log.sync()
        fill_up(small_fs / "filler", leave=4096)
        with pytest.raises(DiskFullError):
            for i in range(1, 100):
                log.append([big(i)])
                log.sync()
        names = sorted(p.name for p in directory.glob("*.log"))
        assert len(names) == len(log.segments())
        assert [number_of(e.record) for e in log.read()][0] == 0
        (small_fs / "filler").unlink()
        log.append([big(500)])
        log.sync()
    with CommitLog(directory, segment_bytes=BIG + 1024) as log:
        assert log.recovery is not None and log.recovery.clean


def test_an_io_error_on_fsync_drops_the_unsynced_batch(
    log_dir: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Injected fault: EIO from fdatasync (a failing disk cannot be made on demand)."""
    with CommitLog(log_dir) as log:
        log.append([numbered(0)])
        end = log.sync()

        def failing(fd: int) -> None:
            raise OSError(errno.EIO, "Input/output error")

        monkeypatch.setattr(os, "fdatasync", failing)
        log.append([numbered(1), numbered(2)])
        with pytest.raises(StorageIOError) as caught:
            log.sync()
        assert caught.value.reason_code == 0x80
        assert log.next_offset == log.committed_offset == end
        assert (log_dir / "00000000000000000000.log").stat().st_size == 16 + end
        monkeypatch.undo()
        assert log.append([numbered(3)]) == [end]
        log.sync()
    with CommitLog(log_dir) as log:
        assert log.recovery is not None and not log.recovery.of(Event.TORN_TAIL)
        assert [number_of(e.record) for e in log.read()] == [0, 3]


def test_the_log_opens_on_a_full_disk_even_with_a_segment_to_quarantine(small_fs: Path) -> None:
    directory = small_fs / "log"
    with CommitLog(directory, segment_bytes=2048) as log:
        log.append(numbered(i) for i in range(60))
    victim = sorted(directory.glob("*.log"))[2]
    data = bytearray(victim.read_bytes())
    data[200] ^= 0x40
    victim.write_bytes(bytes(data))
    fill_up(small_fs / "filler", leave=0)
    with CommitLog(directory, segment_bytes=2048) as log:  # no room to salvage: still opens
        assert log.recovery is not None
        (found,) = log.recovery.of(Event.QUARANTINED)
        assert "left in place" in found.detail
        kept = [number_of(e.record) for e in log.read()]
        assert 0 < len(kept) < 60 and kept == sorted(kept)
        with pytest.raises(DiskFullError):
            log.append([numbered(100)] * 20)
            log.sync()
    assert victim.read_bytes() == bytes(data)  # untouched
    (small_fs / "filler").unlink()
    with CommitLog(directory, segment_bytes=2048) as log:  # room again: quarantined now
        assert log.recovery is not None
        (found,) = log.recovery.of(Event.QUARANTINED)
        assert "moved to quarantine/" in found.detail
        (damaged,) = log.recovery.of(Event.DAMAGED)
        assert damaged.frames == 1  # only the record hit, the rest of its segment is back
        recovered = [number_of(e.record) for e in log.read()]
        assert len(recovered) == 59 and set(kept) < set(recovered)
        log.append([numbered(100)])
