"""SessionCore: attach, detach, take-over, clean/persistent sessions, Will, keepalive, expiry, restore."""

from __future__ import annotations

import pytest

from actorbroker.codec import (
    ConnAck,
    Connect,
    Disconnect,
    PingReq,
    PingResp,
    PubAck,
    PubRec,
    PubRel,
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
    LifecycleError,
    PublishWill,
    QueuePolicy,
    RequestUnsubscribe,
    Send,
    SessionConfig,
    SessionCore,
    SessionState,
    StartTimer,
)

WILL = Will("clients/c/status", b"offline", 1, True)


def conn(clean: bool = False, level: int = 4, keepalive: int = 0, will: Will | None = None) -> Connect:
    return Connect("MQIsdp" if level == 3 else "MQTT", level, "c", clean, keepalive, will=will)


def sent(effects: list[Effect]) -> list[object]:
    return [p for e in effects if isinstance(e, Send) for p in e.packets]


def others(effects: list[Effect]) -> list[Effect]:
    return [e for e in effects if not isinstance(e, Send)]


def subscribed_core(clean: bool = False, **config: object) -> SessionCore:
    core = SessionCore("c", SessionConfig(**config))  # type: ignore[arg-type]
    core.attach(conn(clean), 0.0)
    core.handle(Subscribe(1, (Subscription("t/#", 2),)), 0.0)
    core.subscribed(1, None, (), 0.0)
    return core


# (first connect clean?, state after detach, second connect clean?, session present on second CONNACK)
SESSION_PRESENT_CASES = [
    (False, SessionState.DISCONNECTED, False, True),   # [MQTT-3.2.2-2]
    (False, SessionState.DISCONNECTED, True, False),   # [MQTT-3.2.2-1]
]


@pytest.mark.parametrize(("first", "after", "second", "present"), SESSION_PRESENT_CASES)
def test_session_present(first: bool, after: SessionState, second: bool, present: bool) -> None:
    core = SessionCore("c")
    assert sent(core.attach(conn(first), 0.0)) == [ConnAck(False, 0)]
    core.detach(1.0)
    assert core.state is after
    assert sent(core.attach(conn(second), 2.0))[0] == ConnAck(present, 0)
    assert core.state is SessionState.CONNECTED


def test_mqtt31_connack_never_claims_a_session() -> None:
    core = SessionCore("c")
    core.attach(conn(level=3), 0.0)
    core.detach(1.0)
    assert sent(core.attach(conn(level=3), 2.0))[0] == ConnAck(False, 0)


def test_clean_session_ends_with_its_connection() -> None:
    core = subscribed_core(clean=True, queue=QueuePolicy(max_inflight=1))
    message = AppMessage("t/1", b"x", 1)
    core.deliver(message, 1, 0.0)
    core.deliver(message, 1, 0.0)  # queued behind the window
    effects = core.detach(1.0)
    assert core.state is SessionState.ENDED
    assert effects == [
        Dropped(message, 1, DropReason.SESSION_ENDED),
        Dropped(message, 1, DropReason.SESSION_ENDED),
        RequestUnsubscribe(None, ("t/#",)),
        EndSession("clean session ended with its connection"),
    ]
    with pytest.raises(LifecycleError):
        core.attach(conn(), 2.0)
    assert core.deliver(message, 1, 3.0) == [Dropped(message, 1, DropReason.SESSION_ENDED)]


def test_persistent_session_keeps_subscriptions_and_queues_qos1_2_offline() -> None:
    core = subscribed_core()
    assert others(core.detach(1.0)) == []
    assert core.state is SessionState.DISCONNECTED
    assert list(core.subscriptions) == ["t/#"]
    m0, m1, m2 = (AppMessage(f"t/{q}", b"x", q) for q in (0, 1, 2))
    assert core.deliver(m0, 2, 2.0) == [Dropped(m0, 0, DropReason.OFFLINE_QOS0)]
    assert core.deliver(m1, 2, 2.0) == []
    assert core.deliver(m2, 2, 2.0) == []
    effects = core.attach(conn(), 3.0)
    assert sent(effects) == [ConnAck(True, 0), Publish("t/1", b"x", 1, packet_id=1),
                             Publish("t/2", b"x", 2, packet_id=2)]


def test_queue_qos0_while_offline_when_configured() -> None:
    core = subscribed_core(queue=QueuePolicy(queue_qos0=True))
    core.detach(1.0)
    message = AppMessage("t/0", b"x")
    assert core.deliver(message, 2, 2.0) == []
    assert sent(core.attach(conn(), 3.0)) == [ConnAck(True, 0), Publish("t/0", b"x")]


def test_reconnect_resends_unacknowledged_publishes_and_pubrels_in_order() -> None:
    # [MQTT-4.4.0-1]: DUP=1, original packet ids; PUBREL for flows past PUBREC.
    core = subscribed_core(queue=QueuePolicy(max_inflight=3))
    for n in range(5):
        core.deliver(AppMessage(f"t/{n}", b"", 2), 2, 0.0)
    core.handle(PubRec(2), 0.0)
    core.detach(1.0)
    packets = sent(core.attach(conn(), 2.0))
    assert packets == [
        ConnAck(True, 0),
        Publish("t/0", b"", 2, dup=True, packet_id=1),
        Publish("t/2", b"", 2, dup=True, packet_id=3),
        PubRel(2),
    ]
    # the queue waits for the window
    assert [d.message.topic for d in core.queued] == ["t/3", "t/4"]


