"""Recovery on open: torn tails, bit flips, truncated, missing and empty segments.

Every case damages real files the way a crash or a failing disk would, opens
the log, and checks what was kept, what was reported, and that the log
appends and reads again. The broker must always start: no case raises.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from actorbroker.errors import CorruptRecordError
from actorbroker.persistence import CommitLog, Event, LogReader
from actorbroker.persistence.committed import COMMITTED_NAME, read_committed
from actorbroker.persistence.recovery import QUARANTINE_DIR
from actorbroker.persistence.segment import HEADER, FrameScan, file_reader, segment_name

from .conftest import SEGMENT, image, number_of, numbered

Fill = Callable[[int], list[int]]


def frames_of(path: Path) -> list[int]:
    """File positions where the frames of a segment file start."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size - HEADER.size
        return [HEADER.size + p for p, _ in FrameScan(file_reader(fd), 0, size)]
    finally:
        os.close(fd)


def segment_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.log"))


def numbers(directory: Path, **kwargs: object) -> list[int]:
    with CommitLog(directory, segment_bytes=SEGMENT, **kwargs) as log:  # type: ignore[arg-type]
        return [number_of(e.record) for e in log.read()]


def flip(path: Path, position: int, mask: int = 0x01) -> None:
    with path.open("r+b") as f:
        f.seek(position)
        byte = f.read(1)[0]
        f.seek(position)
        f.write(bytes([byte ^ mask]))


def assert_appends_and_reads(directory: Path, expected: list[int]) -> None:
    """The log opens, takes a new record after the old ones, and keeps it over a reopen."""
    with CommitLog(directory, segment_bytes=SEGMENT) as log:
        offset = log.append([numbered(9999)])[0]
        assert offset >= max((e.next_offset for e in log.read(stop=offset)), default=0)
        log.sync()
    with CommitLog(directory, segment_bytes=SEGMENT) as log:
        assert [number_of(e.record) for e in log.read()] == [*expected, 9999]
        assert log.recovery is not None
        assert not log.recovery.of(Event.TORN_TAIL) and not log.recovery.of(Event.QUARANTINED)


@pytest.fixture
def unsynced_tail(log_dir: Path, tmp_path: Path) -> tuple[Path, list[int]]:
    """A crash image: records 0..9 synced, record 10 written but not synced."""
    with CommitLog(log_dir, segment_bytes=1 << 20) as log:
        log.append(numbered(i) for i in range(10))
        log.sync()
        log.append([numbered(10, size=200)])
        log.flush()
        crashed = image(log_dir, tmp_path / "image")
    active = segment_files(crashed)[-1]
    return crashed, frames_of(active)


@pytest.mark.parametrize("with_committed_file", [True, False], ids=["committed", "no-committed"])
def test_torn_write_at_every_byte_of_the_last_frame(
    unsynced_tail: tuple[Path, list[int]], tmp_path: Path, with_committed_file: bool,
    caplog: pytest.LogCaptureFixture,
) -> None:
    crashed, starts = unsynced_tail
    last_start = starts[-1]
    file_size = segment_files(crashed)[0].stat().st_size
    for cut in range(last_start, file_size):
        case = image(crashed, tmp_path / f"cut{cut}")
        if not with_committed_file:
            (case / COMMITTED_NAME).unlink()
        os.truncate(segment_files(case)[0], cut)
        caplog.clear()
        with caplog.at_level(logging.WARNING, "actorbroker.persistence"):
            with CommitLog(case, segment_bytes=SEGMENT) as log:
                report = log.recovery
                assert report is not None
                assert [number_of(e.record) for e in log.read()] == list(range(10))
                assert log.next_offset == last_start - HEADER.size
        if cut == last_start:
            assert report.clean  # a cut on a frame boundary is no damage at all
            continue
        (torn,) = report.events
        assert torn.event is Event.TORN_TAIL
        assert torn.offset == last_start - HEADER.size and torn.lost_bytes == cut - last_start
        assert "torn tail" in caplog.text
        assert segment_files(case)[0].stat().st_size == last_start
        shutil.rmtree(case)
    assert_appends_and_reads(image(crashed, tmp_path / "last"), list(range(11)))


