"""Faults: a damaged log or snapshot never stops the broker; a full disk refuses QoS 1/2 and recovers by itself.

Damage is done to the files of a stopped broker, as a crash, a bad disk or
an operator would leave them: a torn tail, a flipped bit, a segment cut
short or missing, a snapshot signed with another key. The broker must
start, report, and deliver everything that was not in the damaged part.
The full disk is a real 4 MiB tmpfs (root only; skipped otherwise).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from durability_kit import connect5, durable_config, raw, running, status

from actorbroker.app import Broker, BrokerStartError
from actorbroker.codec import PubAck, Publish, PubRec, ReasonCode, Subscribe, Subscription
from actorbroker.durable.snapshot import SNAPSHOT_NAME
from actorbroker.persistence import LogReader
from actorbroker.persistence.records import PublishAccepted

COUNT = 2400  # 1 KiB messages: the log spans three 1 MiB segments
PAYLOAD = 1000


def fill(data: Path) -> dict[bytes, int]:
    """A durable offline subscriber with COUNT messages queued; payload -> segment of its record."""
    config = durable_config(data, segment_bytes=1 << 20, limits=dict(max_queued_messages=0))
    with running(config) as broker:
        sub = raw(broker)
        sub.connect("sub", clean=False)
        sub.send(Subscribe(1, (Subscription("c/#", 1),)))
        sub.recv()
        sub.disconnect()
        pub = raw(broker)
        pub.connect("pub")
        for start in range(0, COUNT, 200):
            pub.send(*(Publish("c/t", b"%06d" % n + bytes(PAYLOAD - 6), 1, False, False, n % 60000 + 1)
                       for n in range(start, start + 200)))
            for _ in range(200):
                assert isinstance(pub.recv(), PubAck)
        assert status(broker)["segments"] >= 3
    where = {}
    for segment in LogReader(data / "log").segments():
        for entry in LogReader(data / "log").read(segment.base, segment.end):
            if isinstance(entry.record, PublishAccepted):
                where[entry.record.payload[:6]] = segment.base
    assert len(where) == COUNT
    return where


def drain(data: Path) -> tuple[list[bytes], str]:
    """Start on ``data``; the payload ids the subscriber gets (until a marker), and the log."""
    config = durable_config(data, segment_bytes=1 << 20, limits=dict(max_queued_messages=0))
    with running(config) as broker:
        sub = raw(broker)
        assert sub.connect("sub", clean=False).session_present
        marker = raw(broker)
        marker.connect("marker")
        marker.send(Publish("c/t", b"marker", 1, False, False, 1))
        got = []
        while True:
            packet = sub.recv()
            assert isinstance(packet, Publish)
            sub.send(PubAck(packet.packet_id))  # type: ignore[arg-type]
            if packet.payload == b"marker":
                break
            got.append(packet.payload[:6])
        figures = status(broker)
    return got, str(figures)


def segment_files(data: Path) -> list[Path]:
    return sorted((data / "log").glob("*.log"))


@pytest.mark.parametrize("damage", ["torn tail", "bit flip", "cut short", "missing", "snapshot"])
def test_a_damaged_log_or_snapshot_never_stops_the_broker(tmp_path: Path, damage: str,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    data = tmp_path / "data"
    where = fill(data)
    files = segment_files(data)
    first, middle = files[0], files[1]
    lost: set[int] = set()
    if damage == "torn tail":
        with files[-1].open("ab") as f:
            f.write(b"\x00\x00\x10\x00\xde\xad")  # half a frame, as a crash mid-write leaves it
    elif damage == "bit flip":
        raw_bytes = bytearray(first.read_bytes())
        raw_bytes[len(raw_bytes) // 2] ^= 0x10
        first.write_bytes(bytes(raw_bytes))
        lost = {int(first.stem)}  # what follows the flip in that segment is quarantined
    elif damage == "cut short":
        with middle.open("r+b") as f:
            f.truncate(middle.stat().st_size // 2)
        lost = {int(middle.stem)}
    elif damage == "missing":
        middle.unlink()
        lost = {int(middle.stem)}
    else:
        snapshot = bytearray((data / SNAPSHOT_NAME).read_bytes())
        snapshot[-10] ^= 0xFF
        (data / SNAPSHOT_NAME).write_bytes(bytes(snapshot))
    got, figures = drain(data)
    intact = sorted(p for p, base in where.items() if base not in lost)
    assert len(got) == len(set(got)) and got == sorted(got), "no duplicates, in order"
    assert set(intact) <= set(got), f"{len(set(intact) - set(got))} intact messages lost: {figures}"
    assert set(got) <= set(where)
    if not lost:
        assert len(got) == COUNT
    expected = {"torn tail": "torn tail truncated", "bit flip": "segment quarantined",
                "cut short": "segment quarantined", "missing": "gap between segments",
                "snapshot": "bad signature"}[damage]
    assert expected in caplog.text
    if damage in ("bit flip", "cut short"):
        assert list((data / "log" / "quarantine").glob("*.reason"))


def test_a_second_broker_on_the_same_data_directory_refuses_to_start(tmp_path: Path) -> None:
    config = durable_config(tmp_path / "data")
    with running(config):
        with pytest.raises(BrokerStartError, match="open in another process"):
            with Broker.run_in_thread(config):
                pass


# -- a full disk ------------------------------------------------------------------------


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs, unmounted afterwards."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a size-limited tmpfs needs root")
    mountpoint = tmp_path / "small"
    mountpoint.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mountpoint)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"mount -t tmpfs is not permitted here: {done.stderr.strip()}")
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", "-l", str(mountpoint)], check=False)


def test_a_full_disk_refuses_qos1_and_qos2_lets_qos0_through_and_recovers(small_fs: Path) -> None:
    config = durable_config(small_fs / "data", segment_bytes=1 << 20)
    with running(config) as broker:
        watcher = raw(broker)
        watcher.connect("watcher")
        watcher.send(Subscribe(1, (Subscription("full/#", 1),)))
        watcher.recv()
        pub5 = raw(broker, level=5)
        connect5(pub5, "pub5")
        pub3 = raw(broker)
        pub3.connect("pub3")
        filler = small_fs / "filler"
        free = shutil.disk_usage(small_fs).free
        filler.write_bytes(bytes(max(0, free - 48 * 1024)))
        refused = None
        for n in range(1, 200):
            pub5.send(Publish("full/5", bytes(8192), 1, False, False, n))
            answer = pub5.recv()
            assert isinstance(answer, PubAck)
            if answer.reason_code:
                refused = answer
                break
            assert watcher.recv().topic == "full/5"  # type: ignore[attr-defined]
        assert refused is not None, "the disk never filled up"
        assert refused.reason_code == ReasonCode.QUOTA_EXCEEDED
        assert "disk full" in (refused.properties.reason_string or "")
        pub5.send(Publish("full/5", b"two", 2, False, False, 300))
        answer = pub5.recv()
        assert isinstance(answer, PubRec) and answer.reason_code == ReasonCode.QUOTA_EXCEEDED
        pub3.send(Publish("full/0", b"qos 0 flows", 0))
        assert watcher.recv().payload == b"qos 0 flows"  # type: ignore[attr-defined]
        pub3.send(Publish("full/3", b"refused", 1, False, False, 1))
        with pytest.raises(EOFError):
            pub3.recv()  # MQTT 3: no PUBACK, the connection closes; the client resends later
        filler.unlink()
        accepted = False
        for n in range(400, 2000):  # the client retries; the broker probes with backoff
            # Packet id 300 first: its refused QoS 2 flow ended, so the id is a new message.
            pub5.send(Publish("full/5", b"after", 2, False, False, 300 if n == 400 else n))
            answer = pub5.recv(timeout=15)
            assert isinstance(answer, PubRec)
            if answer.reason_code == 0:
                accepted = True
                break
        assert accepted, "service never resumed"
        assert watcher.recv().payload == b"after"  # type: ignore[attr-defined]
        assert status(broker)["failure"] is None
