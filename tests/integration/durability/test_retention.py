"""Retention: old segments go once a checkpoint restates the state and no session needs them; a restart still works."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from durability_kit import durable_config, raw, running, status

from actorbroker.app import RunningBroker
from actorbroker.codec import PubAck, Publish, Subscribe, Subscription


def until(broker: RunningBroker, check: Any, timeout: float = 15.0) -> dict[str, Any]:
    """Poll the storage figures until ``check(figures)`` (ticks run every second: no event)."""
    deadline = time.monotonic() + timeout
    while True:
        figures = status(broker)
        if check(figures):
            return figures
        assert time.monotonic() < deadline, f"never: {figures}"
        time.sleep(0.05)


def test_segments_go_once_a_checkpoint_covers_them_and_no_session_needs_them(tmp_path: Path
                                                                             ) -> None:
    data = tmp_path / "data"
    config = durable_config(data, segment_bytes=1 << 20, retention_bytes=1 << 20,
                            checkpoint_bytes=1 << 20)
    with running(config) as broker:
        slow = raw(broker)
        slow.connect("slow", clean=False)
        slow.send(Subscribe(1, (Subscription("keep", 1),)))
        slow.recv()
        slow.disconnect()
        pub = raw(broker)
        pub.connect("pub")
        pub.send(Publish("keep", b"old but needed", 1, False, False, 1))
        assert pub.recv() == PubAck(1)
        for start in range(0, 3000, 300):
            pub.send(*(Publish("other", bytes(1000), 1, False, False, n + 2)
                       for n in range(start, start + 300)))
            for _ in range(300):
                assert isinstance(pub.recv(), PubAck)
        pinned = until(broker, lambda f: f["checkpoints"] >= 1 and f["segments"] >= 3)
        assert pinned["deleted_segments"] == 0 and pinned["first_offset"] == 0, (
            "the slow session's message pins the first segment")
        slow = raw(broker)
        assert slow.connect("slow", clean=False).session_present
        message = slow.recv()
        assert isinstance(message, Publish) and message.payload == b"old but needed"
        slow.send(PubAck(message.packet_id))  # type: ignore[arg-type]
        slow.disconnect()
        freed = until(broker, lambda f: f["deleted_segments"] >= 1)
        assert freed["first_offset"] > 0 and freed["size_bytes"] < pinned["size_bytes"]
    with running(config) as broker:  # starts from the checkpoint; nothing it needs is gone
        slow = raw(broker)
        assert slow.connect("slow", clean=False).session_present
        pub = raw(broker)
        pub.connect("pub")
        pub.send(Publish("keep", b"new", 1, False, False, 1))
        assert slow.recv().payload == b"new"  # type: ignore[attr-defined]
