"""Sessions: offline queue of a persistent session, DUP redelivery, clean sessions, take-over, limits."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from mqtt_testkit import Client, RawClient, broker_config

from actorbroker.app import RunningBroker
from actorbroker.config import StorageConfig
from actorbroker.codec import ConnAck, PubAck, PubComp, Publish, PubRec, PubRel, Subscribe, Subscription

Clients = Callable[..., Client]
Raw = Callable[..., RawClient]


def test_persistent_session_keeps_subscriptions_and_queues_qos1_and_2_offline(
        client: Clients, broker: RunningBroker) -> None:
    offline = client("persist", clean=False)
    offline.subscribe("p/#", 2)
    offline.disconnect()
    pub = client("persist-pub")
    for qos in (0, 1, 2):
        pub.publish("p/x", f"q{qos}".encode(), qos=qos)
    broker.wait_until(lambda m: m["dropped"].get("offline_qos0") == 1)  # counted, not silent
    back = client("persist", clean=False, connect=False)
    result = back.connect()
    assert (result.rc, result.session_present) == (0, True)
    got = back.expect_many(2)
    assert [(m.payload, m.qos) for m in got] == [(b"q1", 1), (b"q2", 2)]
    pub.publish("p/x", b"live", qos=1)  # the subscription survived too
    assert back.expect().payload == b"live"


def test_clean_session_discards_everything(client: Clients, raw: Raw,
                                           broker: RunningBroker) -> None:
    c = client("discard", clean=False)
    c.subscribe("d/#", 1)
    c.disconnect()
    client("discard-pub").publish("d/1", b"queued", qos=1)
    r = raw()
    assert r.connect("discard", clean=True) == ConnAck(False, 0)  # [MQTT-3.1.2-6]
    client("discard-pub2").publish("d/1", b"after", qos=1)
    r.send(Subscribe(1, (Subscription("marker", 0),)))
    r.recv()  # SUBACK: nothing queued came before it
    client("discard-pub3").publish("marker", b"m")
    assert r.recv() == Publish("marker", b"m")
    metrics = broker.metrics()
    assert metrics["dropped"].get("session_ended") == 1
    assert metrics["subscriptions"] == 1


def test_unacknowledged_qos1_is_resent_with_dup_on_reconnect(raw: Raw,
                                                              client: Clients) -> None:
    sub = raw()
    sub.connect("dup1", clean=False)
    sub.send(Subscribe(1, (Subscription("dup/1", 1),)))
    sub.recv()
    client("dup1-pub").publish("dup/1", b"again", qos=1)
    first = sub.recv()
    assert isinstance(first, Publish) and not first.dup
    sub.close()  # no PUBACK
    back = raw()
    assert back.connect("dup1", clean=False) == ConnAck(True, 0)
    resent = back.recv()
    # [MQTT-4.4.0-1]: same packet id, DUP=1
    assert isinstance(resent, Publish)
    assert (resent.payload, resent.packet_id, resent.dup) == (b"again", first.packet_id, True)
    back.send(PubAck(resent.packet_id))  # type: ignore[arg-type]


def test_qos2_redelivery_resends_publish_then_pubrel(raw: Raw, client: Clients) -> None:
    sub = raw()
    sub.connect("dup2", clean=False)
    sub.send(Subscribe(1, (Subscription("dup/2", 2),)))
    sub.recv()
    pub = client("dup2-pub")
    pub.publish("dup/2", b"a", qos=2)
    pub.publish("dup/2", b"b", qos=2)
    a, b = sub.recv(), sub.recv()
    assert isinstance(a, Publish) and isinstance(b, Publish)
    sub.send(PubRec(a.packet_id))  # type: ignore[arg-type]
    assert sub.recv() == PubRel(a.packet_id)  # type: ignore[arg-type]
    sub.close()  # b unacknowledged, a awaiting PUBCOMP
    back = raw()
    assert back.connect("dup2", clean=False) == ConnAck(True, 0)
    resent = [back.recv(), back.recv()]
    # Unacknowledged PUBLISH (DUP) then the PUBREL of the one past PUBREC.
    assert resent[0] == Publish("dup/2", b"b", 2, dup=True, packet_id=b.packet_id)
    assert resent[1] == PubRel(a.packet_id)  # type: ignore[arg-type]
    back.send(PubComp(a.packet_id), PubRec(b.packet_id))  # type: ignore[arg-type]
    assert back.recv() == PubRel(b.packet_id)  # type: ignore[arg-type]


def test_takeover_closes_the_first_connection_and_keeps_the_session(
        client: Clients, broker: RunningBroker) -> None:
    watcher = client("to-watch")
    watcher.subscribe("to/will", 1)
    first = client("twin", clean=False, will=("to/will", b"first is gone", 1, False))
    first.subscribe("to/data", 1)
    second = client("twin", clean=False, connect=False)
    result = second.connect()
    assert (result.rc, result.session_present) == (0, True)  # [MQTT-3.1.4-2]
    assert first.disconnected.wait(5)
    assert watcher.expect().payload == b"first is gone"  # it did not send DISCONNECT
    client("to-pub").publish("to/data", b"for the second", qos=1)
    assert second.expect().payload == b"for the second"
    assert first.messages.qsize() == 0
    metrics = broker.metrics()
    assert metrics["clients_connected"] == 3 and metrics["sessions"] == 3


def test_a_full_queue_drops_new_messages_and_counts_them(
        start_broker: Callable[..., RunningBroker], tmp_path: Path) -> None:
    # Without the commit log: a durable session's offline queue is bounded by bytes instead
    # (tests/integration/durability/test_durable_sessions.py).
    config = broker_config(tmp_path, max_queued_messages=3)
    config = dataclasses.replace(config, storage=StorageConfig(durability="memory"))
    running = start_broker(config)
    sub = Client(running.host, running.port, "slowpoke", clean=False)
    pub = Client(running.host, running.port, "flood")
    try:
        assert sub.connect().rc == 0
        sub.subscribe("full", 1)
        sub.disconnect()
        assert pub.connect().rc == 0
        for i in range(5):
            pub.publish("full", str(i).encode(), qos=1)
        running.wait_until(lambda m: m["dropped"].get("queue_full") == 2)
        back = Client(running.host, running.port, "slowpoke", clean=False)
        try:
            assert back.connect().session_present
            assert [m.payload for m in back.expect_many(3)] == [b"0", b"1", b"2"]
        finally:
            back.close()
    finally:
        sub.close()
        pub.close()
