"""Byte vectors for every packet type at MQTT 3.1, 3.1.1 and 5.0, written by hand from the spec.

Each canonical vector is checked both ways: the bytes decode to the packet
and the packet encodes to the same bytes. Non-canonical forms the spec allows
(MQTT 5 acknowledgements with an explicit Success code, MQTT 3.1 DUP on
PUBREL) are checked in the decoding direction only.
"""

from __future__ import annotations

import pytest

from actorbroker.codec import (
    Auth,
    ConnAck,
    Connect,
    ConnectReturnCode,
    Decoder,
    Disconnect,
    Packet,
    PingReq,
    PingResp,
    Properties,
    PubAck,
    PubComp,
    Publish,
    PubRec,
    PubRel,
    ReasonCode,
    SubAck,
    Subscribe,
    Subscription,
    UnsubAck,
    Unsubscribe,
    Will,
    encode,
)


def h(text: str) -> bytes:
    """Hex with spaces and ``'ascii'`` chunks: ``h("00 03 'a/b'")``."""
    parts = text.split("'")
    out = bytearray()
    for i, chunk in enumerate(parts):
        out += chunk.encode() if i % 2 else bytes.fromhex(chunk)
    return bytes(out)


# MQTT 3.1.1 (protocol level 4) ------------------------------------------------
V311: list[tuple[str, str, Packet]] = [
    ("connect-minimal", "10 0c 00 04 'MQTT' 04 02 00 3c 00 00",
     Connect("MQTT", 4, "", True, 60)),
    ("connect-full",
     "10 1a 00 04 'MQTT' 04 ee 00 0a 00 02 'c1' 00 01 'w' 00 01 'x' 00 01 'u' 00 01 'p'",
     Connect("MQTT", 4, "c1", True, 10, "u", b"p", Will("w", b"x", 1, True))),
    ("connect-will-qos2-no-clean",
     "10 12 00 04 'MQTT' 04 14 ff ff 00 01 'c' 00 01 'w' 00 00",
     Connect("MQTT", 4, "c", False, 65535, None, None, Will("w", b"", 2, False))),
    ("connack-accepted", "20 02 00 00", ConnAck(False, ConnectReturnCode.ACCEPTED)),
    ("connack-session-present", "20 02 01 00", ConnAck(True, 0)),
    ("connack-not-authorized", "20 02 00 05", ConnAck(False, ConnectReturnCode.NOT_AUTHORIZED)),
    ("publish-qos0", "30 0a 00 03 'a/b' 'hello'", Publish("a/b", b"hello")),
    ("publish-qos0-retain-empty", "31 03 00 01 'a'", Publish("a", b"", retain=True)),
    ("publish-qos1-dup-retain", "3b 07 00 01 'a' 00 0a 'xy'",
     Publish("a", b"xy", qos=1, retain=True, dup=True, packet_id=10)),
    ("publish-qos2", "34 06 00 01 'a' ff ff 'z'", Publish("a", b"z", qos=2, packet_id=65535)),
    ("publish-two-byte-length", "30 cb 01 00 01 't'" + " 41" * 200, Publish("t", b"A" * 200)),
    ("publish-utf8-topic", "30 0b 00 09 'caf' c3 a9 '/' e2 82 ac", Publish("café/€", b"")),
    ("puback", "40 02 00 01", PubAck(1)),
    ("pubrec", "50 02 00 02", PubRec(2)),
    ("pubrel", "62 02 00 03", PubRel(3)),
    ("pubcomp", "70 02 ff fe", PubComp(65534)),
    ("subscribe", "82 0c 00 0a 00 03 'a/b' 01 00 01 '#' 02",
     Subscribe(10, (Subscription("a/b", 1), Subscription("#", 2)))),
    ("subscribe-share-prefix-is-plain-in-3.1.1", "82 0b 00 01 00 06 '$share' 00",
     Subscribe(1, (Subscription("$share", 0),))),
    ("suback", "90 04 00 0a 01 80", SubAck(10, (1, 0x80))),
    ("unsubscribe", "a2 0c 00 0b 00 03 'a/b' 00 03 '+/#'", Unsubscribe(11, ("a/b", "+/#"))),
    ("unsuback", "b0 02 00 0b", UnsubAck(11)),
    ("pingreq", "c0 00", PingReq()),
    ("pingresp", "d0 00", PingResp()),
    ("disconnect", "e0 00", Disconnect()),
]

