"""Damage anywhere in committed segments costs the records it touches, and no other.

Real log files are damaged at positions and lengths hypothesis picks (bytes
flipped, zeroed or replaced), then the log is opened (recovery) and read
through :class:`LogReader` before and after. Every record whose frame does
not overlap a damaged byte must come back at its offset, and nothing else
may come back (no record made up from damaged bytes or from a payload).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actorbroker.persistence import CommitLog, Event, LogReader
from actorbroker.persistence.quarantine import QUARANTINE_DIR
from actorbroker.persistence.records import (
    PublishAccepted,
    Record,
    SessionConnected,
    SessionQueued,
    Subscribed,
    encode_record,
)
from actorbroker.persistence.resync import find_anchor, map_frames
from actorbroker.persistence.segment import HEADER, encode_frame, memory_reader

SEGMENT = 4096


def varied(i: int) -> Record:
    """Record ``i``: several types and sizes, so that frames do not line up."""
    ts = 1_700_000_000_000_000 + i
    match i % 4:
        case 0:
            return PublishAccepted(f"t/{i}", bytes(range(256))[: (i * 37) % 300], qos=1, packet_id=i % 900 + 1,
                           client_id="pub", timestamp_us=ts)
        case 1:
            return SessionQueued(f"c{i}", i * 10, qos=1, topic=f"t/{i}", size=i, timestamp_us=ts)
        case 2:
            return Subscribed(f"c{i}", f"t/{i}/#", options=1, timestamp_us=ts)
        case _:
            return SessionConnected(f"c{i}", expiry_interval=i, timestamp_us=ts)


def write_log(directory: Path, count: int) -> dict[int, tuple[int, Record]]:
    """Records 0..count-1, synced; offset -> (end offset, record)."""
    with CommitLog(directory, segment_bytes=SEGMENT) as log:
        records = [varied(i) for i in range(count)]
        offsets = log.append(records)
        log.sync()
        ends = [*offsets[1:], log.next_offset]
    return {o: (e, r) for o, e, r in zip(offsets, ends, records)}


def file_ranges(directory: Path) -> list[tuple[Path, int, int]]:
    """(file, base, file size) of each segment, oldest first."""
    return [(p, int(p.stem), p.stat().st_size) for p in sorted(directory.glob("*.log"))]


def damage(directory: Path, spots: list[tuple[int, int, str]]) -> list[tuple[int, int]]:
    """Damage bytes of the segment files, spots as (position in all files, length, how).

    Returns the damaged ranges as log offsets (header bytes count as the first frame's).
    """
    files = file_ranges(directory)
    total = sum(size for _, _, size in files)
    hit = []
    for position, length, how in spots:
        position %= total
        for path, base, size in files:  # noqa: B007 (the one found is used below)
            if position < size:
                break
            position -= size
        length = min(length, size - position)
        with path.open("r+b") as f:
            f.seek(position)
            old = f.read(length)
            new = {"flip": bytes(b ^ 0xFF for b in old), "zero": bytes(length),
                   "ones": b"\x01" * length}[how]
            f.seek(position)
            f.write(new)
        start = base + max(0, position - HEADER.size)
        hit.append((start, base + max(0, position + length - HEADER.size)
                    if position + length > HEADER.size else start + 1))
    return hit


def check(found: list[tuple[int, Record]], written: dict[int, tuple[int, Record]],
          hit: list[tuple[int, int]]) -> None:
    untouched = {o for o, (e, _) in written.items() if all(e <= a or o >= b for a, b in hit)}
    for offset, record in found:
        assert offset in written and written[offset][1] == record, f"made-up record at {offset}"
    assert untouched <= {o for o, _ in found}, sorted(untouched - {o for o, _ in found})


SPOT = st.tuples(st.integers(0, 1 << 30), st.integers(1, 64), st.sampled_from(["flip", "zero", "ones"]))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spots=st.lists(SPOT, min_size=1, max_size=3))
def test_damage_costs_only_the_records_it_touches(spots: list[tuple[int, int, str]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "log"
        written = write_log(directory, 150)
        hit = damage(directory, spots)
        reader = LogReader(directory)
        check([(e.offset, e.record) for e in reader.read()], written, hit)
        with CommitLog(directory, segment_bytes=SEGMENT) as log:
            assert log.recovery is not None
            found = [(e.offset, e.record) for e in log.read()]
            assert not log.recovery.of(Event.TORN_TAIL)  # everything was committed
        check(found, written, hit)
        after = LogReader(directory)
        assert [(e.offset, e.record) for e in after.read()] == found and after.problems == []


def test_a_flip_in_the_middle_of_each_frame_costs_exactly_that_frame(tmp_path: Path) -> None:
    directory = tmp_path / "log"
    written = write_log(directory, 60)
    pristine = tmp_path / "pristine"
    shutil.copytree(directory, pristine)
    for offset, (end, _) in written.items():
        shutil.rmtree(directory)
        shutil.copytree(pristine, directory)
        base = max(b for _, b, _ in file_ranges(directory) if b <= offset)
        middle = HEADER.size + (offset + end) // 2 - base
        damage(directory, [(sum(s for _, b, s in file_ranges(directory) if b < base) + middle, 1,
                            "flip")])
        with CommitLog(directory, segment_bytes=SEGMENT) as log:
            assert log.recovery is not None
            (lost,) = log.recovery.of(Event.DAMAGED)
            assert (lost.offset, lost.lost_bytes, lost.frames) == (offset, end - offset, 1)
            assert [e.offset for e in log.read()] == [o for o in written if o != offset]


def test_a_frame_inside_a_damaged_payload_is_not_taken_for_a_record() -> None:
    inner = encode_frame(encode_record(SessionConnected("ghost", expiry_interval=9, timestamp_us=4)))
    carrier = PublishAccepted("t", inner * 3, qos=1, timestamp_us=5)
    data = bytearray(encode_frame(encode_record(carrier)) + encode_frame(encode_record(varied(1))))
    data[8 + 12 + 20] ^= 0xFF  # in the carrier's payload, before the frames it holds
    frames = map_frames(memory_reader(data), 0, len(data))
    assert [(r.start, r.frames) for r in frames.runs] == [(len(data) - len(encode_frame(
        encode_record(varied(1)))), 1)]
    assert [d.frames for d in frames.damage] == [1]


def test_a_damaged_length_hides_no_frame() -> None:
    """A length made larger points past real frames: they are found, not skipped."""
    frames = [encode_frame(encode_record(varied(i))) for i in range(5)]
    data = bytearray(b"".join(frames))
    length = int.from_bytes(data[0:4], "big") + len(frames[1]) + len(frames[2])
    data[0:4] = length.to_bytes(4, "big")  # now ends exactly where frame 3 starts
    found = map_frames(memory_reader(data), 0, len(data))
    assert [r.start for r in found.runs] == [len(frames[0])]
    assert found.frames == 4


def test_zeros_and_garbage_hold_no_anchor() -> None:
    rng = bytes((i * 7919 + 13) % 251 for i in range(1 << 16))
    for data in (bytes(1 << 20), rng):
        assert find_anchor(memory_reader(data), 0, len(data)) is None


def test_resynchronising_over_a_large_damaged_range_is_fast(tmp_path: Path) -> None:
    """8 MiB of zeros then garbage between two frames: found in well under a second."""
    tail = encode_frame(encode_record(varied(3)))
    data = bytes(4 << 20) + bytes((i * 7919 + 13) % 251 for i in range(4 << 20)) + tail
    began = time.perf_counter()
    assert find_anchor(memory_reader(data), 0, len(data)) == len(data) - len(tail)
    assert time.perf_counter() - began < 2.0


def test_an_interrupted_split_quarantine_is_finished(tmp_path: Path) -> None:
    directory = tmp_path / "log"
    written = write_log(directory, 60)
    victim, base, _ = file_ranges(directory)[1]
    data = bytearray(victim.read_bytes())
    data[HEADER.size + 30] ^= 0xFF  # inside the first frame
    victim.write_bytes(bytes(data))
    staged = tmp_path / "staged"
    shutil.copytree(directory, staged)
    with CommitLog(directory, segment_bytes=SEGMENT) as log:
        expected = [e.offset for e in log.read()]
    pieces = sorted(p.name for p in directory.glob("*.log")
                    if base <= int(p.stem) < base + len(data))
    assert pieces and victim.name not in pieces  # the first frame was hit: no prefix piece
    # crash after the segment moved, before its pieces took their names
    (staged / QUARANTINE_DIR).mkdir()
    victim_copy = staged / victim.name
    for name in pieces:
        (staged / f"{victim.name}.salvage.{name[:20]}").write_bytes((directory / name).read_bytes())
    victim_copy.rename(staged / QUARANTINE_DIR / (victim.name + ".crashed"))
    with CommitLog(staged, segment_bytes=SEGMENT) as log:
        assert log.recovery is not None and not log.recovery.of(Event.QUARANTINED)
        assert [e.offset for e in log.read()] == expected
    assert not list(staged.glob("*.salvage*"))
    assert set(written) > set(expected)


def test_salvages_of_a_segment_not_yet_moved_are_dropped(tmp_path: Path) -> None:
    directory = tmp_path / "log"
    write_log(directory, 60)
    victim, base, _ = file_ranges(directory)[1]
    data = bytearray(victim.read_bytes())
    data[HEADER.size + 30] ^= 0xFF
    victim.write_bytes(bytes(data))
    # crash while the pieces were being written: the segment is still in place
    (directory / f"{victim.name}.salvage.{base + 500:020d}").write_bytes(b"half")
    (directory / f"{victim.name}.salvage").write_bytes(b"half")
    with CommitLog(directory, segment_bytes=SEGMENT) as log:
        assert log.recovery is not None
        assert len(log.recovery.of(Event.QUARANTINED)) == 1  # done again, from the segment
    assert not list(directory.glob("*.salvage*"))
