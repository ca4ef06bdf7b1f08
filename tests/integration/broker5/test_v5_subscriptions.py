"""Subscription options (No Local, Retain As Published, Retain Handling), identifiers, SUBACK/UNSUBACK codes."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from mqtt5_testkit import Client5
from mqtt_testkit import Client

from actorbroker.actors.names import Asleep
from actorbroker.app import RunningBroker
from actorbroker.codec import ReasonCode
from actorbroker.config import Config

Clients5 = Callable[..., Client5]


def test_no_local(client5: Clients5) -> None:
    me = client5("me")
    me.subscribe("chat", 1, no_local=True)
    me.publish("chat", b"mine", 1)
    client5("other").publish("chat", b"theirs", 1)
    message = me.expect()
    assert message.payload == b"theirs"  # [MQTT-3.8.3-3]: never its own


def test_no_local_applies_per_subscription(client5: Clients5) -> None:
    me = client5("me")
    me.subscribe("chat/+", 1, no_local=True, subscription_id=1)
    me.subscribe("chat/#", 1, subscription_id=2)
    me.publish("chat/x", b"mine", 1)
    message = me.expect()
    # One copy, through the subscription without No Local only.
    assert (message.payload, message.properties["SubscriptionIdentifier"]) == (b"mine", [2])
    client5("other").publish("chat/x", b"marker", 1)
    assert me.expect().payload == b"marker"


@pytest.mark.parametrize(("as_published", "retain"), [(True, True), (False, False)])
def test_retain_as_published(client5: Clients5, as_published: bool, retain: bool) -> None:
    sub = client5("sub")
    sub.subscribe("rap", 1, retain_as_published=as_published)
    client5("pub").publish("rap", b"live", 1, retain=True)
    message = sub.expect()
    assert (message.payload, message.retain) == (b"live", retain)  # [MQTT-3.3.1-12]


def test_retain_handling(client5: Clients5) -> None:
    client5("pub").publish("rh/t", b"kept", 1, retain=True)
    sub = client5("sub")
    for _ in range(2):  # 0: on every subscribe
        sub.subscribe("rh/#", 1, retain_handling=0)
        message = sub.expect()
        assert (message.payload, message.retain) == (b"kept", True)
    other = client5("sub2")
    other.subscribe("rh/+", 1, retain_handling=1)  # 1: only when the subscription is new
    assert other.expect().payload == b"kept"
    other.subscribe("rh/+", 1, retain_handling=1)
    other.subscribe("rh/t", 1, retain_handling=2)  # 2: never
    client5("pub2").publish("rh/t", b"marker", 1)
    assert other.expect().payload == b"marker"


def test_subscription_identifiers_of_every_matching_subscription(client5: Clients5) -> None:
    sub = client5("ids")
    sub.subscribe("s/+/c", 2, subscription_id=10)
    sub.subscribe("s/#", 0, subscription_id=3)
    sub.subscribe("s/b/c", 1)
    client5("p").publish("s/b/c", b"m", 2)
    message = sub.expect()
    # One copy per client at the highest QoS, carrying every identifier ([MQTT-3.3.4-4]).
    assert (message.qos, message.properties["SubscriptionIdentifier"]) == (2, [3, 10])
    sub.unsubscribe("s/#")
    client5("p2").publish("s/b/c", b"n", 2)
    assert sub.expect().properties["SubscriptionIdentifier"] == [10]


def test_retained_messages_carry_the_subscribes_identifier(client5: Clients5) -> None:
    client5("p").publish("ri/x", b"r", 1, retain=True)
    sub = client5("s")
    sub.subscribe("ri/#", 1, subscription_id=77)
    message = sub.expect()
    assert message.retain and message.properties["SubscriptionIdentifier"] == [77]


def test_v3_subscribers_get_v5_messages_without_properties(client5: Clients5,
                                                           client: Callable[..., Client]) -> None:
    v3 = client("v3")
    v3.subscribe("mix", 1)
    client5("p").publish("mix", b"x", 1, UserProperty=[("k", "v")], MessageExpiryInterval=30)
    message = v3.expect()
    assert (message.topic, message.payload, message.qos) == ("mix", b"x", 1)


def test_suback_and_unsuback_reason_codes(start_broker: Callable[..., RunningBroker],
                                          config5: Callable[..., Config],
                                          client5: Clients5) -> None:
    running = start_broker(config5(limits={"max_qos": 1},
                                   mqtt5={"wildcard_subscriptions": False,
                                          "shared_subscriptions": False}))
    c = client5("codes", target=running)
    assert c.subscribe("plain", 2) == [ReasonCode.GRANTED_QOS_1]  # capped
    assert c.subscribe("a/+", 1) == [ReasonCode.WILDCARD_SUBSCRIPTIONS_NOT_SUPPORTED]
    assert c.subscribe("$share/g/x", 1) == [ReasonCode.SHARED_SUBSCRIPTIONS_NOT_SUPPORTED]
    assert c.unsubscribe("plain") == [ReasonCode.SUCCESS]
    assert c.unsubscribe("never") == [ReasonCode.NO_SUBSCRIPTION_EXISTED]


def test_subscription_identifiers_turned_off(start_broker: Callable[..., RunningBroker],
                                             config5: Callable[..., Config],
                                             client5: Clients5) -> None:
    running = start_broker(config5(mqtt5={"subscription_identifiers": False}))
    c = client5("noids", target=running)
    assert c.subscribe("x", 1, subscription_id=5) == [
        ReasonCode.SUBSCRIPTION_IDENTIFIERS_NOT_SUPPORTED]
    assert c.subscribe("x", 1) == [1]


def test_messages_queued_offline_keep_their_subscription_identifiers(client5: Clients5) -> None:
    """A durable session's queue comes back from the log without the identifiers; the
    messages still carry those of the matching subscriptions ([MQTT-3.3.4-3])."""
    sub = client5("offline-ids", connect=False)
    sub.connect(SessionExpiryInterval=300)
    sub.subscribe("oi/+", 1, subscription_id=7)
    sub.subscribe("oi/plain", 1)
    sub.disconnect()
    publisher = client5("oi-pub")
    publisher.publish("oi/x", b"1", 1)
    publisher.publish("oi/plain", b"2", 1)
    again = client5("offline-ids", connect=False)
    assert again.connect(clean_start=False).session_present
    first, second = again.expect(), again.expect()
    assert (first.payload, first.properties["SubscriptionIdentifier"]) == (b"1", [7])
    assert (second.payload, second.properties["SubscriptionIdentifier"]) == (b"2", [7])


def test_a_hibernated_session_with_options_counts_only_real_drops(
        broker: RunningBroker, client5: Clients5) -> None:
    """Messages for an offline durable session with identifiers are queued by the log, not
    dropped (they were counted ``session_unavailable``); its QoS 0 ones are dropped."""
    sub = client5("sleeper", connect=False)
    sub.connect(SessionExpiryInterval=300)
    sub.subscribe("hib/+", 1, subscription_id=9)
    sub.disconnect()
    broker.wait_until(lambda _: broker.call(
        lambda: type(broker.node.names.sessions.get("sleeper")) is Asleep))
    publisher = client5("hib-pub")
    publisher.publish("hib/x", b"kept", 1)
    publisher.publish("hib/x", b"qos0", 0)
    publisher.publish("hib/x", b"marker", 1)
    again = client5("sleeper", connect=False)
    assert again.connect(clean_start=False).session_present
    got = [again.expect(), again.expect()]
    assert [(m.payload, m.properties["SubscriptionIdentifier"]) for m in got] == [
        (b"kept", [9]), (b"marker", [9])]
    dropped = broker.metrics()["dropped"]
    assert "session_unavailable" not in dropped and dropped.get("offline_qos0") == 1