def test_clean_reconnect_discards_the_offline_session() -> None:
    core = subscribed_core()
    core.detach(1.0)
    message = AppMessage("t/1", b"x", 1)
    core.deliver(message, 1, 1.5)
    effects = core.attach(conn(clean=True), 2.0)
    assert effects == [
        Dropped(message, 1, DropReason.SESSION_ENDED),
        RequestUnsubscribe(None, ("t/#",)),
        Send((ConnAck(False, 0),)),
    ]
    assert core.subscriptions == {} and core.queued == () and core.clean_session


# (disconnect first?, graceful flag, will published?)
WILL_CASES = [
    (False, False, True),   # network failure, keepalive timeout, protocol error: [MQTT-3.1.2-8]
    (True, False, False),   # DISCONNECT: [MQTT-3.1.2-10] (3.1.1: [MQTT-3.14.4-3])
    (False, True, False),   # the actor says graceful
]


@pytest.mark.parametrize(("disconnect", "graceful", "published"), WILL_CASES)
def test_will(disconnect: bool, graceful: bool, published: bool) -> None:
    core = SessionCore("c")
    core.attach(conn(will=WILL), 0.0)
    if disconnect:
        assert core.handle(Disconnect(), 1.0) == [
            Close(ReasonCode.NORMAL_DISCONNECTION, "client sent DISCONNECT")
        ]
    effects = core.detach(2.0, graceful=graceful)
    wills = [e for e in effects if isinstance(e, PublishWill)]
    expected = [PublishWill(AppMessage("clients/c/status", b"offline", 1, True, publisher="c",
                                       received_at=2.0))]
    assert wills == (expected if published else [])
    assert core.will is None  # never kept for a later connection


def test_will_is_not_published_again_after_reconnect() -> None:
    core = SessionCore("c")
    core.attach(conn(will=WILL), 0.0)
    core.detach(1.0)
    core.attach(conn(), 2.0)  # no Will this time
    assert [e for e in core.detach(3.0) if isinstance(e, PublishWill)] == []


def test_v5_disconnect_with_will_message_publishes_it() -> None:
    core = SessionCore("c")
    core.attach(conn(level=5, will=WILL), 0.0)
    core.handle(Disconnect(ReasonCode.DISCONNECT_WITH_WILL_MESSAGE), 1.0)
    assert any(isinstance(e, PublishWill) for e in core.detach(2.0))


def test_take_over_closes_old_connection_publishes_will_and_resumes() -> None:
    core = subscribed_core()
    core.will = WILL
    core.deliver(AppMessage("t/1", b"x", 1), 1, 0.0)
    effects = core.take_over(1.0)
    assert effects[0] == Close(ReasonCode.SESSION_TAKEN_OVER, effects[0].reason)  # type: ignore[union-attr]
    assert "[MQTT-3.1.4-2]" in effects[0].reason  # type: ignore[union-attr]
    assert any(isinstance(e, PublishWill) for e in effects)
    assert core.state is SessionState.TAKEN_OVER and not core.attached
    packets = sent(core.attach(conn(), 1.0))
    assert packets == [ConnAck(True, 0), Publish("t/1", b"x", 1, dup=True, packet_id=1)]


def test_take_over_of_a_clean_session_starts_fresh() -> None:
    core = subscribed_core(clean=True)
    core.take_over(1.0)
    effects = core.attach(conn(clean=False), 1.0)
    assert RequestUnsubscribe(None, ("t/#",)) in effects
    assert sent(effects) == [ConnAck(False, 0)]
    assert core.subscriptions == {}


def test_v5_take_over_sends_disconnect_0x8e_first() -> None:
    core = SessionCore("c")
    core.attach(conn(level=5), 0.0)
    effects = core.take_over(1.0)
    [disconnect] = effects[0].packets  # type: ignore[union-attr]
    assert isinstance(disconnect, Disconnect)
    assert disconnect.reason_code == ReasonCode.SESSION_TAKEN_OVER
    assert isinstance(effects[1], Close)


@pytest.mark.parametrize(("method", "state_setup"), [
    ("detach", "new"), ("take_over", "new"), ("expire", "connected"), ("detach", "disconnected"),
    ("take_over", "disconnected"), ("attach", "connected"),
])
def test_illegal_lifecycle_calls_raise(method: str, state_setup: str) -> None:
    core = SessionCore("c")
    if state_setup != "new":
        core.attach(conn(), 0.0)
    if state_setup == "disconnected":
        core.detach(1.0)
    with pytest.raises(LifecycleError):
        if method == "attach":
            core.attach(conn(), 2.0)
        else:
            getattr(core, method)(2.0)


def test_handle_while_detached_is_a_caller_bug() -> None:
    core = SessionCore("c")
    with pytest.raises(LifecycleError):
        core.handle(PingReq(), 0.0)


