"""MQTT 5 per-connection rules: Topic Aliases, the inbound quota, payload format, packet sizes."""

from __future__ import annotations

import pytest

from actorbroker.codec import (
    NO_PROPERTIES,
    Connect,
    Properties,
    ProtocolError,
    PubAck,
    Publish,
    PubRec,
    ReasonCode,
    encode,
)
from actorbroker.session.aliases import InboundAliases, OutboundAliases
from actorbroker.session.capabilities import Mqtt5Policy
from actorbroker.session.flow import InboundQuota, publish_size
from actorbroker.session.link import Link
from actorbroker.session.message import AppMessage, Delivery, Delivery5


def link(policy: Mqtt5Policy | None = None, **props: object) -> Link:
    connect = Connect("MQTT", 5, "c", True, 0, properties=Properties(**props))  # type: ignore[arg-type]
    return Link(connect, policy or Mqtt5Policy())


def test_inbound_alias_set_then_used() -> None:
    aliases = InboundAliases(3)
    assert aliases.resolve("a/b", 2) == "a/b"
    assert aliases.resolve("", 2) == "a/b"
    assert aliases.resolve("c", 2) == "c"  # a new topic replaces the mapping
    assert aliases.resolve("", 2) == "c"
    assert aliases.resolve("d", None) == "d"


@pytest.mark.parametrize(("topic", "alias", "code", "rule"), [
    ("a", 4, ReasonCode.TOPIC_ALIAS_INVALID, "[MQTT-3.3.2-9]"),
    ("a", 0, ReasonCode.TOPIC_ALIAS_INVALID, "[MQTT-3.3.2-9]"),
    ("", 1, ReasonCode.PROTOCOL_ERROR, "never set"),
])
def test_inbound_alias_errors(topic: str, alias: int, code: int, rule: str) -> None:
    with pytest.raises(ProtocolError) as caught:
        InboundAliases(3).resolve(topic, alias)
    assert caught.value.reason_code == code and rule in str(caught.value)


def test_no_inbound_aliases_when_the_maximum_is_0() -> None:
    with pytest.raises(ProtocolError):
        InboundAliases(0).resolve("a", 1)


def test_outbound_aliases_first_come_within_the_maximum() -> None:
    aliases = OutboundAliases(2)
    first = aliases.apply(Publish("t/1", b"x"))
    assert (first.topic, first.properties.topic_alias) == ("t/1", 1)
    again = aliases.apply(Publish("t/1", b"y"))
    assert (again.topic, again.properties.topic_alias) == ("", 1)
    assert aliases.apply(Publish("t/2", b"z")).properties.topic_alias == 2
    third = aliases.apply(Publish("t/3", b"z"))  # [MQTT-3.3.2-11]: no alias above the maximum
    assert (third.topic, third.properties.topic_alias) == ("t/3", None)


def test_accept_resolves_and_strips_the_alias() -> None:
    ln = link()
    first = ln.accept(Publish("a/b", b"1", properties=Properties(topic_alias=1)), ())
    assert first == Publish("a/b", b"1")  # the alias is not forwarded
    second = ln.accept(Publish("", b"2", properties=Properties(topic_alias=1, content_type="t")),
                       ())
    assert second == Publish("a/b", b"2", properties=Properties(content_type="t"))


def test_accept_refuses_a_subscription_identifier_from_a_client() -> None:
    with pytest.raises(ProtocolError, match=r"\[MQTT-3.3.4-6\]"):
        link().accept(Publish("a", b"", properties=Properties(subscription_identifier=(1,))), ())