@pytest.mark.parametrize("with_committed_file", [True, False], ids=["committed", "no-committed"])
def test_a_tail_of_zeros_is_torn(
    unsynced_tail: tuple[Path, list[int]], with_committed_file: bool,
) -> None:
    """A crash after the file grew but before its pages were written leaves zeros."""
    crashed, starts = unsynced_tail
    if not with_committed_file:
        (crashed / COMMITTED_NAME).unlink()
    active = segment_files(crashed)[0]
    with active.open("r+b") as f:
        f.seek(starts[-1])
        f.write(bytes(8192))
    with CommitLog(crashed, segment_bytes=SEGMENT) as log:
        assert log.recovery is not None
        assert [e.event for e in log.recovery.events] == [Event.TORN_TAIL]
    assert_appends_and_reads(crashed, list(range(10)))


def test_garbage_above_the_synced_offset_is_torn_even_if_frames_follow(
    unsynced_tail: tuple[Path, list[int]],
) -> None:
    """Pages of an unsynced batch may reach the disk out of order."""
    crashed, starts = unsynced_tail
    active = segment_files(crashed)[0]
    flip(active, starts[-1] + 20)
    with active.open("ab") as f:
        f.write(active.read_bytes()[starts[0]:starts[3]])  # valid frames after the damage
    with CommitLog(crashed, segment_bytes=SEGMENT) as log:
        assert log.recovery is not None
        assert [e.event for e in log.recovery.events] == [Event.TORN_TAIL]
        assert [number_of(e.record) for e in log.read()] == list(range(10))


def test_a_bit_flip_in_the_middle_costs_the_record_it_hit_and_nothing_else(
    log_dir: Path, filled: Fill, caplog: pytest.LogCaptureFixture,
) -> None:
    filled(60)
    files = segment_files(log_dir)
    assert len(files) >= 4
    victim = files[1]
    starts = frames_of(victim)
    assert len(starts) >= 5
    with CommitLog(log_dir, segment_bytes=SEGMENT) as log:
        before = [(e.offset, number_of(e.record)) for e in log.read()]
        end = log.next_offset
    flip(victim, starts[2] + 30)
    damaged = victim.read_bytes()
    base = int(victim.stem)
    hit = base + starts[2] - HEADER.size
    with caplog.at_level(logging.ERROR, "actorbroker.persistence"):
        with CommitLog(log_dir, segment_bytes=SEGMENT) as log:
            report = log.recovery
            assert report is not None
            (quarantined,) = report.of(Event.QUARANTINED)
            assert quarantined.offset == hit
            (lost,) = report.of(Event.DAMAGED)
            assert (lost.offset, lost.lost_bytes, lost.frames) == (hit, starts[3] - starts[2], 1)
            assert log.next_offset == end
            kept = [(e.offset, number_of(e.record)) for e in log.read()]
    assert f"offsets {hit}..{hit + starts[3] - starts[2]}" in caplog.text
    assert kept == [(o, n) for o, n in before if o != hit]  # same offsets, one record less
    (moved, reason) = sorted((log_dir / QUARANTINE_DIR).iterdir())
    assert moved.name.startswith(victim.name) and moved.read_bytes() == damaged
    assert reason.name == moved.name + ".reason" and "bad crc" in reason.read_text()
    assert victim.read_bytes() == damaged[:starts[2]]  # the prefix, under its own name
    rest = log_dir / segment_name(base + starts[3] - HEADER.size)  # the rest, under its offset
    assert rest.read_bytes()[HEADER.size:] == damaged[starts[3]:]
    reader = LogReader(log_dir)
    assert [number_of(e.record) for e in reader.read()] == [n for _, n in kept]
    assert reader.problems == []
    assert_appends_and_reads(log_dir, [n for _, n in kept])


def test_damage_to_the_length_of_the_first_frame_costs_that_frame(log_dir: Path, filled: Fill) -> None:
    filled(40)
    victim = segment_files(log_dir)[1]
    with CommitLog(log_dir, segment_bytes=SEGMENT) as log:
        first = number_of(log.read_at(int(victim.stem)))
    flip(victim, HEADER.size + 2)  # the length field of the first frame
    with CommitLog(log_dir, segment_bytes=SEGMENT) as log:
        assert log.recovery is not None and len(log.recovery.of(Event.QUARANTINED)) == 1
        (lost,) = log.recovery.of(Event.DAMAGED)
        assert lost.offset == int(victim.stem)
        assert [number_of(e.record) for e in log.read()] == [n for n in range(40) if n != first]
    assert not victim.exists()  # nothing of it is live before the next frame


