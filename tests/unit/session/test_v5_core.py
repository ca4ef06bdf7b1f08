"""SessionCore with MQTT 5 connections: negotiation, flow control, expiry, Will delay, shared hand-back."""

from __future__ import annotations

import pytest

from actorbroker.codec import (
    Auth,
    ConnAck,
    Connect,
    Disconnect,
    Properties,
    PubAck,
    PubRec,
    Publish,
    ReasonCode,
    SubAck,
    Subscribe,
    Subscription,
    Will,
)
from actorbroker.session import (
    EXPIRY_TIMER,
    AppMessage,
    CancelTimer,
    Close,
    Dropped,
    DropReason,
    Effect,
    EndSession,
    HandBackShared,
    PublishWill,
    QueuePolicy,
    Reauthenticate,
    RequestSubscribe,
    Send,
    SessionConfig,
    SessionCore,
    SetKeepAlive,
    StartTimer,
)
from actorbroker.session.capabilities import NEVER_EXPIRES, Mqtt5Policy
from actorbroker.session.effects import WILL_TIMER
from actorbroker.session.message import Delivery5

MSG = AppMessage("t", b"payload", 1, publisher="p")


def connect5(clean: bool = True, keepalive: int = 60, will: Will | None = None,
             **props: object) -> Connect:
    return Connect("MQTT", 5, "c", clean, keepalive, will=will,
                   properties=Properties(**props))  # type: ignore[arg-type]


def core5(config: SessionConfig | None = None, **props: object) -> SessionCore:
    core = SessionCore("c", config)
    core.attach(connect5(**props), 0.0)  # type: ignore[arg-type]
    return core


def packets(effects: list[Effect]) -> list[object]:
    return [p for e in effects if isinstance(e, Send) for p in e.packets]


def publishes(effects: list[Effect]) -> list[Publish]:
    return [p for p in packets(effects) if isinstance(p, Publish)]


# -- CONNECT -------------------------------------------------------------------------

def test_attach_sends_the_negotiated_connack() -> None:
    core = SessionCore("c", SessionConfig(mqtt5=Mqtt5Policy(max_session_expiry=100)))
    effects = core.attach(connect5(keepalive=0, session_expiry_interval=NEVER_EXPIRES), 0.0,
                          assigned=True)
    [connack] = packets(effects)
    assert connack == ConnAck(False, 0, Properties(
        session_expiry_interval=100, assigned_client_identifier="c", server_keep_alive=65535,
        receive_maximum=20, topic_alias_maximum=10))
    assert SetKeepAlive(65535) in effects
    assert core.session_expiry == 100


def test_the_clients_receive_maximum_bounds_the_window() -> None:
    core = core5(receive_maximum=2)
    sent = [p for _ in range(3) for p in publishes(core.deliver(MSG, 1, 1.0))]
    assert len(sent) == 2 and len(core.queued) == 1  # [MQTT-3.3.4-9]
    effects = core.handle(PubAck(sent[0].packet_id or 0), 2.0)
    assert len(publishes(effects)) == 1


def test_a_delivery_too_large_for_the_client_is_dropped_before_it_takes_an_id() -> None:
    core = core5(maximum_packet_size=64)
    effects = core.deliver(AppMessage("t", b"x" * 100, 1), 1, 1.0)
    assert effects == [Dropped(AppMessage("t", b"x" * 100, 1), 1, DropReason.TOO_LARGE)]
    assert not core.inflight
    assert len(publishes(core.deliver(MSG, 1, 1.0))) == 1


def test_outbound_aliases_start_again_on_every_connection() -> None:
    core = core5(topic_alias_maximum=3, session_expiry_interval=60)
    first = publishes(core.deliver(AppMessage("t", b"1"), 0, 1.0))
    second = publishes(core.deliver(AppMessage("t", b"2"), 0, 1.0))
    assert [(p.topic, p.properties.topic_alias) for p in first + second] == [("t", 1), ("", 1)]
    core.detach(2.0)
    core.attach(connect5(clean=False, topic_alias_maximum=3, session_expiry_interval=60), 3.0)
    again = publishes(core.deliver(AppMessage("t", b"3"), 0, 4.0))
    assert (again[0].topic, again[0].properties.topic_alias) == ("t", 1)  # [MQTT-3.3.2-7]


# -- session expiry ------------------------------------------------------------------