# MQTT 3.1 (protocol level 3): same layout, protocol name MQIsdp ---------------
V31: list[tuple[str, str, Packet]] = [
    ("connect", "10 11 00 06 'MQIsdp' 03 02 00 3c 00 03 'abc'",
     Connect("MQIsdp", 3, "abc", True, 60)),
    ("connect-user-password",
     "10 19 00 06 'MQIsdp' 03 c0 00 0a 00 03 'abc' 00 02 'us' 00 02 'pw'",
     Connect("MQIsdp", 3, "abc", False, 10, "us", b"pw")),
    ("connack", "20 02 00 02", ConnAck(False, ConnectReturnCode.IDENTIFIER_REJECTED)),
    ("publish-qos1", "32 08 00 03 'a/b' 00 01 '!'", Publish("a/b", b"!", qos=1, packet_id=1)),
    ("puback", "40 02 00 05", PubAck(5)),
    ("pubrec", "50 02 00 05", PubRec(5)),
    ("pubrel", "62 02 00 05", PubRel(5)),
    ("pubcomp", "70 02 00 05", PubComp(5)),
    ("subscribe", "82 06 00 02 00 01 'x' 00", Subscribe(2, (Subscription("x", 0),))),
    ("suback", "90 03 00 02 00", SubAck(2, (0,))),
    ("unsubscribe", "a2 05 00 03 00 01 'x'", Unsubscribe(3, ("x",))),
    ("unsuback", "b0 02 00 03", UnsubAck(3)),
    ("pingreq", "c0 00", PingReq()),
    ("pingresp", "d0 00", PingResp()),
    ("disconnect", "e0 00", Disconnect()),
]

