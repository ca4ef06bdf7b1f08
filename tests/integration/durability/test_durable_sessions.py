"""Persistent sessions through broker restarts: queues, flows in flight, inbound QoS 2, retained, expiry.

Each test runs brokers one after the other on the same data directory.
A clean stop writes a snapshot; ``replay`` deletes it before the next
start, so that the state comes from the commit log alone (as after kill -9,
which the crash checker, tests/crashcheck/, does for real).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from durability_kit import connect5, durable_config, raw, running, status

from actorbroker.actors.names import Asleep, Waking
from actorbroker.codec import (
    PubAck,
    PubComp,
    Publish,
    PubRec,
    PubRel,
    Subscribe,
    Subscription,
)
from actorbroker.durable.snapshot import SNAPSHOT_NAME


def replay(data: Path) -> None:
    """Make the next start fold the log: no snapshot."""
    (data / SNAPSHOT_NAME).unlink(missing_ok=True)


@pytest.fixture(params=["snapshot", "log"])
def restart(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def subscribe(client: object, topic_filter: str, qos: int) -> None:
    client.send(Subscribe(1, (Subscription(topic_filter, qos),)))  # type: ignore[attr-defined]
    client.recv()  # type: ignore[attr-defined]  # SUBACK


def test_an_offline_queue_survives_a_restart(tmp_path: Path, restart: str) -> None:
    data = tmp_path / "data"
    config = durable_config(data)
    with running(config) as broker:
        sub = raw(broker)
        sub.connect("sub", clean=False)
        subscribe(sub, "q/#", 2)
        sub.disconnect()
        pub = raw(broker)
        pub.connect("pub")
        for n, qos in enumerate((1, 2, 1, 0)):
            pub.send(Publish("q/t", b"m%d" % n, qos, False, False, n + 1 if qos else None))
        assert [type(pub.recv()) for _ in range(3)] == [PubAck, PubRec, PubAck]
        pub.send(PubRel(2))
        assert isinstance(pub.recv(), PubComp)
        broker.wait_until(lambda m: m["dropped"].get("offline_qos0") == 1)
        assert isinstance(broker.call(lambda: broker.node.names.sessions["sub"]), Asleep), (
            "an offline durable session has no actor")
        assert status(broker)["queued"] == 3
    if restart == "log":
        replay(data)
    with running(config) as broker:
        assert status(broker)["sessions"] == 1
        sub = raw(broker)
        assert sub.connect("sub", clean=False).session_present
        got = [sub.recv() for _ in range(3)]
        assert [(p.payload, p.qos) for p in got] == [(b"m0", 1), (b"m1", 2), (b"m2", 1)]  # type: ignore[attr-defined]
        for packet in got:
            assert isinstance(packet, Publish) and packet.packet_id is not None
            sub.send(PubAck(packet.packet_id) if packet.qos == 1 else PubRec(packet.packet_id))
        assert isinstance(sub.recv(), PubRel)
        sub.send(PubComp(got[1].packet_id))  # type: ignore[attr-defined]
        sub.disconnect()
    with running(config) as broker:
        sub = raw(broker)
        assert sub.connect("sub", clean=False).session_present
        pub = raw(broker)
        pub.connect("pub2")
        pub.send(Publish("q/t", b"marker", 1, False, False, 1))
        assert sub.recv().payload == b"marker"  # type: ignore[attr-defined]  # nothing again


def test_flows_in_flight_resume_with_dup_and_pubrel_after_a_restart(tmp_path: Path,
                                                                    restart: str) -> None:
    data = tmp_path / "data"
    config = durable_config(data)
    with running(config) as broker:
        sub = raw(broker)
        sub.connect("sub", clean=False)
        subscribe(sub, "f/#", 2)
        pub = raw(broker)
        pub.connect("pub")
        pub.send(Publish("f/1", b"one", 1, False, False, 1),  # one topic: one order
                 Publish("f/1", b"two", 2, False, False, 2),
                 Publish("f/1", b"three", 2, False, False, 3))
        first = [sub.recv() for _ in range(3)]
        ids = [p.packet_id for p in first]  # type: ignore[attr-defined]
        sub.send(PubRec(ids[1]))  # "two" reaches the PUBREL stage; the others stay unacknowledged
        assert sub.recv() == PubRel(ids[1])
        sub.close()
        broker.wait_until(lambda m: m["clients_connected"] == 1)
    if restart == "log":
        replay(data)
    with running(config) as broker:
        sub = raw(broker)
        assert sub.connect("sub", clean=False).session_present
        again = [sub.recv() for _ in range(3)]
        assert again[0] == Publish("f/1", b"one", 1, False, True, ids[0])  # [MQTT-4.4.0-1]
        assert again[1] == Publish("f/1", b"three", 2, False, True, ids[2])
        assert again[2] == PubRel(ids[1]), "PUBREL, never the PUBLISH the client has"


def test_an_inbound_qos2_retry_after_a_restart_is_not_routed_twice(tmp_path: Path,
                                                                   restart: str) -> None:
    data = tmp_path / "data"
    config = durable_config(data)
    with running(config) as broker:
        sub = raw(broker)
        sub.connect("watch", clean=False)
        subscribe(sub, "once", 2)
        pub = raw(broker)
        pub.connect("pub", clean=False)
        pub.send(Publish("once", b"exactly", 2, False, False, 5))
        assert pub.recv() == PubRec(5)
        pub.close()  # PUBREC lost on the way, as far as the client knows
        got = sub.recv()
        sub.send(PubRec(got.packet_id))  # type: ignore[attr-defined]
        sub.recv()
        sub.send(PubComp(got.packet_id))  # type: ignore[attr-defined]
        broker.wait_until(lambda m: m["clients_connected"] == 1)
    if restart == "log":
        replay(data)
    with running(config) as broker:
        sub = raw(broker)
        assert sub.connect("watch", clean=False).session_present
        pub = raw(broker)
        assert pub.connect("pub", clean=False).session_present
        pub.send(Publish("once", b"exactly", 2, False, True, 5))
        assert pub.recv() == PubRec(5), "acknowledged again ..."
        pub.send(PubRel(5))
        assert pub.recv() == PubComp(5)
        pub.send(Publish("once", b"marker", 1, False, False, 6))
        assert sub.recv().payload == b"marker"  # type: ignore[attr-defined]  # ... not routed again


def test_retained_messages_and_subscriptions_survive_and_cleared_ones_stay_cleared(
        tmp_path: Path, restart: str) -> None:
    data = tmp_path / "data"
    config = durable_config(data)
    with running(config) as broker:
        pub = raw(broker)
        pub.connect("pub")
        pub.send(Publish("r/q0", b"zero", 0, True), Publish("r/q1", b"one", 1, True, False, 1),
                 Publish("r/gone", b"x", 1, True, False, 2), Publish("r/gone", b"", 0, True))
        assert [pub.recv(), pub.recv()] == [PubAck(1), PubAck(2)]
        pub.disconnect()
        broker.wait_until(lambda m: m["retained"] == 2)
    if restart == "log":
        replay(data)
    with running(config) as broker:
        assert broker.metrics()["retained"] == 2
        sub = raw(broker)
        sub.connect("late")
        sub.send(Subscribe(1, (Subscription("r/#", 1),)))
        sub.recv()
        got = sorted((p.topic, p.payload, p.retain) for p in (sub.recv(), sub.recv()))  # type: ignore[attr-defined]
        assert got == [("r/q0", b"zero", True), ("r/q1", b"one", True)]


def test_a_clean_session_leaves_nothing_and_a_clean_start_discards_a_durable_one(
        tmp_path: Path) -> None:
    data = tmp_path / "data"
    config = durable_config(data)
    with running(config) as broker:
        fleeting = raw(broker)
        fleeting.connect("fleeting", clean=True)
        subscribe(fleeting, "c/#", 1)
        durable = raw(broker)
        durable.connect("durable", clean=False)
        subscribe(durable, "c/#", 1)
        durable.disconnect()
        fleeting.disconnect()
        pub = raw(broker)
        pub.connect("pub")
        pub.send(Publish("c/t", b"queued", 1, False, False, 1))
        assert pub.recv() == PubAck(1)
        pub.disconnect()
        assert status(broker)["queued"] == 1
        again = raw(broker)
        assert not again.connect("durable", clean=True).session_present
        again.disconnect()
        broker.wait_until(lambda m: m["sessions"] == 0 and m["subscriptions"] == 0)
    replay(data)
    with running(config) as broker:
        assert status(broker)["sessions"] == 0 and broker.metrics()["subscriptions"] == 0


def test_an_expired_session_is_removed_from_the_broker_and_the_log(tmp_path: Path) -> None:
    data = tmp_path / "data"
    config = durable_config(data)
    with running(config) as broker:
        short = raw(broker, level=5)
        connect5(short, "short", clean=True, expiry=1)
        subscribe(short, "e/#", 1)
        short.disconnect()
        long = raw(broker, level=5)
        connect5(long, "long", clean=True, expiry=3600)
        long.disconnect()
        broker.wait_until(lambda m: m["sessions"] == 1 and m["subscriptions"] == 0, timeout=10)
        assert status(broker)["sessions"] == 1
    replay(data)
    with running(config) as broker:
        assert status(broker)["sessions"] == 1 and broker.metrics()["sessions"] == 1
        back = raw(broker, level=5)
        assert not connect5(back, "short", clean=False, expiry=60).session_present


def test_an_offline_session_expires_after_a_restart_too(tmp_path: Path) -> None:
    data = tmp_path / "data"
    config = durable_config(data)
    with running(config) as broker:
        client = raw(broker, level=5)
        connect5(client, "brief", clean=True, expiry=1)
        subscribe(client, "x", 1)
        client.disconnect()
    with running(config) as broker:  # the keeper counts from when it went offline
        broker.wait_until(lambda m: m["sessions"] == 0 and m["subscriptions"] == 0, timeout=10)
        assert status(broker)["sessions"] == 0


def test_mqtt3_clients_get_unacknowledged_flows_again_while_connected(tmp_path: Path) -> None:
    config = durable_config(tmp_path / "data", retry=dict(base=0.2, cap=1.0, jitter=0.0))
    with running(config) as broker:
        sub = raw(broker)
        sub.connect("slow", clean=True)
        subscribe(sub, "r", 1)
        v5 = raw(broker, level=5)
        connect5(v5, "five", clean=True)
        subscribe(v5, "r", 1)
        pub = raw(broker)
        pub.connect("pub")
        pub.send(Publish("r", b"again", 1, False, False, 1))
        first = sub.recv()
        assert isinstance(first, Publish) and not first.dup
        assert sub.recv() == Publish("r", b"again", 1, False, True, first.packet_id)
        sub.send(PubAck(first.packet_id))  # type: ignore[arg-type]
        got = v5.recv()
        assert isinstance(got, Publish) and not got.dup
        pub.send(Publish("r", b"marker", 0))
        assert v5.recv().payload == b"marker"  # type: ignore[attr-defined]  # MQTT 5: no resend


def test_durability_memory_writes_nothing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with running(durable_config(data, durability="memory")) as broker:
        assert broker.node.names.storage() is None
        client = raw(broker)
        client.connect("m", clean=False)
        client.send(Publish("t", b"x", 1, False, False, 1))
        assert client.recv() == PubAck(1)
    assert not (data / "log").exists()


def test_os_mode_keeps_an_offline_queue_across_a_restart_too(tmp_path: Path) -> None:
    data = tmp_path / "data"
    config = durable_config(data, durability="os")
    with running(config) as broker:
        sub = raw(broker)
        sub.connect("sub", clean=False)
        subscribe(sub, "os/t", 1)
        sub.disconnect()
        pub = raw(broker)
        pub.connect("pub")
        pub.send(Publish("os/t", b"written", 1, False, False, 1))
        assert pub.recv() == PubAck(1)
    replay(data)
    with running(config) as broker:
        sub = raw(broker)
        assert sub.connect("sub", clean=False).session_present
        assert sub.recv().payload == b"written"  # type: ignore[attr-defined]


def test_group_commit_stores_many_publishes_per_sync(tmp_path: Path) -> None:
    with running(durable_config(tmp_path / "data")) as broker:
        clients = [raw(broker) for _ in range(5)]
        for n, client in enumerate(clients):
            client.connect(f"pub{n}")
        before = status(broker)
        for client in clients:
            client.send(*(Publish("g/t", b"x", 1, False, False, i) for i in range(1, 201)))
        for client in clients:
            assert [client.recv() for _ in range(200)] == [PubAck(i) for i in range(1, 201)]
        after = status(broker)
    records, batches = after["records"] - before["records"], after["batches"] - before["batches"]
    assert records == 1000 and batches < records / 4, (records, batches)


def test_a_resuming_session_keeps_its_name_so_nothing_routed_meanwhile_is_dropped(
        tmp_path: Path) -> None:
    """From the CONNECT that wakes a hibernated session until its new actor runs, a topic
    actor must still find the session by name (the placeholder), never nothing: with no
    name it would count a logged message as dropped (``session_unavailable``), which
    the kill -9 test caught after a restart. A watcher checks the name on every loop turn."""
    config = durable_config(tmp_path / "data")
    with running(config) as broker:
        sub = raw(broker)
        sub.connect("sub", clean=False)
        subscribe(sub, "q/#", 1)
        sub.disconnect()
        names = broker.node.names
        broker.wait_until(lambda _: broker.call(lambda: type(names.sessions.get("sub")))
                          is Asleep)  # hibernated
        seen: list[str] = []
        watching = [True]

        def watch() -> None:  # one call per loop turn while the client resumes
            ref = names.sessions.get("sub")
            kind = ("none" if ref is None else "sleeping" if type(ref) is Asleep
                    else "waking" if type(ref) is Waking else "actor")
            if not seen or seen[-1] != kind:
                seen.append(kind)
            if watching[0]:
                broker.loop.call_soon(watch)

        broker.call(watch)
        pub = raw(broker)
        pub.connect("pub")
        sub = raw(broker)
        assert sub.connect("sub", clean=False).session_present
        for n in range(1, 21):
            pub.send(Publish("q/t", b"m%d" % n, 1, False, False, n))
        assert all(isinstance(pub.recv(), PubAck) for _ in range(20))
        got = []
        while len(got) < 20:
            packet = sub.recv()
            assert isinstance(packet, Publish), packet
            got.append(packet.payload)
            sub.send(PubAck(packet.packet_id))  # type: ignore[arg-type]
        watching[0] = False
        assert got == [b"m%d" % n for n in range(1, 21)]
        # Waking lasts from the CONNECT until the actor registers: a loop turn or more.
        assert seen in (["sleeping", "actor"], ["sleeping", "waking", "actor"]), (
            f"the session's name went through {seen}")
        assert "session_unavailable" not in broker.metrics()["dropped"]


def _hibernated(broker: object, client_id: str, timeout: float = 10.0) -> None:
    """Poll until ``client_id``'s session has hibernated (its actor stops asynchronously)."""
    pause = threading.Event()
    deadline = time.monotonic() + timeout
    while not broker.call(  # type: ignore[attr-defined]
            lambda: isinstance(broker.node.names.sessions.get(client_id), Asleep)):  # type: ignore[attr-defined]
        assert time.monotonic() < deadline, f"{client_id!r} did not hibernate"
        pause.wait(0.01)


