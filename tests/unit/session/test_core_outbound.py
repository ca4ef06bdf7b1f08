"""SessionCore.deliver and the acknowledgements of what it sent."""

from __future__ import annotations

import pytest

from actorbroker.codec import (
    Connect,
    Disconnect,
    Properties,
    PubAck,
    PubComp,
    PubRec,
    PubRel,
    Publish,
)
from actorbroker.session import (
    AppMessage,
    Delivery,
    Dropped,
    DropReason,
    Effect,
    OutboundState,
    QueuePolicy,
    Send,
    SessionConfig,
    SessionCore,
)


def attached(clean: bool = False, **queue: int | bool) -> SessionCore:
    core = SessionCore("sub", SessionConfig(queue=QueuePolicy(**queue)))  # type: ignore[arg-type]
    core.attach(Connect("MQTT", 4, "sub", clean, 0), 0.0)
    return core


def publishes(effects: list[Effect]) -> list[Publish]:
    return [p for e in effects if isinstance(e, Send) for p in e.packets if isinstance(p, Publish)]


# (message qos, subscription qos, delivered qos)  section 3.8.4
DOWNGRADE = [(m, s, min(m, s)) for m in (0, 1, 2) for s in (0, 1, 2)]


@pytest.mark.parametrize(("message_qos", "sub_qos", "out_qos"), DOWNGRADE)
def test_delivery_qos_is_the_lower_of_message_and_subscription(
    message_qos: int, sub_qos: int, out_qos: int
) -> None:
    core = attached()
    [publish] = publishes(core.deliver(AppMessage("t", b"p", message_qos, retain=True), sub_qos, 0.0))
    assert publish == Publish("t", b"p", out_qos, False, False, 1 if out_qos else None)


@pytest.mark.parametrize("retain", [False, True])
def test_retain_flag_is_0_on_live_forwarding_and_1_for_a_new_subscription(retain: bool) -> None:
    # [MQTT-3.3.1-9] / [MQTT-3.3.1-8]
    core = attached()
    [publish] = publishes(core.deliver(AppMessage("t", b"", 1, retain=True), 1, 0.0, retain=retain))
    assert publish.retain is retain


def test_window_limits_inflight_and_acks_drain_the_queue_in_order() -> None:
    core = attached(max_inflight=2)
    effects = [core.deliver(AppMessage(f"t/{n}", b"", 1), 1, 0.0) for n in range(5)]
    assert [len(publishes(e)) for e in effects] == [1, 1, 0, 0, 0]
    assert len(core.inflight) == 2 and [d.message.topic for d in core.queued] == ["t/2", "t/3", "t/4"]
    assert publishes(core.handle(PubAck(2), 1.0)) == [Publish("t/2", b"", 1, packet_id=3)]
    assert publishes(core.handle(PubAck(1), 1.0)) == [Publish("t/3", b"", 1, packet_id=4)]
    assert list(core.inflight) == [3, 4]


def test_qos0_is_sent_at_once_while_connected_even_with_the_window_full() -> None:
    core = attached(max_inflight=1)
    core.deliver(AppMessage("a", b"", 1), 1, 0.0)
    assert publishes(core.deliver(AppMessage("b", b"", 0), 0, 0.0)) == [Publish("b", b"")]


def test_queue_full_while_connected_drops_the_new_message() -> None:
    core = attached(max_inflight=1, max_queued_messages=1)
    first, second, third = (AppMessage(f"t/{n}", b"", 2) for n in range(3))
    core.deliver(first, 2, 0.0)
    assert core.deliver(second, 2, 0.0) == []
    assert core.deliver(third, 1, 0.0) == [Dropped(third, 1, DropReason.QUEUE_FULL)]
    assert [d.message for d in core.queued] == [second]


def test_byte_limit() -> None:
    core = attached(max_inflight=1, max_queued_bytes=5)
    core.deliver(AppMessage("t", b"123", 1), 1, 0.0)
    assert core.deliver(AppMessage("t", b"123", 1), 1, 0.0) == []
    big = AppMessage("t", b"123", 1)
    assert core.deliver(big, 1, 0.0) == [Dropped(big, 1, DropReason.QUEUE_FULL)]
    assert core.queued_bytes == 3


def test_qos2_outbound_flow() -> None:
    core = attached()
    core.deliver(AppMessage("t", b"", 2), 2, 0.0)
    assert core.inflight[1][1] is OutboundState.AWAIT_PUBREC
    assert core.handle(PubRec(1), 0.0) == [Send((PubRel(1),))]
    assert core.inflight[1][1] is OutboundState.AWAIT_PUBCOMP
    assert core.handle(PubRec(1), 0.0) == [Send((PubRel(1),))]  # duplicate PUBREC tolerated
    assert core.handle(PubComp(1), 0.0) == []
    assert core.inflight == {}


@pytest.mark.parametrize("ack", [PubAck(42), PubComp(42)])
def test_acks_for_unknown_ids_are_tolerated(ack: PubAck | PubComp) -> None:
    assert attached().handle(ack, 0.0) == []


def test_unknown_pubrec_gets_a_pubrel() -> None:
    assert attached().handle(PubRec(42), 0.0) == [Send((PubRel(42),))]


def test_packet_ids_are_unique_among_inflight_and_not_reused_at_once() -> None:
    core = attached(max_inflight=3)
    for n in range(3):
        core.deliver(AppMessage(f"t/{n}", b"", 1), 1, 0.0)
    core.handle(PubAck(2), 0.0)
    [publish] = publishes(core.deliver(AppMessage("t/x", b"", 1), 1, 0.0))
    assert publish.packet_id == 4
    assert sorted(core.inflight) == [1, 3, 4]


def test_delivery_while_closing_is_queued_not_sent() -> None:
    core = attached()
    core.handle(Disconnect(), 0.0)  # the connection is about to go
    message = AppMessage("t", b"", 1)
    assert core.deliver(message, 1, 0.0) == []
    assert core.queued == (Delivery(message, 1),)
    q0 = AppMessage("t", b"", 0)
    assert core.deliver(q0, 0, 0.0) == [Dropped(q0, 0, DropReason.OFFLINE_QOS0)]


def test_expired_messages_are_dropped_not_sent() -> None:
    core = attached(max_inflight=1)
    expiring = Properties(message_expiry_interval=10)
    old = AppMessage("t", b"", 1, properties=expiring, received_at=0.0)
    assert core.deliver(old, 1, 10.0) == [Dropped(old, 1, DropReason.EXPIRED)]
    core.deliver(AppMessage("t/blocker", b"", 1), 1, 0.0)
    queued = AppMessage("t/q", b"", 1, properties=expiring, received_at=5.0)
    core.deliver(queued, 1, 6.0)
    assert core.handle(PubAck(1), 20.0) == [Dropped(queued, 1, DropReason.EXPIRED)]


def test_message_expiry_is_lowered_when_sent_late() -> None:
    core = attached(max_inflight=1)
    core.deliver(AppMessage("t/blocker", b"", 1), 1, 0.0)
    message = AppMessage("t", b"", 1, properties=Properties(message_expiry_interval=60), received_at=0.0)
    core.deliver(message, 1, 1.0)
    [publish] = publishes(core.handle(PubAck(1), 25.0))
    assert publish.properties.message_expiry_interval == 35