# MQTT 5.0 (protocol level 5) --------------------------------------------------
V5: list[tuple[str, str, Packet]] = [
    ("connect-minimal", "10 0d 00 04 'MQTT' 05 02 00 3c 00 00 00",
     Connect("MQTT", 5, "", True, 60)),
    ("connect-properties-will",
     "10 33 00 04 'MQTT' 05 ce 00 3c"
     " 0f 11 00 00 00 78 21 00 14 26 00 01 'k' 00 01 'v'"
     " 00 01 'c' 05 18 00 00 00 05 00 03 'w/t' 00 03 'bye' 00 01 'u' 00 01 'p'",
     Connect("MQTT", 5, "c", True, 60, "u", b"p",
             Will("w/t", b"bye", 1, False, Properties(will_delay_interval=5)),
             Properties(session_expiry_interval=120, receive_maximum=20,
                        user_property=(("k", "v"),)))),
    ("connect-password-without-username", "10 11 00 04 'MQTT' 05 40 00 00 00 00 00 00 02 'pw'",
     Connect("MQTT", 5, "", False, 0, None, b"pw")),
    ("connect-enhanced-auth", "10 1a 00 04 'MQTT' 05 02 00 00 0d 15 00 05 'SCRAM' 16 00 02 01 02 00 00",
     Connect("MQTT", 5, "", True, 0, properties=Properties(
         authentication_method="SCRAM", authentication_data=b"\x01\x02"))),
    ("connack-success", "20 03 00 00 00", ConnAck(False, ReasonCode.SUCCESS)),
    ("connack-properties", "20 0d 01 00 0a 12 00 02 'id' 22 00 0a 24 01",
     ConnAck(True, 0, Properties(assigned_client_identifier="id", topic_alias_maximum=10,
                                 maximum_qos=1))),
    ("connack-not-authorized", "20 03 00 87 00", ConnAck(False, ReasonCode.NOT_AUTHORIZED)),
    ("publish-qos0", "30 0b 00 03 'a/b' 00 'hello'", Publish("a/b", b"hello")),
    ("publish-qos1-all-message-properties",
     "32 2d 00 01 'a' 00 05 26"
     " 01 01 02 00 00 00 3c 03 00 04 'text' 08 00 01 'r' 09 00 02 01 02"
     " 0b 01 0b 80 01 23 00 02 26 00 01 'k' 00 01 'v' 'x'",
     Publish("a", b"x", qos=1, packet_id=5, properties=Properties(
         payload_format_indicator=1, message_expiry_interval=60, content_type="text",
         response_topic="r", correlation_data=b"\x01\x02", subscription_identifier=(1, 128),
         topic_alias=2, user_property=(("k", "v"),)))),
    ("publish-empty-topic-with-alias", "30 07 00 00 03 23 00 07 'x'",
     Publish("", b"x", properties=Properties(topic_alias=7))),
    ("publish-repeated-user-property", "30 12 00 01 't' 0e 26 00 01 'a' 00 01 'b' 26 00 01 'a' 00 01 'c'",
     Publish("t", b"", properties=Properties(user_property=(("a", "b"), ("a", "c"))))),
    ("puback-short", "40 02 00 01", PubAck(1)),
    ("puback-reason-only", "40 03 00 01 10", PubAck(1, ReasonCode.NO_MATCHING_SUBSCRIBERS)),
    ("puback-reason-string", "40 09 00 01 10 05 1f 00 02 'no'",
     PubAck(1, 0x10, Properties(reason_string="no"))),
    ("puback-success-with-property", "40 0a 00 01 00 06 26 00 01 'k' 00 00",
     PubAck(1, 0, Properties(user_property=(("k", ""),)))),
    ("pubrec", "50 03 00 02 80", PubRec(2, ReasonCode.UNSPECIFIED_ERROR)),
    ("pubrel", "62 03 00 03 92", PubRel(3, ReasonCode.PACKET_IDENTIFIER_NOT_FOUND)),
    ("pubcomp", "70 02 00 04", PubComp(4)),
    ("subscribe-options-shared",
     "82 18 00 01 02 0b 07 00 03 'a/+' 2d 00 0a '$share/g/#' 02",
     Subscribe(1, (Subscription("a/+", 1, True, True, 2), Subscription("$share/g/#", 2)),
               Properties(subscription_identifier=(7,)))),
    ("suback", "90 06 00 01 00 01 87 a2",
     SubAck(1, (ReasonCode.GRANTED_QOS_1, ReasonCode.NOT_AUTHORIZED,
                ReasonCode.WILDCARD_SUBSCRIPTIONS_NOT_SUPPORTED))),
    ("suback-reason-string", "90 08 00 01 04 1f 00 01 'r' 00", SubAck(1, (0,), Properties(reason_string="r"))),
    ("unsubscribe", "a2 06 00 02 00 00 01 '#'", Unsubscribe(2, ("#",))),
    ("unsuback", "b0 05 00 02 00 00 11", UnsubAck(2, (0, ReasonCode.NO_SUBSCRIPTION_EXISTED))),
    ("pingreq", "c0 00", PingReq()),
    ("pingresp", "d0 00", PingResp()),
    ("disconnect-short", "e0 00", Disconnect()),
    ("disconnect-reason-only", "e0 01 8e", Disconnect(ReasonCode.SESSION_TAKEN_OVER)),
    ("disconnect-with-will-and-expiry", "e0 07 04 05 11 00 00 00 00",
     Disconnect(ReasonCode.DISCONNECT_WITH_WILL_MESSAGE, Properties(session_expiry_interval=0))),
    ("disconnect-server-moved", "e0 09 9d 07 1c 00 04 'host'",
     Disconnect(0x9D, Properties(server_reference="host"))),
    ("auth-short", "f0 00", Auth()),
    ("auth-continue", "f0 0f 18 0d 15 00 05 'SCRAM' 16 00 02 01 02",
     Auth(ReasonCode.CONTINUE_AUTHENTICATION,
          Properties(authentication_method="SCRAM", authentication_data=b"\x01\x02"))),
]

CANONICAL = (
    [pytest.param(4, h(x), p, id=f"3.1.1-{n}") for n, x, p in V311]
    + [pytest.param(3, h(x), p, id=f"3.1-{n}") for n, x, p in V31]
    + [pytest.param(5, h(x), p, id=f"5.0-{n}") for n, x, p in V5]
)


