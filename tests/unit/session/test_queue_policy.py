"""OutboundQueue and Outbox: window, FIFO, limits, drop policy (Mosquitto's: drop the new one)."""

from __future__ import annotations

import pytest

from actorbroker.codec import PubAck, PubComp, PubRec, PubRel, Publish
from actorbroker.session import AppMessage, Delivery, DropReason, QueuePolicy
from actorbroker.session.outbox import Outbox
from actorbroker.session.queue import HIGH_WATER, OutboundQueue


def d(n: int, qos: int = 1, size: int = 1) -> Delivery:
    return Delivery(AppMessage(f"t/{n}", bytes(size), qos), qos)


def test_defaults_are_mosquittos() -> None:
    policy = QueuePolicy()
    assert (policy.max_inflight, policy.max_queued_messages, policy.max_queued_bytes,
            policy.queue_qos0) == (20, 1000, 0, False)


# (policy, deliveries offered offline, expected reasons per offer)
OFFER_CASES = [
    ("message limit drops the new one", QueuePolicy(max_queued_messages=2),
     [d(1), d(2), d(3)], [None, None, DropReason.QUEUE_FULL]),
    ("byte limit", QueuePolicy(max_queued_bytes=10), [d(1, size=6), d(2, size=5), d(3, size=4)],
     [None, DropReason.QUEUE_FULL, None]),
    ("one message above the byte limit", QueuePolicy(max_queued_bytes=3), [d(1, size=4)],
     [DropReason.QUEUE_FULL]),
    ("zero means unlimited", QueuePolicy(max_queued_messages=0), [d(n) for n in range(1500)],
     [None] * 1500),
    ("qos0 offline dropped", QueuePolicy(), [d(1, qos=0)], [DropReason.OFFLINE_QOS0]),
    ("qos0 offline queued when asked", QueuePolicy(queue_qos0=True, max_queued_messages=1),
     [d(1, qos=0), d(2, qos=0)], [None, DropReason.QUEUE_FULL]),
]


@pytest.mark.parametrize(("policy", "offers", "reasons"), [c[1:] for c in OFFER_CASES],
                         ids=[c[0] for c in OFFER_CASES])
def test_offer(policy: QueuePolicy, offers: list[Delivery], reasons: list[DropReason | None]) -> None:
    queue = OutboundQueue(policy)
    assert [queue.offer(x, online=False) for x in offers] == reasons
    kept = [x for x, r in zip(offers, reasons) if r is None]
    assert list(queue) == kept
    assert queue.bytes == sum(x.message.size for x in kept)


def test_pop_is_fifo_and_tracks_bytes() -> None:
    queue = OutboundQueue()
    for n in range(3):
        queue.offer(d(n, size=n + 1), online=True)
    assert queue.pop() == d(0, size=1)
    assert queue.bytes == 5 and len(queue) == 2
    assert queue.clear() == [d(1, size=2), d(2, size=3)]
    assert queue.bytes == 0 and not queue


@pytest.mark.parametrize(("policy", "mark"), [
    (QueuePolicy(max_queued_messages=10), 5),
    (QueuePolicy(max_queued_messages=1000), HIGH_WATER),
    (QueuePolicy(max_queued_messages=0), HIGH_WATER),
])
def test_pressed_from_half_the_message_limit_and_elastic_admits_beyond_it(
        policy: QueuePolicy, mark: int) -> None:
    queue = OutboundQueue(policy)
    pressed = []
    for n in range(mark + 1):
        pressed.append(queue.pressed)
        assert queue.offer(d(n), online=True) is None
    assert pressed == [False] * mark + [True]
    if policy.max_queued_messages:
        while len(queue) < policy.max_queued_messages:
            queue.offer(d(0), online=True)
        assert queue.offer(d(1), online=True) is DropReason.QUEUE_FULL
        queue.elastic = True  # the session holds this delivery's publisher back
        assert queue.offer(d(1), online=True) is None
        assert len(queue) == policy.max_queued_messages + 1
    popped = queue.popped
    while queue.pressed:
        queue.pop()
    assert len(queue) == mark - 1 and queue.popped > popped


def test_pressed_from_half_the_byte_limit() -> None:
    queue = OutboundQueue(QueuePolicy(max_queued_messages=0, max_queued_bytes=100))
    queue.offer(d(1, size=49), online=True)
    assert not queue.pressed
    queue.offer(d(2, size=1), online=True)
    assert queue.pressed