def test_damage_to_the_last_committed_frame_never_reuses_its_offsets(
    log_dir: Path, filled: Fill,
) -> None:
    offsets = filled(20)
    last = segment_files(log_dir)[-1]
    flip(last, frames_of(last)[-1] + 12)
    with CommitLog(log_dir, segment_bytes=SEGMENT) as log:
        assert log.recovery is not None and log.recovery.of(Event.QUARANTINED)
        assert [number_of(e.record) for e in log.read()] == list(range(19))
        end = log.next_offset
        assert end > offsets[-1]
        assert log.append([numbered(20)]) == [end]


def test_a_truncated_segment_is_reported_and_its_valid_part_kept(log_dir: Path, filled: Fill) -> None:
    filled(60)
    files = segment_files(log_dir)
    aligned, torn = files[1], files[2]
    a_starts, t_starts = frames_of(aligned), frames_of(torn)
    os.truncate(aligned, a_starts[3])  # on a frame boundary: just shorter
    os.truncate(torn, t_starts[3] + 5)  # inside a frame
    with CommitLog(log_dir, segment_bytes=SEGMENT) as log:
        report = log.recovery
        assert report is not None
        assert [e.base for e in report.of(Event.GAP)] == [int(aligned.stem), int(torn.stem)]
        (quarantined,) = report.of(Event.QUARANTINED)
        assert quarantined.base == int(torn.stem)
        kept = [number_of(e.record) for e in log.read()]
    assert len(kept) == 60 - (len(a_starts) - 3) - (len(t_starts) - 3)
    assert kept == sorted(kept)
    assert_appends_and_reads(log_dir, kept)


def test_a_missing_segment_in_the_middle_is_a_gap(log_dir: Path, filled: Fill) -> None:
    filled(60)
    files = segment_files(log_dir)
    missing = len(frames_of(files[2]))
    files[2].unlink()
    with CommitLog(log_dir, segment_bytes=SEGMENT) as log:
        assert log.recovery is not None
        (gap,) = log.recovery.events
        assert gap.event is Event.GAP and gap.offset + gap.lost_bytes == int(files[3].stem)
        kept = [number_of(e.record) for e in log.read()]
    assert len(kept) == 60 - missing
    reader = LogReader(log_dir)
    assert [number_of(e.record) for e in reader.read()] == kept and reader.problems == []
    assert_appends_and_reads(log_dir, kept)


def test_a_missing_last_segment_loses_committed_data_but_not_its_offsets(
    log_dir: Path, filled: Fill,
) -> None:
    filled(60)
    with CommitLog(log_dir, segment_bytes=SEGMENT) as log:
        end = log.next_offset
    segment_files(log_dir)[-1].unlink()
    with CommitLog(log_dir, segment_bytes=SEGMENT) as log:
        assert log.recovery is not None
        assert [e.event for e in log.recovery.events] == [Event.COMMITTED_LOST]
        assert log.next_offset == end


@pytest.mark.parametrize(
    "content", [b"", b"ABLG\x01", bytes(16), bytes(100)], ids=["empty", "short", "zeros", "zeros+"],
)
def test_a_last_segment_created_just_before_a_crash_is_removed(
    log_dir: Path, filled: Fill, content: bytes,
) -> None:
    filled(20)
    with CommitLog(log_dir, segment_bytes=SEGMENT) as log:
        end = log.next_offset
    stray = log_dir / segment_name(end)
    stray.write_bytes(content)
    with CommitLog(log_dir, segment_bytes=SEGMENT) as log:
        assert log.recovery is not None
        assert [e.event for e in log.recovery.events] == [Event.REMOVED_EMPTY]
        assert log.next_offset == end
    assert numbers(log_dir) == list(range(20))


def test_a_segment_with_a_bad_header_keeps_its_frames(log_dir: Path, filled: Fill) -> None:
    filled(60)
    victim = segment_files(log_dir)[1]
    flip(victim, 0)
    with CommitLog(log_dir, segment_bytes=SEGMENT) as log:
        assert log.recovery is not None
        assert [e.event for e in log.recovery.events] == [Event.QUARANTINED]
        assert [number_of(e.record) for e in log.read()] == list(range(60))
    assert victim.read_bytes()[:4] == b"ABLG"  # written back with a good header
    assert len(list((log_dir / QUARANTINE_DIR).glob("*.log.*[0-9Z]"))) == 1