def test_receive_maximum_counts_qos2_awaiting_pubrel_and_qos1_in_the_read() -> None:
    ln = link(Mqtt5Policy(receive_maximum=3))
    ln.quota.read_started()
    ln.accept(Publish("a", b"", 1, packet_id=1), ())
    ln.accept(Publish("a", b"", 2, packet_id=2), {9})  # 1 QoS 1 + 1 awaiting PUBREL
    with pytest.raises(ProtocolError) as caught:
        ln.accept(Publish("a", b"", 2, packet_id=3), {9, 2})
    assert caught.value.reason_code == ReasonCode.RECEIVE_MAXIMUM_EXCEEDED
    ln.quota.read_started()  # the QoS 1 was acknowledged with its read
    ln.accept(Publish("a", b"", 2, packet_id=3), {9})
    ln.accept(Publish("a", b"", 2, packet_id=3, dup=True), {9, 2, 3})  # a retry is not new


def test_quota_alone() -> None:
    quota = InboundQuota(1)
    quota.admit(2, 0)
    with pytest.raises(ProtocolError):
        quota.admit(2, 1)


@pytest.mark.parametrize(("qos", "answer"), [
    (1, PubAck(5, ReasonCode.PAYLOAD_FORMAT_INVALID)),
    (2, PubRec(5, ReasonCode.PAYLOAD_FORMAT_INVALID)),
])
def test_invalid_utf8_with_payload_format_1_is_refused(qos: int, answer: PubAck) -> None:
    ln = link(request_problem_information=0)
    bad = Publish("a", b"\xff\xfe", qos, packet_id=5,
                  properties=Properties(payload_format_indicator=1))
    assert ln.accept(bad, ()) == answer
    good = Publish("a", "é".encode(), qos, packet_id=6,
                   properties=Properties(payload_format_indicator=1))
    assert ln.accept(good, ()) == good
    unchecked = Publish("a", b"\xff", qos, packet_id=7)  # no indicator: bytes are bytes
    assert ln.accept(unchecked, ()) == unchecked


def test_invalid_utf8_at_qos0_closes_with_0x99() -> None:
    with pytest.raises(ProtocolError) as caught:
        link().accept(Publish("a", b"\xc3", properties=Properties(payload_format_indicator=1)), ())
    assert caught.value.reason_code == ReasonCode.PAYLOAD_FORMAT_INVALID


def test_reason_strings_follow_request_problem_information() -> None:
    assert link().reason("why").reason_string == "why"
    assert link(request_problem_information=0).reason("why") is NO_PROPERTIES


@pytest.mark.parametrize("publish", [
    Publish("a/b", b"hello"),
    Publish("t", b"x" * 300, 1, packet_id=9,
            properties=Properties(user_property=(("k", "v"),), message_expiry_interval=3)),
    Publish("é/ü", b"x" * 20_000, 2, packet_id=1,
            properties=Properties(subscription_identifier=(1, 300, 70_000))),
])
def test_publish_size_is_the_encoded_size(publish: Publish) -> None:
    size = publish_size(publish.topic, len(publish.payload), publish.qos, publish.properties)
    assert size == len(encode(publish, 5))


def test_fits_the_clients_maximum_packet_size() -> None:
    message = AppMessage("a/b", b"x" * 50, 1)
    exact = len(encode(Publish("a/b", b"x" * 50, 1, packet_id=1), 5))
    assert link(maximum_packet_size=exact).fits(Delivery(message, 1))
    assert not link(maximum_packet_size=exact - 1).fits(Delivery(message, 1))
    # Subscription Identifiers count; so does a Topic Alias the broker may add.
    assert not link(maximum_packet_size=exact).fits(Delivery5(message, 1, False, (7,)))
    assert not link(maximum_packet_size=exact, topic_alias_maximum=5).fits(Delivery(message, 1))
    assert link().fits(Delivery(message, 1))  # no maximum


def test_outgoing_applies_aliases_only_when_the_client_accepts_them() -> None:
    packets = [Publish("t", b"1"), Publish("t", b"2")]
    assert link().outgoing(packets) == packets
    aliased = link(topic_alias_maximum=4).outgoing(packets)
    assert [(p.topic, p.properties.topic_alias) for p in aliased] == [("t", 1), ("", 1)]  # type: ignore[union-attr]