def test_keepalive_is_the_transports_no_timer_and_no_close_for_silence() -> None:
    # The transport enforces [MQTT-3.1.2-24]; the core only records the keepalive.
    core = SessionCore("c")
    effects = core.attach(conn(keepalive=10), 100.0)
    assert core.keepalive == 10
    assert not any(isinstance(e, StartTimer | CancelTimer) for e in effects)
    assert core.handle(PingReq(), 1e9) == [Send((PingResp(),))]  # any silence: still attached
    assert core.attached
    assert not any(isinstance(e, StartTimer | CancelTimer) for e in core.detach(1e9 + 1))


def test_stale_and_unknown_timers() -> None:
    core = SessionCore("c")
    core.attach(conn(keepalive=0), 0.0)
    assert core.on_timer(EXPIRY_TIMER, 1e9) == []
    with pytest.raises(ValueError):
        core.on_timer("keepalive", 0.0)


def test_restore_makes_a_new_core_a_disconnected_persistent_session() -> None:
    core = SessionCore("c")
    assert core.restore([Subscription("t/#", 1), Subscription("u", 2)], 0.0) == []
    assert core.state is SessionState.DISCONNECTED
    assert dict(core.subscriptions) == {"t/#": Subscription("t/#", 1), "u": Subscription("u", 2)}
    message = AppMessage("t/1", b"x", 2)
    assert core.deliver(message, 1, 1.0) == []  # queued for the offline client at QoS 1
    effects = core.attach(conn(clean=False), 2.0)
    assert sent(effects)[0] == ConnAck(True, 0)  # [MQTT-3.2.2-2]: the session resumes
    assert isinstance(sent(effects)[1], Publish) and sent(effects)[1].qos == 1


def test_restore_then_clean_connect_unsubscribes_the_restored_filters() -> None:
    core = SessionCore("c")
    core.restore([Subscription("t/#", 1)], 0.0)
    effects = core.attach(conn(clean=True), 1.0)
    assert RequestUnsubscribe(None, ("t/#",)) in effects
    assert sent(effects)[0] == ConnAck(False, 0)


def test_restore_arms_the_expiry_timer_and_only_a_new_core_restores() -> None:
    core = SessionCore("c", SessionConfig(session_expiry=60.0))
    assert core.restore([], 0.0) == [StartTimer(EXPIRY_TIMER, 60.0)]
    with pytest.raises(LifecycleError):
        core.restore([], 1.0)


def test_persistent_session_expiry() -> None:
    core = subscribed_core(session_expiry=3600.0)
    assert StartTimer(EXPIRY_TIMER, 3600.0) in core.detach(10.0)
    message = AppMessage("t/1", b"x", 1)
    core.deliver(message, 1, 11.0)
    effects = core.on_timer(EXPIRY_TIMER, 3610.0)
    assert effects == [Dropped(message, 1, DropReason.SESSION_ENDED),
                       RequestUnsubscribe(None, ("t/#",)), EndSession("persistent session expired")]
    assert core.state is SessionState.ENDED


def test_reattach_cancels_the_expiry_timer_and_a_late_firing_is_ignored() -> None:
    core = subscribed_core(session_expiry=60.0)
    core.detach(10.0)
    assert CancelTimer(EXPIRY_TIMER) in core.attach(conn(), 20.0)
    assert core.on_timer(EXPIRY_TIMER, 70.0) == []
    assert core.state is SessionState.CONNECTED


def test_expire_by_administrator() -> None:
    core = subscribed_core()
    core.detach(1.0)
    assert core.expire(2.0)[-1] == EndSession("persistent session expired")


def test_pending_subscribe_answered_after_disconnect_counts_without_suback() -> None:
    core = SessionCore("c")
    core.attach(conn(), 0.0)
    core.handle(Subscribe(1, (Subscription("a", 1),)), 0.0)
    core.detach(1.0)
    assert core.subscribed(1, None, (), 2.0) == []
    assert list(core.subscriptions) == ["a"]


def test_pending_subscribe_of_a_discarded_session_is_removed_and_ignored() -> None:
    core = SessionCore("c")
    core.attach(conn(), 0.0)
    core.handle(Subscribe(1, (Subscription("a", 1),)), 0.0)
    core.detach(1.0)
    effects = core.attach(conn(clean=True), 2.0)
    assert RequestUnsubscribe(None, ("a",)) in effects  # the registry will have added it
    core.handle(Subscribe(1, (Subscription("b", 1),)), 2.0)  # same id, new connection: fine
    assert core.subscribed(1, None, (), 3.0) == []  # the stale answer comes first
    assert core.subscribed(1, None, (), 3.0) == [Send((SubAck(1, (1,)),))]
    assert list(core.subscriptions) == ["b"]


def test_ack_after_reconnect_completes_a_flow_of_the_previous_connection() -> None:
    core = subscribed_core()
    core.deliver(AppMessage("t/1", b"x", 1), 1, 0.0)
    core.detach(1.0)
    core.attach(conn(), 2.0)
    assert core.handle(PubAck(1), 3.0) == []
    assert core.inflight == {}
