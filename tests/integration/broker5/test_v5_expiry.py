"""Session expiry (sessions and queues discarded when it passes) and message expiry (never delivered late)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from mqtt5_testkit import Client5

from actorbroker.app import RunningBroker

Clients5 = Callable[..., Client5]


def pause(seconds: float) -> None:
    """Let time pass (the feature under test is time); never used to synchronise."""
    threading.Event().wait(seconds)


def test_session_expiry_0_ends_the_session_with_the_connection(client5: Clients5) -> None:
    c = client5("e0", connect=False)
    c.connect(SessionExpiryInterval=0)
    c.subscribe("t", 1)
    c.disconnect()
    again = client5("e0", connect=False)
    assert not again.connect(clean_start=False).session_present


def test_an_offline_session_keeps_its_queue_until_it_expires(
        broker: RunningBroker, client5: Clients5) -> None:
    sub = client5("e1", connect=False)
    sub.connect(SessionExpiryInterval=60)
    sub.subscribe("q", 1)
    sub.disconnect()
    client5("p").publish("q", b"kept", 1)
    back = client5("e1", connect=False)
    assert back.connect(clean_start=False, SessionExpiryInterval=1).session_present
    assert back.expect().payload == b"kept"
    back.subscribe("q2", 1)
    back.disconnect()  # now with 1 s of expiry
    client5("p2").publish("q2", b"lost with the session", 1)
    # The session actor retires when its expiry timer fires.
    broker.wait_until(lambda m: not broker.call(broker.node.names.sessions.__contains__, "e1"),
                      timeout=10)
    late = client5("e1", connect=False)
    assert not late.connect(clean_start=False, SessionExpiryInterval=60).session_present
    client5("p3").publish("q2", b"marker", 1)
    late.subscribe("q2", 1)
    client5("p4").publish("q2", b"after", 1)
    assert late.expect().payload == b"after"  # the queued message went with the session


def test_disconnect_can_shorten_the_session_expiry(client5: Clients5) -> None:
    c = client5("e2", connect=False)
    c.connect(SessionExpiryInterval=300)
    c.subscribe("t", 1)
    c.disconnect(SessionExpiryInterval=0)  # ends the session after all
    again = client5("e2", connect=False)
    assert not again.connect(clean_start=False).session_present


def test_expired_messages_are_never_delivered(broker: RunningBroker, client5: Clients5) -> None:
    sub = client5("m1", connect=False)
    sub.connect(SessionExpiryInterval=60)
    sub.subscribe("x", 1)
    sub.disconnect()
    pub = client5("mp")
    pub.publish("x", b"short", 1, MessageExpiryInterval=1)
    pub.publish("x", b"long", 1, MessageExpiryInterval=60)
    pause(1.2)
    back = client5("m1", connect=False)
    back.connect(clean_start=False, SessionExpiryInterval=60)
    message = back.expect()
    assert message.payload == b"long"
    # Forwarded with the time spent in the broker taken off ([MQTT-3.3.2-6]).
    assert message.properties["MessageExpiryInterval"] <= 59
    assert broker.metrics()["dropped"]["expired"] == 1


def test_an_expired_retained_message_is_not_sent(client5: Clients5) -> None:
    pub = client5("rp")
    pub.publish("r/1", b"stale", 1, retain=True, MessageExpiryInterval=1)
    pub.publish("r/2", b"fresh", 1, retain=True)
    pause(1.2)
    sub = client5("rs")
    sub.subscribe("r/#", 1)
    message = sub.expect()
    assert (message.topic, message.payload, message.retain) == ("r/2", b"fresh", True)
    pub.publish("r/2", b"marker", 1)
    assert sub.expect().payload == b"marker"
