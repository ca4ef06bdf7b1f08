"""SessionCore.handle: what a client sends (PUBLISH in, acks, SUBSCRIBE, UNSUBSCRIBE, PING, errors)."""

from __future__ import annotations

import pytest

from actorbroker.codec import (
    Auth,
    ConnAck,
    Connect,
    Disconnect,
    Packet,
    PingReq,
    PingResp,
    PubAck,
    PubComp,
    PubRec,
    PubRel,
    Publish,
    ReasonCode,
    SubAck,
    Subscribe,
    Subscription,
    UnsubAck,
    Unsubscribe,
)
from actorbroker.session import (
    AppMessage,
    Close,
    Effect,
    RequestSubscribe,
    RequestUnsubscribe,
    Route,
    Send,
    SessionConfig,
    SessionCore,
)


def attached(level: int = 4, **config: object) -> SessionCore:
    core = SessionCore("pub", SessionConfig(**config))  # type: ignore[arg-type]
    core.attach(Connect("MQIsdp" if level == 3 else "MQTT", level, "pub", True, 0), 0.0)
    return core


def closes(effects: list[Effect], code: ReasonCode, rule: str) -> None:
    close = effects[-1]
    assert isinstance(close, Close), effects
    assert close.reason_code == code and rule in close.reason, close


# ------------------------------------------------------------------ PUBLISH in

# (packet, expected effects) for a fresh session; seq 1 is the first message accepted
PUBLISH_CASES = [
    (Publish("a/b", b"0"), [Route(AppMessage("a/b", b"0", 0, publisher="pub", received_at=5.0, seq=1))]),
    (Publish("a/b", b"1", 1, packet_id=3),
     [Route(AppMessage("a/b", b"1", 1, publisher="pub", received_at=5.0, seq=1), PubAck(3))]),
    (Publish("a/b", b"2", 2, True, packet_id=4),
     [Route(AppMessage("a/b", b"2", 2, True, publisher="pub", received_at=5.0, seq=1), PubRec(4))]),
]


@pytest.mark.parametrize(("packet", "expected"), PUBLISH_CASES, ids=["qos0", "qos1", "qos2"])
def test_publish_is_routed_with_the_ack_it_owes(packet: Publish, expected: list[Effect]) -> None:
    assert attached().handle(packet, 5.0) == expected


def test_qos2_retry_before_pubrel_is_acknowledged_but_not_routed_again() -> None:
    core = attached()
    first = core.handle(Publish("t", b"x", 2, packet_id=9), 1.0)
    assert [type(e) for e in first] == [Route]
    retry = Publish("t", b"x", 2, dup=True, packet_id=9)
    assert core.handle(retry, 2.0) == [Send((PubRec(9),))]
    assert core.handle(retry, 3.0) == [Send((PubRec(9),))]
    assert core.inbound_qos2 == {9}
    assert core.handle(PubRel(9), 4.0) == [Send((PubComp(9),))]
    assert core.inbound_qos2 == frozenset()
    # after PUBREL the id starts a new message
    again = core.handle(Publish("t", b"y", 2, packet_id=9), 5.0)
    assert [type(e) for e in again] == [Route]
    assert again[0].message.seq == 2  # type: ignore[union-attr]


def test_qos1_retry_is_routed_again() -> None:
    core = attached()
    core.handle(Publish("t", b"x", 1, packet_id=1), 0.0)
    assert [type(e) for e in core.handle(Publish("t", b"x", 1, True, packet_id=1), 0.0)] == [Route]


@pytest.mark.parametrize(("level", "code"), [(4, 0), (5, ReasonCode.PACKET_IDENTIFIER_NOT_FOUND)])
def test_pubrel_for_unknown_id_is_answered(level: int, code: int) -> None:
    assert attached(level).handle(PubRel(77), 0.0) == [Send((PubComp(77, code),))]


def test_inbound_qos2_state_survives_a_reconnect_of_a_persistent_session() -> None:
    core = SessionCore("pub")
    core.attach(Connect("MQTT", 4, "pub", False, 0), 0.0)
    core.handle(Publish("t", b"x", 2, packet_id=5), 0.0)
    core.detach(1.0)
    core.attach(Connect("MQTT", 4, "pub", False, 0), 2.0)
    assert core.handle(Publish("t", b"x", 2, dup=True, packet_id=5), 3.0) == [Send((PubRec(5),))]
    assert core.handle(PubRel(5), 3.0) == [Send((PubComp(5),))]


# (config, packet, reason code, rule in message)
PUBLISH_ERRORS = [
    ({}, Publish("a/+", b""), ReasonCode.TOPIC_NAME_INVALID, "[MQTT-3.3.2-2]"),
    ({}, Publish("", b""), ReasonCode.TOPIC_NAME_INVALID, "[MQTT-4.7.3-1]"),
    ({"max_qos": 1}, Publish("a", b"", 2, packet_id=1), ReasonCode.QOS_NOT_SUPPORTED, "3.2.2.3.4"),
    ({"retain_available": False}, Publish("a", b"", 0, True), ReasonCode.RETAIN_NOT_SUPPORTED, "3.2.2.3.5"),
    ({}, Publish("a", b"", 1), ReasonCode.PROTOCOL_ERROR, "[MQTT-2.2.1-2]"),
]


