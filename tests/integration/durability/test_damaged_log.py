"""A real broker restarted on a damaged commit log loses the damaged records, and no others.

Each test fills a broker whose log is cut into 1 MiB segments with QoS 1
messages queued for an offline persistent subscriber, stops it, damages the
files the way a failing disk would, starts it again and has the subscriber
take its queue. What must hold: every message whose record is intact is
delivered, exactly once; a damaged record costs its message only; the log
says what was lost (offsets, bytes); the session and the retained message
come back from the checkpoints that restate them when their own records
were in the damaged part.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest
from durability_kit import durable_config, raw, running, status

from actorbroker.codec import PubAck, Publish, Subscribe, Subscription
from actorbroker.persistence.reader import LogReader
from actorbroker.persistence.records import CheckpointCompleted, PublishAccepted
from actorbroker.persistence.segment import HEADER

PAD = b"." * 400  # about 430 bytes a record: 10,000 messages fill 4 segments and a bit
#: The queue limit would drop messages (and count them): not what is under test.
NO_QUEUE_LIMIT = {"max_queued_messages": 0, "max_queued_bytes": 0}


def fill(data: Path, count: int) -> dict[int, tuple[int, int]]:
    """Queue ``count`` messages for the offline session "sub" (after a retained one);
    return message number -> (offset, end offset) of its PublishAccepted record."""
    config = durable_config(data, segment_bytes=1 << 20, checkpoint_bytes=0, limits=NO_QUEUE_LIMIT)
    with running(config) as broker:
        sub = raw(broker)
        sub.connect("sub", clean=False)
        sub.send(Subscribe(1, (Subscription("q/#", 1),)))
        sub.recv()  # SUBACK
        sub.disconnect()
        pub = raw(broker)
        pub.connect("pub")
        pub.send(Publish("r/kept", b"retained", 1, True, False, 1))
        assert isinstance(pub.recv(), PubAck)
        for first in range(0, count, 500):
            batch = range(first, min(count, first + 500))
            pub.send(*(Publish("q/t", b"%06d" % n + PAD, 1, False, False, n % 60000 + 2)
                       for n in batch))
            for _ in batch:
                assert isinstance(pub.recv(), PubAck)
        assert status(broker)["queued"] == count
        pub.disconnect()
    written = {}
    for entry in LogReader(data / "log").read():
        record = entry.record
        if isinstance(record, PublishAccepted) and record.topic == "q/t" and not record.restated:
            written[int(record.payload[:6])] = (entry.offset, entry.next_offset)
    assert len(written) == count
    return written


def take_queue(data: Path, expected: int) -> tuple[list[int], dict[str, object]]:
    """Restart; the subscriber takes ``expected`` messages, then a marker proves there are no
    more. Returns the message numbers in order and the storage figures at start."""
    config = durable_config(data, segment_bytes=1 << 20, checkpoint_bytes=0, limits=NO_QUEUE_LIMIT)
    with running(config) as broker:
        figures = status(broker)
        sub = raw(broker)
        assert sub.connect("sub", clean=False).session_present
        got = []
        for _ in range(expected):
            packet = sub.recv()
            assert isinstance(packet, Publish) and packet.packet_id is not None, packet
            got.append(int(packet.payload[:6]))
            sub.send(PubAck(packet.packet_id))
        pub = raw(broker)
        pub.connect("pub")
        pub.send(Publish("q/t", b"marker", 1, False, False, 1))
        marker = sub.recv()
        assert isinstance(marker, Publish) and marker.payload == b"marker", "more than expected"
        retained = raw(broker)
        retained.connect("late")
        retained.send(Subscribe(1, (Subscription("r/#", 1),)))
        retained.recv()  # SUBACK
        kept = retained.recv()
        assert isinstance(kept, Publish) and kept.payload == b"retained" and kept.retain
    return got, figures


def segments(data: Path) -> list[Path]:
    return sorted((data / "log").glob("*.log"))


@pytest.mark.parametrize(("where", "straddle"), [(0.25, False), (0.5, True), (0.9, False)])
def test_sixteen_flipped_bytes_cost_the_messages_they_hit(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, where: float, straddle: bool,
) -> None:
    data = tmp_path / "data"
    written = fill(data, 10_000)
    files = segments(data)
    assert len(files) >= 4
    victim = files[len(files) // 2]
    base, size = int(victim.stem), victim.stat().st_size - HEADER.size
    # The first message at or after ``where`` of the segment that the next one follows
    # directly (checkpoints land where the group commits put them): 16 bytes in the middle
    # of its record, or across the end of its record and the start of the next.
    n = min(n for n, (o, e) in written.items()
            if o >= base + size * where and written.get(n + 1, (-1, -1))[0] == e)
    offset, end = written[n]
    start = end - 8 if straddle else (offset + end) // 2
    with victim.open("r+b") as f:
        f.seek(HEADER.size + start - base)
        old = f.read(16)
        f.seek(HEADER.size + start - base)
        f.write(bytes(b ^ 0xFF for b in old))
    hit = {n for n, (o, e) in written.items() if o < start + 16 and e > start}
    assert len(hit) == (2 if straddle else 1)
    with caplog.at_level(logging.INFO):
        got, _ = take_queue(data, len(written) - len(hit))
    assert got == sorted(set(written) - hit)
    (line,) = [r.getMessage() for r in caplog.records if "damaged range skipped" in r.getMessage()]
    first = min(written[n][0] for n in hit)
    last = max(written[n][1] for n in hit)
    assert f"offsets {first}..{last} ({last - first} bytes) lost" in line


def test_a_zeroed_first_segment_costs_its_records_only(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    data = tmp_path / "data"
    written = fill(data, 10_000)
    files = segments(data)
    first_end = int(files[1].stem)
    later_checkpoints = [e for e in LogReader(data / "log").read(first_end)
                         if isinstance(e.record, CheckpointCompleted)]
    assert later_checkpoints, "the test needs a checkpoint outside the zeroed segment"
    files[0].write_bytes(bytes(files[0].stat().st_size))
    lost = {n for n, (o, _) in written.items() if o < first_end}
    assert lost
    with caplog.at_level(logging.INFO):
        got, figures = take_queue(data, len(written) - len(lost))
    assert got == sorted(set(written) - lost)
    assert figures["sessions"] == 1 and figures["retained"] == 1
    text = caplog.text
    assert re.search(r"segment quarantined: segment 0{20}\.log at offset 0, \d+ bytes: bad magic",
                     text)
    assert f"session 'sub' lost {len(lost)} message(s), queued or in flight" in text