@pytest.mark.parametrize(("interval", "expected"), [
    (0, [EndSession("clean session ended with its connection")]),
    (30, [StartTimer(EXPIRY_TIMER, 30.0)]),
    (NEVER_EXPIRES, []),  # 0xFFFFFFFF never expires: no timer at all
])
def test_session_expiry_interval_decides_what_detach_does(interval: int,
                                                         expected: list[Effect]) -> None:
    core = core5(session_expiry_interval=interval)
    effects = core.detach(1.0)
    assert [e for e in effects if isinstance(e, (EndSession, StartTimer))] == expected


def test_an_expired_session_discards_its_queue() -> None:
    core = core5(session_expiry_interval=5)
    core.detach(1.0)
    core.deliver(MSG, 1, 2.0)
    effects = core.on_timer(EXPIRY_TIMER, 6.0)
    assert Dropped(MSG, 1, DropReason.SESSION_ENDED) in effects
    assert isinstance(effects[-1], EndSession)


def test_disconnect_may_change_the_session_expiry() -> None:
    core = core5(session_expiry_interval=60)
    core.handle(Disconnect(0, Properties(session_expiry_interval=0)), 1.0)
    assert isinstance(core.detach(2.0)[-1], EndSession)


def test_disconnect_may_not_set_an_expiry_after_connect_said_0() -> None:
    core = core5(session_expiry_interval=0)
    effects = core.handle(Disconnect(0, Properties(session_expiry_interval=10)), 1.0)
    close = effects[-1]
    assert isinstance(close, Close) and "[MQTT-3.14.2-2]" in close.reason
    assert close.reason_code == ReasonCode.PROTOCOL_ERROR


# -- Will Delay Interval -------------------------------------------------------------

WILL = Will("w", b"gone", 1, properties=Properties(will_delay_interval=10))


def test_a_delayed_will_waits_for_its_timer() -> None:
    core = core5(will=WILL, session_expiry_interval=60)
    effects = core.detach(1.0)
    assert StartTimer(WILL_TIMER, 10.0) in effects
    assert not [e for e in effects if isinstance(e, PublishWill)]
    [publish] = core.on_timer(WILL_TIMER, 11.0)
    assert isinstance(publish, PublishWill) and publish.message.payload == b"gone"
    assert core.on_timer(WILL_TIMER, 12.0) == []  # once


def test_a_delayed_will_is_dropped_when_the_session_resumes() -> None:
    core = core5(will=WILL, session_expiry_interval=60)
    core.detach(1.0)
    effects = core.attach(connect5(clean=False, session_expiry_interval=60), 2.0)
    assert CancelTimer(WILL_TIMER) in effects  # [MQTT-3.1.3-9]
    assert not [e for e in effects if isinstance(e, PublishWill)]
    assert core.on_timer(WILL_TIMER, 11.0) == []


def test_a_delayed_will_is_published_when_a_clean_start_ends_the_session() -> None:
    core = core5(will=WILL, session_expiry_interval=60)
    core.detach(1.0)
    effects = core.attach(connect5(clean=True), 2.0)
    assert [e.message.payload for e in effects if isinstance(e, PublishWill)] == [b"gone"]


def test_the_will_goes_out_when_the_session_expires_first() -> None:
    core = core5(will=WILL, session_expiry_interval=4)
    effects = core.detach(1.0)
    assert StartTimer(WILL_TIMER, 4.0) in effects and StartTimer(EXPIRY_TIMER, 4.0) in effects
    expired = core.on_timer(EXPIRY_TIMER, 5.0)
    assert [e.message.payload for e in expired if isinstance(e, PublishWill)] == [b"gone"]


def test_no_session_left_means_the_will_at_once() -> None:
    core = core5(will=WILL, session_expiry_interval=0)
    assert [e for e in core.detach(1.0) if isinstance(e, PublishWill)]


def test_disconnect_with_will_message_still_publishes_it() -> None:
    core = core5(will=Will("w", b"x"), session_expiry_interval=0)
    core.handle(Disconnect(ReasonCode.DISCONNECT_WITH_WILL_MESSAGE), 1.0)
    assert [e for e in core.detach(1.0) if isinstance(e, PublishWill)]


# -- shared subscriptions ------------------------------------------------------------

def shared_core() -> SessionCore:
    return core5(SessionConfig(queue=QueuePolicy(max_inflight=2)), session_expiry_interval=60)