@pytest.mark.parametrize(("config", "packet", "code", "rule"), PUBLISH_ERRORS)
def test_publish_errors_close_the_connection(
    config: dict[str, object], packet: Publish, code: ReasonCode, rule: str
) -> None:
    core = attached(**config)
    closes(core.handle(packet, 0.0), code, rule)
    assert core.handle(Publish("ok", b""), 0.0) == []  # nothing after the close request


def test_v5_protocol_error_sends_disconnect_before_closing() -> None:
    effects = attached(5).handle(Publish("a/#", b""), 0.0)
    [disconnect] = effects[0].packets  # type: ignore[union-attr]
    assert isinstance(disconnect, Disconnect)
    assert disconnect.reason_code == ReasonCode.TOPIC_NAME_INVALID
    # MQTT 5 clients allow problem information unless they say otherwise ([MQTT-3.1.2-29]).
    assert "[MQTT-3.3.2-2]" in (disconnect.properties.reason_string or "")
    closes(effects, ReasonCode.TOPIC_NAME_INVALID, "[MQTT-3.3.2-2]")


@pytest.mark.parametrize(("packet", "rule"), [
    (Connect("MQTT", 4, "pub", True, 0), "[MQTT-3.1.0-2]"),
    (ConnAck(), "server to client"),
    (SubAck(1, (0,)), "server to client"),
    (UnsubAck(1), "server to client"),
    (PingResp(), "server to client"),
    (Auth(), "section 4.12"),  # v5 only, and only after an Authentication Method in CONNECT
])
def test_packets_a_client_must_not_send_close_the_connection(packet: Packet, rule: str) -> None:
    closes(attached().handle(packet, 0.0), ReasonCode.PROTOCOL_ERROR, rule)


def test_pingreq_and_handle_all_coalesces_sends() -> None:
    core = attached()
    effects = core.handle_all([PingReq(), PubRel(1), Publish("t", b""), PingReq()], 0.0)
    assert effects == [
        Send((PingResp(), PubComp(1))),
        Route(AppMessage("t", b"", publisher="pub", seq=1)),
        Send((PingResp(),)),
    ]


def test_wrong_ack_for_a_known_id_is_a_protocol_error() -> None:
    core = attached()
    core.deliver(AppMessage("t", b"", 2), 2, 0.0)
    closes(core.handle(PubAck(1), 0.0), ReasonCode.PROTOCOL_ERROR, "PUBACK for packet identifier 1")


# ---------------------------------------------------------------- SUBSCRIBE

SUB = Subscription


# (level, max_qos, requested, request sent to the registry, SUBACK codes with results=None)
SUBSCRIBE_CASES = [
    ("granted as asked", 4, 2, [SUB("a", 0), SUB("b/+", 1), SUB("#", 2)],
     [SUB("a", 0), SUB("b/+", 1), SUB("#", 2)], (0, 1, 2)),
    ("capped at max qos", 4, 1, [SUB("a", 2), SUB("b", 0)], [SUB("a", 1), SUB("b", 0)], (1, 0)),
    ("3.1.1 invalid filter gets 0x80", 4, 2, [SUB("a/#/b", 1), SUB("ok", 1)], [SUB("ok", 1)], (0x80, 1)),
    ("5.0 invalid filter gets 0x8F", 5, 2, [SUB("ok", 1), SUB("x+", 1)], [SUB("ok", 1)], (1, 0x8F)),
    ("3.x $share is a plain filter", 4, 2, [SUB("$share/g", 1)], [SUB("$share/g", 1)], (1,)),
    ("5.0 bad shared filter", 5, 2, [SUB("$share//a", 1)], [], (0x8F,)),
]


@pytest.mark.parametrize(("level", "max_qos", "requested", "asked", "codes"),
                         [c[1:] for c in SUBSCRIBE_CASES], ids=[c[0] for c in SUBSCRIBE_CASES])
def test_subscribe(level: int, max_qos: int, requested: list[Subscription],
                   asked: list[Subscription], codes: tuple[int, ...]) -> None:
    core = attached(level, max_qos=max_qos)
    effects = core.handle(Subscribe(10, tuple(requested)), 0.0)
    if not asked:
        assert effects == [Send((SubAck(10, codes),))]  # nothing to ask: SUBACK at once
        return
    assert effects == [RequestSubscribe(10, tuple(asked))]
    assert core.subscribed(10, None, (), 0.0) == [Send((SubAck(10, codes),))]
    assert dict(core.subscriptions) == {s.topic_filter: s for s in asked}


