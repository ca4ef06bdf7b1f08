"""The fan-out fast path: SessionCore.deliver_now and the shared live QoS 0 PUBLISH."""

from __future__ import annotations

import dataclasses

import pytest

from actorbroker.codec import Connect, Disconnect, PubAck, Properties, Publish
from actorbroker.session import AppMessage, Close, Effect, Send, SessionCore


def attached(level: int = 4, **props: object) -> SessionCore:
    core = SessionCore("sub")
    properties = Properties(**props) if level == 5 else Properties()  # type: ignore[arg-type]
    core.attach(Connect("MQTT", level, "sub", True, 0, properties=properties), 0.0)
    return core


def sent(effects: list[Effect]) -> list[object]:
    return [p for e in effects if isinstance(e, Send) for p in e.packets]


MESSAGES = (AppMessage("a/b", b"1", 0, True, publisher="p"), AppMessage("a/c", b"2", 1),
            AppMessage("a/d", b"3", 2))


@pytest.mark.parametrize("level", [3, 4, 5])
def test_live_qos0_gives_the_packets_deliver_would_send(level: int) -> None:
    fast, slow = attached(level), attached(level)
    packets = fast.deliver_now(MESSAGES, 0, 1.0)
    expected = [p for m in MESSAGES for p in sent(slow.deliver(m, 0, 1.0))]
    assert packets == expected
    assert [p.retain for p in expected] == [False, False, False]  # [MQTT-3.3.1-9]
    assert not fast.inflight and not fast.queued


def test_a_qos0_message_through_a_qos1_subscription_is_fast_too() -> None:
    core = attached()
    assert core.deliver_now((MESSAGES[0],), 1, 1.0) == [Publish("a/b", b"1")]


def test_every_subscriber_gets_the_same_publish_object() -> None:
    one, two = attached(), attached()
    [first] = one.deliver_now((MESSAGES[0],), 0, 1.0) or []
    [second] = two.deliver_now((MESSAGES[0],), 0, 2.0) or []
    assert first is second
    [queued_path] = sent(one.deliver(MESSAGES[0], 0, 3.0))
    assert queued_path is first


@pytest.mark.parametrize("qos", [1, 2])
def test_a_delivery_at_qos_1_or_2_is_not_fast(qos: int) -> None:
    core = attached()
    assert core.deliver_now((MESSAGES[0], MESSAGES[qos]), 2, 1.0) is None
    assert not core.inflight  # nothing changed: deliver() does it all


def test_not_fast_while_output_is_held_or_without_a_connection() -> None:
    core = attached()
    core.hold_output()
    assert core.deliver_now((MESSAGES[0],), 0, 1.0) is None
    core.release_output(1.0)
    core.detach(2.0)
    assert core.deliver_now((MESSAGES[0],), 0, 3.0) is None


def test_not_fast_once_the_core_asked_to_close() -> None:
    core = attached()
    assert [type(e) for e in core.handle(Disconnect(), 1.0)] == [Close]
    assert core.deliver_now((MESSAGES[0],), 0, 2.0) is None


def test_an_expired_message_goes_the_slow_way_and_is_dropped_there() -> None:
    message = AppMessage("t", b"", 0, properties=Properties(message_expiry_interval=5))
    core = attached(5)
    assert core.deliver_now((message,), 0, 6.0) is None
    assert core.deliver_now((message,), 0, 1.0) is not None  # not expired yet: fast


@pytest.mark.parametrize("props", [{"topic_alias_maximum": 5}, {"maximum_packet_size": 1000}])
def test_mqtt5_aliases_and_size_limits_go_the_slow_way(props: dict[str, int]) -> None:
    assert attached(5, **props).deliver_now((MESSAGES[0],), 0, 1.0) is None


def test_the_shared_publish_is_only_for_live_qos0_without_expiry() -> None:
    message = AppMessage("t", b"p")
    assert message.to_publish(qos=0) is message.to_publish(qos=0, now=5.0)
    assert message.to_publish(qos=0, retain=True) is not message.to_publish(qos=0, retain=True)
    assert message.to_publish(qos=1, packet_id=1) is not message.to_publish(qos=1, packet_id=1)
    expiring = AppMessage("t", b"p", properties=Properties(message_expiry_interval=9))
    assert expiring.to_publish(qos=0, now=3.0).properties.message_expiry_interval == 6
    assert expiring.to_publish(qos=0, now=3.0) is not expiring.to_publish(qos=0, now=3.0)


def test_the_cache_changes_neither_equality_nor_replace() -> None:
    message = AppMessage("t", b"p", publisher="c")
    twin = AppMessage("t", b"p", publisher="c")
    message.to_publish(qos=0)
    assert message == twin and hash(message) == hash(twin)
    assert "Publish" not in repr(message)
    moved = dataclasses.replace(message, topic="u")
    assert moved.to_publish(qos=0).topic == "u"


def test_flying_is_a_live_view_of_the_packet_ids_in_flight() -> None:
    core = attached()
    assert not core.flying
    [publish] = sent(core.deliver(MESSAGES[1], 1, 1.0))
    assert isinstance(publish, Publish) and list(core.flying) == [publish.packet_id]
    core.handle(PubAck(publish.packet_id or 0), 2.0)
    assert not core.flying
