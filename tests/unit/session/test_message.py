"""AppMessage and Delivery: conversion to and from PUBLISH, expiry."""

from __future__ import annotations

from actorbroker.codec import NO_PROPERTIES, Properties, Publish, Will
from actorbroker.session import AppMessage, Delivery


def test_from_publish_keeps_what_the_publisher_sent() -> None:
    props = Properties(content_type="text/plain")
    publish = Publish("a/b", b"hi", 1, True, True, 9, props)
    message = AppMessage.from_publish(publish, publisher="c1", received_at=3.5, seq=4)
    assert message == AppMessage("a/b", b"hi", 1, True, props, "c1", 3.5, 4)


def test_to_publish_sets_delivery_fields_and_drops_id_at_qos0() -> None:
    message = AppMessage("t", b"p", 2, True)
    assert message.to_publish(qos=1, packet_id=7, dup=True) == Publish("t", b"p", 1, False, True, 7)
    assert message.to_publish(qos=0, packet_id=7, retain=True) == Publish("t", b"p", 0, True, False, None)


def test_from_will() -> None:
    will = Will("w", b"gone", 1, True)
    assert AppMessage.from_will(will, publisher="c", received_at=2.0) == AppMessage(
        "w", b"gone", 1, True, NO_PROPERTIES, "c", 2.0, 0
    )


def test_v3_messages_never_expire() -> None:
    assert not AppMessage("t", b"").expired(1e12)


def test_message_expiry_interval_counts_from_receipt_and_is_lowered_on_send() -> None:
    message = AppMessage("t", b"", 1, properties=Properties(message_expiry_interval=10), received_at=100.0)
    assert not message.expired(109.9)
    assert message.expired(110.0)
    sent = message.to_publish(qos=1, packet_id=1, now=103.2)
    assert sent.properties.message_expiry_interval == 7  # [MQTT-3.3.2-6]


def test_delivery_to_publish_and_size() -> None:
    delivery = Delivery(AppMessage("t", b"abc", 2), 1, retain=True)
    assert delivery.to_publish(5) == Publish("t", b"abc", 1, True, False, 5)
    assert delivery.message.size == 3