@pytest.mark.parametrize(("queue_bytes", "count", "size", "kept"), [
    (None, 1500, 16, 1500),  # the default: beyond max_queued_messages (1000), nothing lost
    (1000, 15, 100, 10),     # 1,000 payload bytes: ten messages of 100
])
def test_an_offline_durable_queue_is_bounded_by_bytes_not_by_a_message_count(
        tmp_path: Path, queue_bytes: int | None, count: int, size: int, kept: int) -> None:
    storage = {} if queue_bytes is None else {"durable_queue_bytes": queue_bytes}
    with running(durable_config(tmp_path / "data", **storage)) as broker:
        sub = raw(broker)
        sub.connect("sub", clean=False)
        subscribe(sub, "b/#", 1)
        sub.disconnect()
        _hibernated(broker, "sub")
        pub = raw(broker)
        pub.connect("pub")
        for n in range(count):
            pub.send(Publish("b/t", b"%d:" % n + b"x" * (size - len(b"%d:" % n)), 1, False,
                             False, n + 1))
        assert [type(pub.recv()) for _ in range(count)] == [PubAck] * count
        assert status(broker)["queued"] == kept
        metrics = broker.wait_until(lambda m: m["dropped"].get("queue_full", 0) == count - kept)
        assert set(metrics["dropped"]) <= {"queue_full"}
        sub = raw(broker)
        assert sub.connect("sub", clean=False).session_present
        for n in range(kept):
            packet = sub.recv()
            assert isinstance(packet, Publish) and packet.payload.startswith(b"%d:" % n)
            assert packet.packet_id is not None
            sub.send(PubAck(packet.packet_id))
        pub.send(Publish("b/t", b"marker", 1, False, False, 1))
        assert sub.recv().payload == b"marker"  # type: ignore[attr-defined]  # nothing else
