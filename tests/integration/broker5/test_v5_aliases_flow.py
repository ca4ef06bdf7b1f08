"""Topic aliases in both directions; flow control: receive maximum both ways, maximum packet size."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from mqtt5_testkit import Client5, connect5, expect_disconnect
from mqtt_testkit import RawClient

from actorbroker.app import RunningBroker
from actorbroker.codec import (
    ConnAck,
    Properties,
    PubAck,
    Publish,
    PubRec,
    ReasonCode,
    SubAck,
    Subscribe,
    Subscription,
)

Clients5 = Callable[..., Client5]
Raw = Callable[..., RawClient]


def subscribed(raw: RawClient, client_id: str, topic: str, qos: int = 1,
               **props: object) -> RawClient:
    assert isinstance(connect5(raw, client_id, **props), ConnAck)
    raw.send(Subscribe(1, (Subscription(topic, qos),)))
    assert raw.recv() == SubAck(1, (qos,))
    return raw


# -- inbound aliases -------------------------------------------------------------------

def test_inbound_aliases_are_resolved_and_not_forwarded(raw5: Raw, client5: Clients5) -> None:
    sub = client5("sub")
    sub.subscribe("long/topic/name", 1)
    pub = raw5()
    connect5(pub, "pub")
    pub.send(Publish("long/topic/name", b"1", 1, packet_id=1,
                     properties=Properties(topic_alias=3)),
             Publish("", b"2", 1, packet_id=2, properties=Properties(topic_alias=3)))
    assert [pub.recv(), pub.recv()] == [PubAck(1), PubAck(2)]
    got = sub.expect_many(2)
    assert [(m.topic, m.payload) for m in got] == [("long/topic/name", b"1"),
                                                  ("long/topic/name", b"2")]
    assert all("TopicAlias" not in m.properties for m in got)


@pytest.mark.parametrize(("publish", "code"), [
    (Publish("t", b"", properties=Properties(topic_alias=11)), ReasonCode.TOPIC_ALIAS_INVALID),
    (Publish("", b"", properties=Properties(topic_alias=4)), ReasonCode.PROTOCOL_ERROR),
    (Publish("", b""), ReasonCode.TOPIC_NAME_INVALID),  # no topic, no alias
])
def test_bad_inbound_aliases_disconnect(raw5: Raw, publish: Publish, code: int) -> None:
    r = raw5()
    connect5(r, "bad")
    r.send(publish)
    assert expect_disconnect(r).reason_code == code


def test_inbound_aliases_do_not_survive_a_reconnect(raw5: Raw) -> None:
    first = raw5()
    connect5(first, "again", session_expiry_interval=60)
    first.send(Publish("t", b"", properties=Properties(topic_alias=1)))
    first.disconnect()
    second = raw5()
    connect5(second, "again", clean=False, session_expiry_interval=60)
    second.send(Publish("", b"", properties=Properties(topic_alias=1)))  # [MQTT-3.3.2-7]
    assert expect_disconnect(second).reason_code == ReasonCode.PROTOCOL_ERROR


# -- outbound aliases ------------------------------------------------------------------

def test_outbound_aliases_within_the_clients_maximum(raw5: Raw, client5: Clients5) -> None:
    sub = subscribed(raw5(), "alias-sub", "a/#", 0, topic_alias_maximum=1)
    pub = client5("p")
    got = []
    for topic in ("a/one", "a/one", "a/two", "a/one"):  # one at a time: topics are not ordered
        pub.publish(topic, topic.encode())
        got.append(sub.recv())
    assert [(p.topic, p.properties.topic_alias, p.payload) for p in got] == [  # type: ignore[union-attr]
        ("a/one", 1, b"a/one"), ("", 1, b"a/one"),
        ("a/two", None, b"a/two"),  # only one alias allowed: the name in full
        ("", 1, b"a/one")]


def test_no_outbound_aliases_unless_the_client_accepts_them(raw5: Raw, client5: Clients5) -> None:
    sub = subscribed(raw5(), "plain-sub", "a/#", 0)
    pub = client5("p")
    pub.publish("a/x", b"1")
    pub.publish("a/x", b"2")
    assert [(p.topic, p.properties.topic_alias) for p in (sub.recv(), sub.recv())] == [  # type: ignore[union-attr]
        ("a/x", None), ("a/x", None)]


def test_outbound_aliases_start_over_after_a_reconnect(raw5: Raw, client5: Clients5) -> None:
    sub = subscribed(raw5(), "re", "a/#", 1, topic_alias_maximum=5, session_expiry_interval=60)
    pub = client5("p")
    pub.publish("a/x", b"1", 1)
    first = sub.recv()
    assert isinstance(first, Publish) and (first.topic, first.properties.topic_alias) == ("a/x", 1)
    sub.send(PubAck(first.packet_id or 0))
    sub.disconnect()
    again = raw5()
    connect5(again, "re", clean=False, topic_alias_maximum=5, session_expiry_interval=60)
    pub.publish("a/x", b"2", 1)
    second = again.recv()
    assert isinstance(second, Publish)
    assert (second.topic, second.properties.topic_alias) == ("a/x", 1)  # the name again


# -- receive maximum ---------------------------------------------------------------------

def test_more_unacknowledged_qos2_than_the_receive_maximum_is_0x93(raw5: Raw) -> None:
    r = raw5()
    connack = connect5(r, "flood")
    assert isinstance(connack, ConnAck) and connack.properties.receive_maximum == 20
    for packet_id in range(1, 21):  # 20 PUBREC owed PUBRELs: allowed
        r.send(Publish("t", b"", 2, packet_id=packet_id))
        assert r.recv() == PubRec(packet_id)
    r.send(Publish("t", b"", 2, packet_id=21))
    assert expect_disconnect(r).reason_code == ReasonCode.RECEIVE_MAXIMUM_EXCEEDED


def test_the_broker_respects_the_clients_receive_maximum(raw5: Raw, client5: Clients5) -> None:
    sub = subscribed(raw5(), "slow", "rm", 1, receive_maximum=2)
    pub = client5("p")
    for n in range(5):
        pub.publish("rm", str(n).encode(), 1)
    pub.publish("rm", b"marker", 0)  # QoS 0 is not held by the window
    got = [sub.recv() for _ in range(3)]
    assert [(p.payload, p.qos) for p in got] == [(b"0", 1), (b"1", 1), (b"marker", 0)]  # type: ignore[union-attr]
    sub.send(PubAck(got[0].packet_id or 0))  # type: ignore[union-attr]
    third = sub.recv()
    assert isinstance(third, Publish) and third.payload == b"2"
    pub.publish("rm", b"marker2", 0)
    assert sub.recv().payload == b"marker2"  # type: ignore[union-attr]  # still two in flight


# -- maximum packet size -------------------------------------------------------------------

def test_a_message_too_large_for_a_client_is_dropped_for_it(
        broker: RunningBroker, raw5: Raw, client5: Clients5) -> None:
    small = subscribed(raw5(), "small", "big/#", 1, maximum_packet_size=64)
    large = client5("large")
    large.subscribe("big/#", 1)
    pub = client5("p")
    pub.publish("big/1", b"x" * 100, 1)
    pub.publish("big/1", b"fits", 1)
    got = small.recv()
    assert isinstance(got, Publish) and got.payload == b"fits"  # [MQTT-3.1.2-25]
    assert [m.payload for m in large.expect_many(2)] == [b"x" * 100, b"fits"]
    assert broker.metrics()["dropped"]["too_large"] == 1


def test_a_packet_above_the_brokers_maximum_is_0x95(start_broker: Callable[..., RunningBroker],
                                                    config5: Callable[..., object],
                                                    raw5: Raw) -> None:
    running = start_broker(config5(limits={"max_packet_size": 100}))
    r = raw5(running)
    connack = connect5(r, "big")
    assert isinstance(connack, ConnAck) and connack.properties.maximum_packet_size == 100
    r.send(Publish("t", b"x" * 200))
    assert expect_disconnect(r).reason_code == ReasonCode.PACKET_TOO_LARGE


# -- the same with paho --------------------------------------------------------------------

def test_paho_publishing_with_a_topic_alias(client5: Clients5) -> None:
    sub = client5("sub")
    sub.subscribe("via/alias", 1)
    pub = client5("pub")
    pub.publish("via/alias", b"1", 1, TopicAlias=2)
    pub.publish("", b"2", 1, TopicAlias=2)  # the alias alone
    assert [(m.topic, m.payload) for m in sub.expect_many(2)] == [("via/alias", b"1"),
                                                                 ("via/alias", b"2")]


def test_paho_receive_maximum_is_respected(client5: Clients5) -> None:
    sub = client5("slow", connect=False, manual_ack=True)
    sub.connect(ReceiveMaximum=2)
    sub.subscribe("rm", 1)
    pub = client5("p")
    for n in range(4):
        pub.publish("rm", str(n).encode(), 1)
    pub.publish("rm", b"marker", 0)
    got = sub.expect_many(3)
    assert [(m.payload, m.qos) for m in got] == [(b"0", 1), (b"1", 1), (b"marker", 0)]
    sub.paho.ack(got[0].mid, 1)
    assert sub.expect().payload == b"2"