def test_detach_hands_back_what_the_client_lacks_but_keeps_qos2_in_flight() -> None:
    core = shared_core()
    q1 = AppMessage("t", b"q1", 1)
    q2 = AppMessage("t", b"q2", 2)
    queued = AppMessage("t", b"queued", 1)
    core.deliver5(q1, 2, 1.0, group="$share/g/t")
    [q2_publish] = publishes(core.deliver5(q2, 2, 1.0, group="$share/g/t"))
    core.deliver5(queued, 2, 1.0, group="$share/g/t")  # the window (2) is full
    core.deliver5(AppMessage("t", b"q0", 0), 2, 1.0, group="$share/g/t")
    effects = core.detach(2.0)
    [back] = [e for e in effects if isinstance(e, HandBackShared)]
    assert [d.message.payload for d in back.deliveries] == [b"q1", b"queued"]
    # QoS 2 in flight stays with this client ([MQTT-4.8.2-4]) and is resent on reconnect.
    resent = publishes(core.attach(connect5(clean=False, session_expiry_interval=60), 3.0))
    assert [(p.payload, p.dup, p.packet_id) for p in resent] == [(b"q2", True,
                                                                  q2_publish.packet_id)]


def test_acknowledged_shared_deliveries_are_not_handed_back() -> None:
    core = shared_core()
    [sent] = publishes(core.deliver5(MSG, 1, 1.0, group="$share/g/t"))
    core.handle(PubAck(sent.packet_id or 0), 1.5)
    assert not [e for e in core.detach(2.0) if isinstance(e, HandBackShared)]


def test_a_clean_session_ending_hands_back_before_discarding() -> None:
    core = core5(session_expiry_interval=0)
    core.deliver5(MSG, 1, 1.0, group="$share/g/t")
    effects = core.detach(2.0)
    assert isinstance(effects[0], HandBackShared) or any(
        isinstance(e, HandBackShared) for e in effects)
    assert not [e for e in effects if isinstance(e, Dropped)]


def test_shared_deliveries_to_an_offline_member() -> None:
    core = shared_core()
    core.detach(1.0)
    # Chosen as an online member but gone meanwhile: straight back to the group.
    [back] = core.deliver5(MSG, 1, 2.0, group="$share/g/t", final=False)
    assert isinstance(back, HandBackShared) and back.deliveries[0].message is MSG
    # Chosen because no member was online: queued here.
    assert core.deliver5(MSG, 1, 2.0, group="$share/g/t", final=True) == []
    assert len(core.queued) == 1


def test_subscription_identifiers_are_sent() -> None:
    core = core5()
    [publish] = publishes(core.deliver5(MSG, 1, 1.0, subscription_ids=(3, 8)))
    assert publish.properties.subscription_identifier == (3, 8)
    assert isinstance(core.inflight[publish.packet_id or 0][0], Delivery5)


# -- SUBSCRIBE -----------------------------------------------------------------------

def test_retain_handling_and_subscription_identifier_on_retained_messages() -> None:
    core = core5()
    subscribe = Subscribe(1, (Subscription("a/#", 1, retain_handling=1),
                              Subscription("b/#", 1, retain_handling=2),
                              Subscription("c/#", 0)),
                          Properties(subscription_identifier=(5,)))
    [request] = core.handle(subscribe, 0.0)
    assert isinstance(request, RequestSubscribe) and request.subscription_id == 5
    retained = [AppMessage(t, b"r", 1, True) for t in ("a/1", "b/1", "c/1")]
    sent = publishes(core.subscribed(1, None, retained, 1.0))
    assert [(p.topic, p.retain, p.properties.subscription_identifier) for p in sent] == [
        ("a/1", True, (5,)), ("c/1", True, (5,))]  # b/#: Retain Handling 2, never
    core.handle(Subscribe(2, (Subscription("a/#", 1, retain_handling=1),)), 2.0)
    assert publishes(core.subscribed(2, None, retained[:1], 3.0)) == []  # existed: not again


@pytest.mark.parametrize(("policy", "subscribe", "code"), [
    (Mqtt5Policy(shared_available=False), Subscribe(1, (Subscription("$share/g/a", 1),)),
     ReasonCode.SHARED_SUBSCRIPTIONS_NOT_SUPPORTED),
    (Mqtt5Policy(wildcard_available=False), Subscribe(1, (Subscription("a/+", 1),)),
     ReasonCode.WILDCARD_SUBSCRIPTIONS_NOT_SUPPORTED),
    (Mqtt5Policy(subscription_ids_available=False),
     Subscribe(1, (Subscription("a", 1),), Properties(subscription_identifier=(3,))),
     ReasonCode.SUBSCRIPTION_IDENTIFIERS_NOT_SUPPORTED),
])
def test_features_turned_off_are_refused_in_suback(policy: Mqtt5Policy, subscribe: Subscribe,
                                                   code: ReasonCode) -> None:
    core = core5(SessionConfig(mqtt5=policy))
    assert core.handle(subscribe, 0.0) == [Send((SubAck(1, (code,)),))]