@pytest.mark.parametrize(("level", "wire", "packet"), CANONICAL)
def test_decode_vector(level: int, wire: bytes, packet: Packet) -> None:
    assert Decoder(level).feed(wire) == [packet]


@pytest.mark.parametrize(("level", "wire", "packet"), CANONICAL)
def test_encode_vector(level: int, wire: bytes, packet: Packet) -> None:
    assert encode(packet, level) == wire


def test_every_packet_type_has_a_vector_at_every_level() -> None:
    for level, table in ((3, V31), (4, V311), (5, V5)):
        types = {type(p) for _, _, p in table}
        expected = {Connect, ConnAck, Publish, PubAck, PubRec, PubRel, PubComp, Subscribe,
                    SubAck, Unsubscribe, UnsubAck, PingReq, PingResp, Disconnect}
        assert types >= expected | ({Auth} if level == 5 else set()), level


# Forms the decoder accepts but the encoder never writes.
DECODE_ONLY = [
    pytest.param(5, "40 03 00 01 00", PubAck(1), id="5.0-puback-explicit-success"),
    pytest.param(5, "40 04 00 01 10 00", PubAck(1, 0x10), id="5.0-puback-empty-properties"),
    pytest.param(5, "e0 01 00", Disconnect(), id="5.0-disconnect-explicit-normal"),
    pytest.param(5, "e0 02 00 00", Disconnect(), id="5.0-disconnect-empty-properties"),
    pytest.param(5, "f0 02 00 00", Auth(), id="5.0-auth-explicit-success"),
    pytest.param(3, "6a 02 00 01", PubRel(1), id="3.1-pubrel-with-dup"),
    pytest.param(3, "8a 06 00 02 00 01 'x' 00", Subscribe(2, (Subscription("x"),)), id="3.1-subscribe-with-dup"),
]


@pytest.mark.parametrize(("level", "wire", "packet"), DECODE_ONLY)
def test_decode_only_vector(level: int, wire: str, packet: Packet) -> None:
    assert Decoder(level).feed(h(wire)) == [packet]


def test_decoded_reason_codes_are_enum_members() -> None:
    (ack,) = Decoder(5).feed(h("40 03 00 01 10"))
    assert isinstance(ack, PubAck) and ack.reason_code is ReasonCode.NO_MATCHING_SUBSCRIBERS
    (connack,) = Decoder(4).feed(h("20 02 00 04"))
    assert isinstance(connack, ConnAck)
    assert connack.reason_code is ConnectReturnCode.BAD_USER_NAME_OR_PASSWORD


@pytest.mark.parametrize("level", [3, 4])
def test_v3_encoding_drops_v5_only_fields(level: int) -> None:
    props = Properties(reason_string="ignored")
    assert encode(PubAck(1, 0x10, props), level) == h("40 02 00 01")
    assert encode(Disconnect(0x8E, Properties(server_reference="x")), level) == h("e0 00")
    assert encode(UnsubAck(3, (0x11,)), level) == h("b0 02 00 03")
    assert encode(Publish("a", b"", properties=Properties(topic_alias=1)), level) == h("30 03 00 01 'a'")
    # SUBACK failures collapse to 0x80, the only failure code of 3.1.1.
    assert encode(SubAck(1, (0x87, 0x02)), level) == h("90 04 00 01 80 02")
    sub = Subscription("a", 1, no_local=True, retain_as_published=True, retain_handling=2)
    assert encode(Subscribe(1, (sub,)), level) == h("82 06 00 01 00 01 'a' 01")


def test_publish_with_large_remaining_length_uses_multibyte_header() -> None:
    payload = bytes(range(256)) * 1000  # remaining length 256,005: three bytes
    packet = Publish("t", payload, qos=1, packet_id=1)
    wire = encode(packet, 4)
    size = 2 + 1 + 2 + len(payload)
    assert wire[:4] == bytes((0x32, 0x80 | (size & 0x7F), 0x80 | ((size >> 7) & 0x7F), size >> 14))
    assert Decoder(4).feed(wire) == [packet]
