"""Message properties passed through unchanged, payload format validation, request/response, acks' codes."""

from __future__ import annotations

from collections.abc import Callable

from mqtt5_testkit import Client5, connect5, expect_disconnect
from mqtt_testkit import RawClient

from actorbroker.codec import (
    Properties,
    PubAck,
    PubComp,
    Publish,
    PubRec,
    PubRel,
    ReasonCode,
)

Clients5 = Callable[..., Client5]
Raw = Callable[..., RawClient]


def test_properties_are_passed_through_unchanged(client5: Clients5) -> None:
    sub = client5("sub")
    sub.subscribe("props", 2)
    client5("pub").publish(
        "props", "héllo".encode(), 2, PayloadFormatIndicator=1, ContentType="text/plain",
        UserProperty=[("a", "1"), ("a", "2"), ("b", "x")], ResponseTopic="reply/here",
        CorrelationData=b"\x00\x01corr")
    message = sub.expect()
    assert message.payload == "héllo".encode()
    props = message.properties
    assert props["PayloadFormatIndicator"] == 1
    assert props["ContentType"] == "text/plain"
    assert props["UserProperty"] == [("a", "1"), ("a", "2"), ("b", "x")]  # order and repeats
    assert props["ResponseTopic"] == "reply/here"
    assert props["CorrelationData"] == b"\x00\x01corr"


def test_request_response_round_trip(client5: Clients5) -> None:
    server = client5("responder")
    server.subscribe("service/request", 1)
    requester = client5("requester", connect=False)
    requester.connect()
    requester.subscribe("replies/requester", 1)
    requester.publish("service/request", b"ping", 1, ResponseTopic="replies/requester",
                      CorrelationData=b"42")
    request = server.expect()
    server.publish(request.properties["ResponseTopic"], b"pong", 1,
                   CorrelationData=request.properties["CorrelationData"])
    response = requester.expect()
    assert (response.payload, response.properties["CorrelationData"]) == (b"pong", b"42")


def test_invalid_utf8_is_refused_with_0x99(raw5: Raw, client5: Clients5) -> None:
    sub = client5("sub")
    sub.subscribe("pfi", 1)
    pub = raw5()
    connect5(pub, "pub")
    text = Properties(payload_format_indicator=1)
    pub.send(Publish("pfi", b"\xff\xfe", 1, packet_id=1, properties=text))
    ack = pub.recv()
    assert isinstance(ack, PubAck) and ack.reason_code == ReasonCode.PAYLOAD_FORMAT_INVALID
    assert "3.3.2.3.2" in (ack.properties.reason_string or "")
    pub.send(Publish("pfi", b"\xff\xfe", 2, packet_id=2, properties=text))
    rec = pub.recv()
    assert isinstance(rec, PubRec) and rec.reason_code == ReasonCode.PAYLOAD_FORMAT_INVALID
    pub.send(Publish("pfi", b"ok", 1, packet_id=3, properties=text))
    assert pub.recv() == PubAck(3)
    assert sub.expect().payload == b"ok"  # the refused ones were not routed
    pub.send(Publish("pfi", b"\xc3", 0, properties=text))
    assert expect_disconnect(pub).reason_code == ReasonCode.PAYLOAD_FORMAT_INVALID


def test_pubrel_and_pubrec_for_unknown_ids_get_0x92(raw5: Raw) -> None:
    r = raw5()
    connect5(r, "ids")
    r.send(PubRel(77))
    assert r.recv() == PubComp(77, ReasonCode.PACKET_IDENTIFIER_NOT_FOUND)
    r.send(PubRec(78))
    assert r.recv() == PubRel(78, ReasonCode.PACKET_IDENTIFIER_NOT_FOUND)


def test_a_publish_with_a_subscription_identifier_is_a_protocol_error(raw5: Raw) -> None:
    r = raw5()
    connect5(r, "subid")
    r.send(Publish("t", b"", properties=Properties(subscription_identifier=(1,))))
    assert expect_disconnect(r).reason_code == ReasonCode.PROTOCOL_ERROR
