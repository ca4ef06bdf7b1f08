"""Retained messages: stored with their QoS, RETAIN flag rules, clearing, surviving the publisher."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from mqtt_testkit import Client, RawClient

from actorbroker.app import RunningBroker
from actorbroker.codec import PubAck, Publish, SubAck, Subscribe, Subscription

Clients = Callable[..., Client]
Raw = Callable[..., RawClient]


@pytest.mark.parametrize(("pub_qos", "sub_qos"), [(0, 2), (1, 1), (2, 1), (2, 2), (1, 0)])
def test_retained_message_is_sent_on_subscribe_with_retain_1(
        client: Clients, pub_qos: int, sub_qos: int) -> None:
    pub = client("rpub")
    pub.publish("r/a", b"kept", qos=pub_qos, retain=True)
    pub.disconnect()  # it survives its publisher
    sub = client("rsub")
    sub.subscribe("r/a", sub_qos)
    message = sub.expect()
    # [MQTT-3.3.1-8]: RETAIN=1 because of the SUBSCRIBE; QoS as stored, lowered to the grant.
    assert (message.payload, message.retain, message.qos) == (b"kept", True, min(pub_qos, sub_qos))


def test_live_forwarding_has_retain_0_and_the_latest_replaces(client: Clients) -> None:
    sub = client("live-sub")
    sub.subscribe("r/live", 1)
    pub = client("live-pub")
    pub.publish("r/live", b"v1", qos=1, retain=True)
    assert sub.expect().retain is False  # [MQTT-3.3.1-9]
    pub.publish("r/live", b"v2", qos=1, retain=True)
    assert sub.expect().payload == b"v2"
    late = client("live-late")
    late.subscribe("r/live", 1)
    message = late.expect()
    assert (message.payload, message.retain) == (b"v2", True)


@pytest.mark.parametrize("clear_qos", [0, 1, 2])
def test_an_empty_payload_clears_the_retained_message(client: Clients, clear_qos: int) -> None:
    pub = client("clear-pub")
    pub.publish("r/clear", b"old", qos=1, retain=True)
    watcher = client("clear-watch")
    watcher.subscribe("r/clear", 2)
    assert watcher.expect().retain is True
    pub.publish("r/clear", b"", qos=clear_qos, retain=True)  # [MQTT-3.3.1-10]
    cleared = watcher.expect()
    # Forwarded as a normal message, by the registry after it cleared the index.
    assert (cleared.payload, cleared.retain) == (b"", False)
    fresh = client("clear-fresh")
    fresh.subscribe("r/clear", 2)
    pub.publish("r/clear", b"marker", qos=1)  # not retained: comes live, and first
    message = fresh.expect()
    assert (message.payload, message.retain) == (b"marker", False)  # [MQTT-3.3.1-11]


def test_wildcard_subscribe_gets_every_matching_retained_message_once(raw: Raw) -> None:
    pub = raw()
    pub.connect("many-pub")
    for i, topic in enumerate(["m/a", "m/b", "m/b/c", "other"], start=1):
        pub.send(Publish(topic, topic.encode(), 1, retain=True, packet_id=i))
        assert pub.recv() == PubAck(i)
    sub = raw()
    sub.connect("many-sub")
    # Two overlapping filters: each retained topic still comes once, at the higher grant.
    sub.send(Subscribe(3, (Subscription("m/#", 1), Subscription("m/+", 0))))
    assert sub.recv() == SubAck(3, (1, 0))
    got = {}
    for _ in range(3):
        packet = sub.recv()
        assert isinstance(packet, Publish) and packet.retain
        got[packet.topic] = packet.qos
        sub.send(PubAck(packet.packet_id))  # type: ignore[arg-type]
    assert got == {"m/a": 1, "m/b": 1, "m/b/c": 1}
    with pytest.raises(TimeoutError):
        sub.recv(timeout=0.3)


def test_retained_count_and_limit(start_broker: Callable[..., RunningBroker],
                                  tmp_path: object) -> None:
    running = start_broker(sys_interval=0, max_retained=2)
    pub = Client(running.host, running.port, "limit-pub")
    try:
        pub.connect()
        for topic in ("lim/1", "lim/2", "lim/3"):
            pub.publish(topic, b"x", qos=1, retain=True)
        metrics = running.wait_until(lambda m: m["dropped"].get("retained_limit") == 1)
        assert metrics["retained"] == 2
        pub.publish("lim/1", b"y", qos=1, retain=True)  # replacing one still works
        pub.publish("lim/2", b"", qos=1, retain=True)   # and clearing
        running.wait_until(lambda m: m["retained"] == 1)
    finally:
        pub.close()