@pytest.mark.parametrize("kwargs", [
    {"max_inflight": 0}, {"max_inflight": 65536}, {"max_queued_messages": -1}, {"max_queued_bytes": -1},
])
def test_policy_rejects_bad_limits(kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        QueuePolicy(**kwargs)  # type: ignore[arg-type]


def test_outbox_window_then_queue_then_drain_in_order() -> None:
    box = Outbox(QueuePolicy(max_inflight=2))
    sent = [box.deliver(d(n), 0.0, online=True)[0] for n in range(4)]
    assert [[p.packet_id for p in s if isinstance(p, Publish)] for s in sent] == [[1], [2], [], []]
    assert [x.message.topic for x in box.queue] == ["t/2", "t/3"]
    packets, dropped = box.ack(PubAck(1), 0.0, level=4)
    assert dropped == [] and [(p.topic, p.packet_id) for p in packets if isinstance(p, Publish)] == [("t/2", 3)]


def test_outbox_qos0_online_bypasses_the_window_but_not_offline() -> None:
    box = Outbox(QueuePolicy(max_inflight=1))
    box.deliver(d(1), 0.0, online=True)
    packets, _ = box.deliver(d(2, qos=0), 0.0, online=True)
    assert packets == [Publish("t/2", b"\x00", 0)]
    packets, dropped = box.deliver(d(3, qos=0), 0.0, online=False)
    assert packets == [] and [x.reason for x in dropped] == [DropReason.OFFLINE_QOS0]


def test_outbox_qos2_flow_and_unknown_acks() -> None:
    box = Outbox(QueuePolicy())
    box.deliver(d(1, qos=2), 0.0, online=True)
    assert box.ack(PubRec(1), 0.0, level=4) == ([PubRel(1)], [])
    assert box.ack(PubRec(1), 0.0, level=4) == ([PubRel(1)], [])  # duplicate PUBREC: PUBREL again
    assert box.ack(PubComp(1), 0.0, level=4) == ([], [])
    assert len(box.inflight) == 0
    assert box.ack(PubAck(9), 0.0, level=4) == ([], [])
    assert box.ack(PubComp(9), 0.0, level=4) == ([], [])
    assert box.ack(PubRec(9), 0.0, level=4) == ([PubRel(9)], [])
    assert box.ack(PubRec(9), 0.0, level=5) == ([PubRel(9, 0x92)], [])


def test_outbox_v5_pubrec_error_ends_the_flow_without_pubrel() -> None:
    box = Outbox(QueuePolicy(max_inflight=1))
    box.deliver(d(1, qos=2), 0.0, online=True)
    box.deliver(d(2, qos=2), 0.0, online=True)
    packets, _ = box.ack(PubRec(1, 0x80), 0.0, level=5)
    assert [type(p) for p in packets] == [Publish]  # no PUBREL; the window slot went to t/2
    assert list(box.inflight) == [2]


def test_outbox_discard_reports_unacknowledged_only() -> None:
    box = Outbox(QueuePolicy(max_inflight=3))
    for n, qos in enumerate([1, 2, 2]):
        box.deliver(d(n, qos=qos), 0.0, online=True)
    box.ack(PubRec(3), 0.0, level=4)  # t/2 reached the client
    box.deliver(d(9), 0.0, online=False)
    dropped = box.discard()
    assert [(x.message.topic, x.reason) for x in dropped] == [
        ("t/0", DropReason.SESSION_ENDED), ("t/1", DropReason.SESSION_ENDED),
        ("t/9", DropReason.SESSION_ENDED),
    ]
    assert len(box.inflight) == 0 and len(box.queue) == 0


def test_resend_order_publishes_by_send_and_pubrels_by_pubrec() -> None:
    box = Outbox(QueuePolicy())
    for n in range(4):
        box.deliver(d(n, qos=2), 0.0, online=True)
    box.ack(PubRec(3), 0.0, level=4)
    box.ack(PubRec(1), 0.0, level=4)
    packets, _ = box.resume(0.0)
    shown = [("PUBREL", p.packet_id) if isinstance(p, PubRel) else ("PUBLISH", p.packet_id, p.dup)
             for p in packets if isinstance(p, PubRel | Publish)]
    assert shown == [("PUBLISH", 2, True), ("PUBLISH", 4, True), ("PUBREL", 3), ("PUBREL", 1)]