def test_a_zeroed_segment_is_quarantined_whole(log_dir: Path, filled: Fill) -> None:
    filled(60)
    victim = segment_files(log_dir)[0]
    lost = len(frames_of(victim))
    victim.write_bytes(bytes(victim.stat().st_size))
    with CommitLog(log_dir, segment_bytes=SEGMENT) as log:
        assert log.recovery is not None
        (quarantined,) = log.recovery.of(Event.QUARANTINED)
        assert "nothing salvaged" in quarantined.detail
        assert [number_of(e.record) for e in log.read()] == list(range(lost, 60))
    assert not victim.exists()


def test_a_segment_overlapping_its_predecessor_is_quarantined(log_dir: Path, filled: Fill) -> None:
    filled(60)
    files = segment_files(log_dir)
    impostor = log_dir / segment_name(int(files[2].stem) - 10)
    data = bytearray(files[2].read_bytes())
    data[8:16] = (int(impostor.stem)).to_bytes(8, "big")
    files[2].rename(impostor)
    impostor.write_bytes(bytes(data))
    with CommitLog(log_dir, segment_bytes=SEGMENT) as log:
        assert log.recovery is not None and log.recovery.of(Event.QUARANTINED)


def test_an_interrupted_quarantine_is_finished(log_dir: Path, filled: Fill) -> None:
    filled(60)
    victim = segment_files(log_dir)[1]
    salvage = victim.with_name(victim.name + ".salvage")
    # crash after the segment moved to quarantine, before its prefix took its name
    victim.rename(salvage)
    with CommitLog(log_dir, segment_bytes=SEGMENT) as log:
        assert log.recovery is not None and log.recovery.clean
    assert victim.exists() and not salvage.exists()
    # crash before the segment moved: the half-written prefix is dropped
    salvage.write_bytes(b"partial")
    with CommitLog(log_dir, segment_bytes=SEGMENT) as log:
        assert log.recovery is not None and log.recovery.clean
    assert not salvage.exists() and numbers(log_dir) == list(range(60))


def test_without_verify_all_damage_below_synced_shows_at_read(log_dir: Path, filled: Fill) -> None:
    filled(60)
    victim = segment_files(log_dir)[1]
    flip(victim, frames_of(victim)[1] + 20)
    with CommitLog(log_dir, segment_bytes=SEGMENT, verify_all=False) as log:
        assert log.recovery is not None and log.recovery.clean
        with pytest.raises(CorruptRecordError, match="bad crc"):
            list(log.read())
    reader = LogReader(log_dir)
    got = [number_of(e.record) for e in reader.read()]
    assert len(reader.problems) == 1 and "bad crc" in reader.problems[0]
    assert got[0] == 0 and got[-1] == 59 and len(got) < 60


def test_the_committed_file_is_rewritten_after_recovery(unsynced_tail: tuple[Path, list[int]]) -> None:
    crashed, starts = unsynced_tail
    with CommitLog(crashed, segment_bytes=SEGMENT) as log:
        # the unsynced record 10 survived whole: it is kept and now synced
        assert [number_of(e.record) for e in log.read()] == list(range(11))
        found = read_committed(crashed)
        assert found is not None and found.synced == found.written == log.next_offset


def test_a_segment_with_a_header_and_no_frame_stays_live(log_dir: Path, tmp_path: Path) -> None:
    """A crash right after a segment was created: the file stays, the next append goes in it."""
    with CommitLog(log_dir, segment_bytes=SEGMENT) as log:
        log.append([numbered(0)])
        log.flush()
        crashed = image(log_dir, tmp_path / "image")
    (segment,) = segment_files(crashed)
    os.truncate(segment, HEADER.size)
    (crashed / COMMITTED_NAME).unlink()
    with CommitLog(crashed, segment_bytes=SEGMENT) as log:
        assert log.recovery is not None and log.recovery.clean
        assert log.append([numbered(1)]) == [0]
        log.sync()
    assert numbers(crashed) == [1]
