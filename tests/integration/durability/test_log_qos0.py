"""[storage] log_qos0: QoS 0 PUBLISHes (and Wills) in the commit log for the data pipeline,
never held, never queued for offline sessions, flowing while the log refuses to store.

Real brokers on a data dir and raw clients; the log is read back after the
broker stopped. Without the option (the default) the log holds no QoS 0.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from durability_kit import connect5, durable_config, raw, running, status

from actorbroker.codec import PubAck, Publish, ReasonCode, Subscribe, Subscription, Will
from actorbroker.persistence import LogReader
from actorbroker.persistence.records import PublishAccepted, RetainedSet


def logged(data: Path) -> list[PublishAccepted | RetainedSet]:
    """The PublishAccepted and RetainedSet records of the log in ``data``, in log order."""
    return [e.record for e in LogReader(data / "log").read()
            if isinstance(e.record, (PublishAccepted, RetainedSet))]


@pytest.mark.parametrize("log_qos0", [False, True], ids=["default", "log_qos0"])
def test_qos0_publishes_and_wills_are_logged_only_with_log_qos0(tmp_path: Path,
                                                                  log_qos0: bool) -> None:
    data = tmp_path / "data"
    with running(durable_config(data, log_qos0=log_qos0)) as broker:
        sleeper = raw(broker)  # a durable session, offline while the messages come
        sleeper.connect("sleeper", clean=False)
        sleeper.send(Subscribe(1, (Subscription("q/#", 1),)))
        sleeper.recv()
        sleeper.disconnect()
        watcher = raw(broker)
        watcher.connect("watcher")
        watcher.send(Subscribe(1, (Subscription("q/#", 1),)))
        watcher.recv()
        willing = raw(broker)
        willing.connect("willing", will=Will("q/will", b"gone", 0, False))
        pub = raw(broker)
        pub.connect("pub")
        pub.send(Publish("q/a", b"0-1", 0), Publish("q/a", b"0-2", 0),
                 Publish("q/r", b"kept", 0, True), Publish("q/a", b"marker", 1, False, False, 1))
        assert isinstance(pub.recv(), PubAck)
        got = [watcher.recv() for _ in range(4)]  # q/r may come at any place (its own topic)
        assert [(p.payload, p.qos) for p in got if p.topic == "q/a"] == [  # type: ignore
            (b"0-1", 0), (b"0-2", 0), (b"marker", 1)]
        assert [p.payload for p in got if p.topic == "q/r"] == [b"kept"]  # type: ignore
        willing.close()  # no DISCONNECT: the Will goes out
        assert watcher.recv().payload == b"gone"  # type: ignore[attr-defined]
        sleeper = raw(broker)
        assert sleeper.connect("sleeper", clean=False).session_present
        first = sleeper.recv()  # QoS 0 is never queued for an offline session
        assert isinstance(first, Publish) and first.payload == b"marker"
        sleeper.send(PubAck(first.packet_id))  # type: ignore[arg-type]
        sleeper.disconnect()
    records = logged(data)
    qos0 = [(r.topic, r.payload, r.retain, r.client_id) for r in records
            if isinstance(r, PublishAccepted) and r.qos == 0]
    if log_qos0:
        assert qos0 == [("q/a", b"0-1", False, "pub"), ("q/a", b"0-2", False, "pub"),
                        ("q/r", b"kept", True, "pub"), ("q/will", b"gone", False, "willing")]
    else:
        assert qos0 == []
    assert [r.payload for r in records if isinstance(r, RetainedSet)] == [b"kept"]
    with running(durable_config(data, log_qos0=log_qos0)) as broker:
        assert status(broker)["queued"] == 0  # nothing of QoS 0 queued by the fold
        reader = raw(broker)
        reader.connect("reader")
        reader.send(Subscribe(1, (Subscription("q/r", 0),)))
        reader.recv()
        retained = reader.recv()
        assert isinstance(retained, Publish) and (retained.payload, retained.retain) == (
            b"kept", True)


def test_with_log_qos0_qos0_flows_while_the_log_refuses_to_store(tmp_path: Path) -> None:
    data = tmp_path / "data"
    config = durable_config(data, log_qos0=True, segment_bytes=1 << 20, max_disk_bytes=2 << 20,
                            limits=dict(max_queued_messages=0))
    with running(config) as broker:
        sleeper = raw(broker)  # keeps every segment needed: retention cannot make room
        sleeper.connect("sleeper", clean=False)
        sleeper.send(Subscribe(1, (Subscription("full/#", 1),)))
        sleeper.recv()
        sleeper.disconnect()
        watcher = raw(broker)
        watcher.connect("watcher")
        watcher.send(Subscribe(1, (Subscription("full/#", 0),)))
        watcher.recv()
        pub = raw(broker, level=5)
        connect5(pub, "pub")
        refused = None
        for n in range(1, 4000):
            pub.send(Publish("full/1", bytes(1000), 1, False, False, n % 60000 + 1))
            answer = pub.recv()
            assert isinstance(answer, PubAck)
            if answer.reason_code:
                refused = answer
                break
            watcher.recv()
        assert refused is not None and refused.reason_code == ReasonCode.QUOTA_EXCEEDED
        pub.send(Publish("full/0", b"qos 0 flows", 0))
        assert watcher.recv().payload == b"qos 0 flows"  # type: ignore[attr-defined]