# -- inbound -------------------------------------------------------------------------

def test_payload_format_invalid_is_refused_in_the_ack() -> None:
    core = core5()
    bad = Publish("a", b"\xff", 2, packet_id=4, properties=Properties(payload_format_indicator=1))
    [send] = core.handle(bad, 0.0)
    [pubrec] = send.packets  # type: ignore[union-attr]
    assert isinstance(pubrec, PubRec) and pubrec.reason_code == ReasonCode.PAYLOAD_FORMAT_INVALID
    assert 4 not in core.inbound_qos2  # refused: no QoS 2 flow to finish


def test_receive_maximum_exceeded_closes_with_0x93() -> None:
    core = core5(SessionConfig(mqtt5=Mqtt5Policy(receive_maximum=2)))
    effects = core.handle_all([Publish("a", b"", 2, packet_id=i) for i in (1, 2, 3)], 0.0)
    close = effects[-1]
    assert isinstance(close, Close) and close.reason_code == ReasonCode.RECEIVE_MAXIMUM_EXCEEDED


def test_auth_after_connack_is_reauthentication_with_the_same_method() -> None:
    core = core5(authentication_method="SCRAM-SHA-256")
    auth = Auth(ReasonCode.RE_AUTHENTICATE, Properties(authentication_method="SCRAM-SHA-256"))
    assert core.handle(auth, 0.0) == [Reauthenticate(auth)]
    other = Auth(ReasonCode.RE_AUTHENTICATE, Properties(authentication_method="OTHER"))
    close = core.handle(other, 0.0)[-1]
    assert isinstance(close, Close) and "[MQTT-4.12.1-1]" in close.reason


def test_auth_without_a_method_in_connect_is_a_protocol_error() -> None:
    close = core5().handle(Auth(ReasonCode.RE_AUTHENTICATE), 0.0)[-1]
    assert isinstance(close, Close) and close.reason_code == ReasonCode.PROTOCOL_ERROR


def test_disconnect_helper_closes_with_the_code() -> None:
    core = core5()
    effects = core.disconnect(ReasonCode.NOT_AUTHORIZED, "re-authentication failed")
    assert isinstance(effects[-1], Close) and effects[-1].reason_code == ReasonCode.NOT_AUTHORIZED
    assert packets(effects)[0].reason_code == ReasonCode.NOT_AUTHORIZED  # type: ignore[attr-defined]


def test_a_will_message_leaves_its_delay_interval_behind() -> None:
    will = Will("w", b"x", 1, properties=Properties(will_delay_interval=5, content_type="t"))
    message = AppMessage.from_will(will, publisher="c", received_at=0.0)
    assert message.properties == Properties(content_type="t")  # a PUBLISH may not carry it


def test_a_smaller_receive_maximum_after_a_reconnect_holds_resends_back() -> None:
    core = core5(session_expiry_interval=60)  # Receive Maximum 65535: 3 in flight
    sent = [p for _ in range(3) for p in publishes(core.deliver(MSG, 1, 1.0))]
    core.detach(2.0)
    resent = publishes(core.attach(connect5(clean=False, session_expiry_interval=60,
                                            receive_maximum=1), 3.0))
    assert [p.packet_id for p in resent] == [sent[0].packet_id]  # [MQTT-3.3.4-9]
    # An ack for a flow whose resend waits cancels that resend; the next one follows.
    after = core.handle(PubAck(sent[1].packet_id or 0), 4.0)
    assert publishes(after) == []
    after = core.handle(PubAck(sent[0].packet_id or 0), 5.0)
    assert [(p.packet_id, p.dup) for p in publishes(after)] == [(sent[2].packet_id, True)]


def test_a_reused_packet_id_closes_with_a_code_a_disconnect_may_carry() -> None:
    # 0x91 (Packet Identifier in use) is a SUBACK/PUBACK code, not a DISCONNECT one
    # ([MQTT-3.14.2-1]); the fuzzer found the broker sending it.
    core = core5()
    core.handle(Subscribe(4, (Subscription("s", 1),)), 0.0)
    sent = packets(core.handle(Subscribe(4, (Subscription("t", 1),)), 0.0))
    assert len(sent) == 1 and isinstance(sent[0], Disconnect)
    assert sent[0].reason_code == ReasonCode.PROTOCOL_ERROR
