"""One copy per client for overlapping subscriptions, also when the client publishes
right after subscribing, without waiting for its SUBACK (the Paho suite's
``test_subscribe_identifiers`` does: SUBSCRIBE, SUBSCRIBE, PUBLISH back to back)."""

from __future__ import annotations

from collections.abc import Callable

from mqtt5_testkit import connect5
from mqtt_testkit import RawClient

from actorbroker.app import RunningBroker
from actorbroker.codec import ConnAck, Properties, Publish, SubAck, Subscribe, Subscription

Raws = Callable[..., RawClient]


def _heat(broker: RunningBroker, raw: Raws, topic: str, level: int) -> None:
    """Give ``topic`` a topic actor: four messages in one read make it hot."""
    publisher = raw(level)
    if level == 5:
        assert isinstance(connect5(publisher, "heater"), ConnAck)
    else:
        publisher.connect("heater")
    publisher.send(*(Publish(topic, b"heat", 0) for _ in range(4)))
    publisher.disconnect()
    broker.wait_until(lambda _: broker.call(lambda: topic in broker.node.names.topics))


def _copies(client: RawClient, count: int) -> list[Publish]:
    """The next ``count`` PUBLISHes the broker sends ``client`` (acks skipped)."""
    copies: list[Publish] = []
    while len(copies) < count:
        packet = client.recv()
        if isinstance(packet, Publish):
            copies.append(packet)
    return copies


def test_a_publish_right_after_a_subscribe_carries_every_identifier(
        broker: RunningBroker, raw: Raws) -> None:
    _heat(broker, raw, "TopicA", 5)
    me = raw(5)
    assert isinstance(connect5(me, "ids"), ConnAck)
    me.send(Subscribe(1, (Subscription("TopicA", 2),), Properties(subscription_identifier=(2,))))
    assert isinstance(me.recv(), SubAck)
    # The second SUBSCRIBE and the PUBLISH in one write: the topic actor must already
    # know the new subscription when the message reaches it.
    me.send(Subscribe(2, (Subscription("TopicA/#", 2),), Properties(subscription_identifier=(3,))),
            Publish("TopicA", b"mine", 1, packet_id=3),
            Publish("TopicA", b"marker", 1, packet_id=4))
    first, second = _copies(me, 2)
    assert (first.payload, first.properties.subscription_identifier) == (b"mine", (2, 3))
    assert second.payload == b"marker"  # no second copy of b"mine" came before it


def test_a_v3_publish_right_after_a_subscribe_gets_the_highest_qos(
        broker: RunningBroker, raw: Raws) -> None:
    _heat(broker, raw, "q/t", 4)
    me = raw(4)
    me.connect("v3")
    me.send(Subscribe(1, (Subscription("q/t", 0),)))
    assert isinstance(me.recv(), SubAck)
    me.send(Subscribe(2, (Subscription("q/#", 1),)),
            Publish("q/t", b"mine", 1, packet_id=3),
            Publish("q/t", b"marker", 1, packet_id=4))
    # [MQTT-3.3.5-1]: one copy at the highest QoS of the client's matching subscriptions.
    assert [(p.payload, p.qos) for p in _copies(me, 2)] == [(b"mine", 1), (b"marker", 1)]
