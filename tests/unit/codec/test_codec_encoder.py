"""Encoder misuse is our bug: ValueError / TypeError, never bytes a peer would refuse."""

from __future__ import annotations

import pytest

from actorbroker.codec import (
    Auth,
    Connect,
    Decoder,
    Properties,
    PubAck,
    Publish,
    Subscribe,
    Subscription,
    Unsubscribe,
    encode,
)


@pytest.mark.parametrize(
    ("packet", "level"),
    [
        (Publish("t", b"", qos=1), 4),                       # QoS 1 without packet id
        (Publish("t", b"", qos=3, packet_id=1), 4),          # QoS 3
        (Publish("t", b"", qos=1, packet_id=70000), 5),      # packet id too large
        (Publish("t", b""), 6),                              # unknown level
        (Publish("t" * 70000, b""), 4),                      # topic too long
        (PubAck(0), 4),                                      # packet id 0
        (Auth(), 4),                                         # AUTH is v5 only
        (Connect("MQTT", 4, "c", True, 0), 5),               # level mismatch
        (Connect("MQTT", 4, "c", True, 0, None, b"pw"), 4),  # [MQTT-3.1.2-22]
        (Subscribe(1, ()), 4),                               # no subscription
        (Unsubscribe(1, ()), 4),                             # no filter
        (Publish("t", b"", properties=Properties(session_expiry_interval=1)), 5),
        (Publish("t", b"", properties=Properties(user_property=(("k", "v" * 70000),))), 5),
        (Subscribe(1, (Subscription("a"),), Properties(subscription_identifier=(1, 2))), 5),
        (PubAck(1), 7),
    ],
)
def test_unencodable_packets_raise_value_error(packet: object, level: int) -> None:
    with pytest.raises(ValueError):
        encode(packet, level)  # type: ignore[arg-type]


def test_non_packet_raises_type_error() -> None:
    with pytest.raises(TypeError):
        encode("PUBLISH", 4)  # type: ignore[arg-type]


def test_multiple_subscription_identifiers_are_fine_in_publish() -> None:
    packet = Publish("t", b"", properties=Properties(subscription_identifier=(1, 268_435_455)))
    assert Decoder(5).feed(encode(packet, 5)) == [packet]