def test_mqtt31_invalid_filter_closes_the_connection() -> None:
    closes(attached(3).handle(Subscribe(1, (SUB("a#", 0),)), 0.0),
           ReasonCode.TOPIC_FILTER_INVALID, "3.1 SUBACK")


def test_registry_results_override_and_refuse() -> None:
    core = attached()
    core.handle(Subscribe(2, (SUB("a", 2), SUB("bad", 1), SUB("b", 2))), 0.0)
    assert core.subscribed(2, [1, 0x80, 2], (), 0.0) == [Send((SubAck(2, (1, 0x80, 2)),))]
    assert {f: s.qos for f, s in core.subscriptions.items()} == {"a": 1, "b": 2}
    core.handle(Subscribe(3, (SUB("c", 0),)), 0.0)
    with pytest.raises(ValueError, match="2 results for 1"):
        core.subscribed(3, [0, 0], (), 0.0)
    with pytest.raises(ValueError, match="no SUBSCRIBE"):
        core.subscribed(99, None, (), 0.0)


def test_retained_messages_follow_the_suback_with_retain_1() -> None:
    core = attached()
    core.handle(Subscribe(4, (SUB("s/+", 1), SUB("s/#", 0))), 0.0)
    retained = [AppMessage("s/a", b"r1", 2, True), AppMessage("s/a/b", b"r2", 1, True)]
    effects = core.subscribed(4, None, retained, 1.0)
    assert effects == [Send((
        SubAck(4, (1, 0)),
        Publish("s/a", b"r1", 1, True, packet_id=1),  # max granted of matching filters: 1
        Publish("s/a/b", b"r2", 0, True),  # only s/# matches
    ))]


def test_retained_message_matching_no_granted_filter_is_a_caller_bug() -> None:
    core = attached()
    core.handle(Subscribe(4, (SUB("s", 1),)), 0.0)
    with pytest.raises(ValueError, match="matches no granted filter"):
        core.subscribed(4, None, [AppMessage("other", b"", 0, True)], 0.0)


@pytest.mark.parametrize("second", [Subscribe(4, (SUB("t", 1),)), Unsubscribe(4, ("t",))])
def test_packet_id_in_use_by_an_unanswered_request_closes(second: Packet) -> None:
    core = attached()
    core.handle(Subscribe(4, (SUB("s", 1),)), 0.0)
    closes(core.handle(second, 0.0), ReasonCode.PACKET_IDENTIFIER_IN_USE, "[MQTT-2.2.1-3]")


def test_packet_id_is_free_again_once_answered() -> None:
    core = attached()
    core.handle(Unsubscribe(4, ("s",)), 0.0)
    core.unsubscribed(4, 0.0)
    assert core.handle(Subscribe(4, (SUB("s", 1),)), 0.0) == [RequestSubscribe(4, (SUB("s", 1),))]


def test_replacing_a_subscription_keeps_one_entry() -> None:
    core = attached()
    for packet_id, qos in ((1, 0), (2, 2)):
        core.handle(Subscribe(packet_id, (SUB("s", qos),)), 0.0)
        core.subscribed(packet_id, None, (), 0.0)
    assert {f: s.qos for f, s in core.subscriptions.items()} == {"s": 2}


# -------------------------------------------------------------- UNSUBSCRIBE

@pytest.mark.parametrize(("level", "unsuback"), [
    (4, UnsubAck(6)),
    (5, UnsubAck(6, (ReasonCode.SUCCESS, ReasonCode.NO_SUBSCRIPTION_EXISTED))),
])
def test_unsubscribe_goes_through_the_registry(level: int, unsuback: UnsubAck) -> None:
    core = attached(level)
    core.handle(Subscribe(1, (SUB("a", 1),)), 0.0)
    core.subscribed(1, None, (), 0.0)
    assert core.handle(Unsubscribe(6, ("a", "never")), 0.0) == [RequestUnsubscribe(6, ("a", "never"))]
    assert list(core.subscriptions) == ["a"]  # until the registry answers
    assert core.unsubscribed(6, 0.0) == [Send((unsuback,))]
    assert core.subscriptions == {}
    with pytest.raises(ValueError):
        core.unsubscribed(6, 0.0)


def test_unsubscribe_answered_after_disconnect_sends_nothing() -> None:
    core = SessionCore("pub")
    core.attach(Connect("MQTT", 4, "pub", False, 0), 0.0)
    core.handle(Unsubscribe(6, ("a",)), 0.0)
    core.detach(1.0)
    assert core.unsubscribed(6, 2.0) == []


def test_disconnect_closes_and_ignores_the_rest() -> None:
    core = attached()
    effects = core.handle_all([Disconnect(), Publish("t", b"late")], 0.0)
    assert effects == [Close(ReasonCode.NORMAL_DISCONNECTION, "client sent DISCONNECT")]
    assert not core.attached
