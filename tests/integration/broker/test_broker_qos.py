"""QoS 0, 1 and 2 in both directions, packet ids, the QoS 2 receiver rule, order per topic."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from mqtt_testkit import Client, RawClient

from actorbroker.app import RunningBroker
from actorbroker.codec import (
    PubAck,
    PubComp,
    Publish,
    PubRec,
    PubRel,
    SubAck,
    Subscribe,
    Subscription,
)

Clients = Callable[..., Client]
Raw = Callable[..., RawClient]


@pytest.mark.parametrize("level", [3, 4])
@pytest.mark.parametrize("sub_qos", [0, 1, 2])
@pytest.mark.parametrize("pub_qos", [0, 1, 2])
def test_delivery_qos_is_the_lower_of_publish_and_subscription(
        client: Clients, level: int, sub_qos: int, pub_qos: int) -> None:
    sub = client(f"s{level}{sub_qos}{pub_qos}", level=level)
    assert sub.subscribe("q/t", sub_qos) == [sub_qos]
    pub = client(f"p{level}{sub_qos}{pub_qos}", level=level)
    pub.publish("q/t", b"payload", qos=pub_qos)
    message = sub.expect()
    assert (message.topic, message.payload, message.qos, message.retain) == (
        "q/t", b"payload", min(sub_qos, pub_qos), False)


def test_qos1_flow_on_the_wire(raw: Raw) -> None:
    sub, pub = raw(), raw()
    sub.connect("wire-sub")
    sub.send(Subscribe(7, (Subscription("w/1", 1),)))
    assert sub.recv() == SubAck(7, (1,))
    pub.connect("wire-pub")
    pub.send(Publish("w/1", b"a", 1, packet_id=42))
    assert pub.recv() == PubAck(42)
    out = sub.recv()
    assert isinstance(out, Publish) and out.qos == 1 and out.packet_id is not None
    assert not out.dup and not out.retain
    sub.send(PubAck(out.packet_id))


def test_qos2_flow_both_ways_and_packet_ids_are_distinct(raw: Raw) -> None:
    sub, pub = raw(), raw()
    sub.connect("q2-sub")
    sub.send(Subscribe(1, (Subscription("w/2", 2),)))
    assert sub.recv() == SubAck(1, (2,))
    pub.connect("q2-pub")
    pub.send(Publish("w/2", b"one", 2, packet_id=10), Publish("w/2", b"two", 2, packet_id=11))
    assert [pub.recv(), pub.recv()] == [PubRec(10), PubRec(11)]
    first, second = sub.recv(), sub.recv()
    assert isinstance(first, Publish) and isinstance(second, Publish)
    assert (first.payload, second.payload) == (b"one", b"two")
    assert first.packet_id != second.packet_id  # [MQTT-2.2.1-3]
    for out in (first, second):
        sub.send(PubRec(out.packet_id))  # type: ignore[arg-type]
        assert sub.recv() == PubRel(out.packet_id)  # type: ignore[arg-type]
        sub.send(PubComp(out.packet_id))  # type: ignore[arg-type]
    pub.send(PubRel(10), PubRel(11))
    assert [pub.recv(), pub.recv()] == [PubComp(10), PubComp(11)]


def test_a_qos2_retry_before_pubrel_is_not_delivered_twice(raw: Raw) -> None:
    sub, pub = raw(), raw()
    sub.connect("idem-sub")
    sub.send(Subscribe(1, (Subscription("idem", 0),)))
    sub.recv()
    pub.connect("idem-pub")
    pub.send(Publish("idem", b"x", 2, packet_id=5))
    assert pub.recv() == PubRec(5)
    pub.send(Publish("idem", b"x", 2, dup=True, packet_id=5))  # [MQTT-4.3.3-2]
    assert pub.recv() == PubRec(5)
    pub.send(PubRel(5))
    assert pub.recv() == PubComp(5)
    pub.send(Publish("idem", b"after", 2, packet_id=5))  # the id is free again: a new message
    assert pub.recv() == PubRec(5)
    got = [sub.recv(), sub.recv()]
    assert [p.payload for p in got] == [b"x", b"after"]  # type: ignore[union-attr]


@pytest.mark.parametrize("qos", [0, 1, 2])
def test_order_per_topic_is_kept(client: Clients, qos: int) -> None:
    sub = client(f"order-sub-{qos}")
    sub.subscribe("order/#", qos)
    pub = client(f"order-pub-{qos}")
    count = 200
    for i in range(count):
        pub.paho.publish("order/a", str(i).encode(), qos)
    pub.publish("order/a", b"end", qos)
    payloads = [m.payload for m in sub.expect_many(count + 1)]
    assert payloads == [str(i).encode() for i in range(count)] + [b"end"]  # [MQTT-4.6.0-6]


def test_a_new_topic_keeps_order_while_its_topic_actor_starts(
        broker: RunningBroker, raw: Raw) -> None:
    # The first batches of a topic go through the registry (no topic actor yet),
    # later ones straight to it: the session keeps them in order meanwhile.
    sub, pub = raw(), raw()
    sub.connect("fresh-sub")
    sub.send(Subscribe(1, (Subscription("fresh/+", 1),)))
    sub.recv()
    pub.connect("fresh-pub")
    for i in range(1, 51):
        pub.send(Publish(f"fresh/{i % 3}", str(i).encode(), 1, packet_id=i))
    acks = [pub.recv() for _ in range(50)]
    assert acks == [PubAck(i) for i in range(1, 51)]
    got: dict[str, list[int]] = {}
    for _ in range(50):
        packet = sub.recv()
        assert isinstance(packet, Publish)
        got.setdefault(packet.topic, []).append(int(packet.payload))
        sub.send(PubAck(packet.packet_id))  # type: ignore[arg-type]
    for topic, values in got.items():
        assert values == sorted(values), topic
    assert broker.metrics()["publish_received"] >= 50


def test_max_inflight_holds_the_rest_in_the_queue(start_broker: Callable[..., RunningBroker],
                                                   tmp_path: object) -> None:
    from mqtt_testkit import broker_config
    running = start_broker(broker_config(tmp_path, max_inflight_messages=2))
    sub, pub = RawClient(running.host, running.port), RawClient(running.host, running.port)
    try:
        sub.connect("window-sub")
        sub.send(Subscribe(1, (Subscription("win", 1),)))
        sub.recv()
        pub.connect("window-pub")
        for i in range(1, 6):
            pub.send(Publish("win", str(i).encode(), 1, packet_id=i))
        assert [pub.recv() for _ in range(5)] == [PubAck(i) for i in range(1, 6)]
        first = [sub.recv(), sub.recv()]
        with pytest.raises(TimeoutError):
            sub.recv(timeout=0.3)  # the window of 2 is full until an ack frees it
        sub.send(PubAck(first[0].packet_id))  # type: ignore[union-attr]
        third = sub.recv()
        assert [p.payload for p in (*first, third)] == [b"1", b"2", b"3"]  # type: ignore[union-attr]
    finally:
        sub.close()
        pub.close()
