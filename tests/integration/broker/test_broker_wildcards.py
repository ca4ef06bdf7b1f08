"""Wildcards '+' and '#', the '$' rule, invalid filters, overlapping subscriptions."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from mqtt_testkit import Client, RawClient

from actorbroker.app import RunningBroker
from actorbroker.codec import Publish, SubAck, Subscribe, Subscription, UnsubAck, Unsubscribe

Clients = Callable[..., Client]
Raw = Callable[..., RawClient]


@pytest.mark.parametrize(("topic_filter", "topic", "matched"), [
    ("sport/tennis/+", "sport/tennis/player1", True),
    ("sport/tennis/+", "sport/tennis/player1/ranking", False),
    ("sport/#", "sport", True),            # '#' includes the parent level
    ("sport/#", "sport/tennis/player1", True),
    ("+/+", "/finance", True),
    ("+", "/finance", False),
    ("#", "$X/broker/x", False),            # [MQTT-4.7.2-1] (not $SYS: it has its own
    ("+/monitor/Clients", "$X/monitor/Clients", False),  # retained messages)
    ("$X/#", "$X/monitor/Clients", True),
    ("$X/monitor/+", "$X/monitor/Clients", True),
])
def test_matching(client: Clients, topic_filter: str, topic: str, matched: bool) -> None:
    sub = client("wc-sub")
    sub.subscribe(topic_filter, 0)
    pub = client("wc-pub")
    pub.publish(topic, b"probe", qos=1)
    # A topic the filter matches, published after the probe: a marker to wait for.
    marker = topic_filter.replace("+", "m").replace("#", "m")
    pub.publish(marker, b"marker", qos=1)
    if matched:
        got = {(m.topic, m.payload) for m in sub.expect_many(2)}
        assert got == {(topic, b"probe"), (marker, b"marker")}
    else:
        assert (sub.expect().topic, sub.messages.qsize()) == (marker, 0)


@pytest.mark.parametrize("level", [3, 4])
@pytest.mark.parametrize("bad", ["a/#/b", "a+", "#/x", "sport+/x"])
def test_an_invalid_filter_is_a_malformed_subscribe_and_closes(raw: Raw, level: int,
                                                                bad: str) -> None:
    # [MQTT-4.7.1-2]/[MQTT-4.7.1-3]: the codec refuses the packet as malformed
    # ([MQTT-4.8.0-1]: close), as Mosquitto does; 3.1 has no failure code anyway.
    r = raw(level=level)
    r.connect(f"bad{level}")
    r.send(Subscribe(2, (Subscription("ok/+", 1), Subscription(bad, 0))))
    r.expect_closed()


def test_overlapping_subscriptions_deliver_one_copy_at_the_highest_qos(raw: Raw) -> None:
    sub = raw()
    sub.connect("overlap")
    sub.send(Subscribe(1, (Subscription("o/#", 0), Subscription("o/+/c", 2),
                           Subscription("o/b/c", 1))))
    assert sub.recv() == SubAck(1, (0, 2, 1))
    pub = raw()
    pub.connect("overlap-pub")
    pub.send(Publish("o/b/c", b"once", 2, packet_id=1))
    pub.recv()
    got = sub.recv()
    assert isinstance(got, Publish) and (got.payload, got.qos) == (b"once", 2)
    pub.send(Publish("o/other", b"marker"))
    assert sub.recv() == Publish("o/other", b"marker")  # not a second copy of "once"


def test_unsubscribe_stops_delivery_and_keeps_the_other_filters(raw: Raw,
                                                                broker: RunningBroker) -> None:
    sub = raw()
    sub.connect("unsub")
    sub.send(Subscribe(1, (Subscription("u/+", 0), Subscription("u/x", 0))))
    sub.recv()
    sub.send(Unsubscribe(2, ("u/+", "never/subscribed")))
    assert sub.recv() == UnsubAck(2)
    pub = raw()
    pub.connect("unsub-pub")
    pub.send(Publish("u/y", b"gone"), Publish("u/x", b"kept"))
    assert sub.recv() == Publish("u/x", b"kept")
    assert broker.metrics()["subscriptions"] == 1


def test_subscriptions_count_follows_subscribe_and_unsubscribe(
        client: Clients, broker: RunningBroker) -> None:
    c = client("count")
    c.subscribe_many([("c/1", 0), ("c/2", 1), ("c/#", 2)])
    assert broker.metrics()["subscriptions"] == 3
    c.unsubscribe("c/2")
    assert broker.metrics()["subscriptions"] == 2
    c.disconnect()  # clean session: every subscription goes
    broker.wait_until(lambda m: m["subscriptions"] == 0)
