"""SessionCore.hold_output / release_output: a congested connection queues instead of dropping."""

from __future__ import annotations

from actorbroker.codec import Connect, PubAck, Publish
from actorbroker.session import (
    AppMessage,
    Dropped,
    DropReason,
    Effect,
    QueuePolicy,
    Send,
    SessionConfig,
    SessionCore,
)


def sent(effects: list[Effect]) -> list[Publish]:
    return [p for e in effects if isinstance(e, Send) for p in e.packets]  # type: ignore[misc]


def attached(**policy: int) -> SessionCore:
    core = SessionCore("c", SessionConfig(queue=QueuePolicy(**policy)))
    core.attach(Connect("MQTT", 4, "c", False, 60), 0.0)
    return core


def test_held_output_queues_qos0_and_qos1_in_order_and_release_sends_them() -> None:
    core = attached(max_inflight=2)
    core.hold_output()
    assert core.output_held
    for i, qos in enumerate([0, 1, 0, 1, 1]):
        assert core.deliver(AppMessage("t", str(i).encode(), qos), qos, 1.0) == []
    assert len(core.queued) == 5
    effects = core.release_output(2.0)
    # The window (2) stops the drain at the third QoS 1; the QoS 0 before it went out.
    assert [(p.payload, p.qos) for p in sent(effects)] == [
        (b"0", 0), (b"1", 1), (b"2", 0), (b"3", 1)]
    assert not core.output_held and len(core.queued) == 1
    first = sent(effects)[1]
    assert sent(core.handle(PubAck(first.packet_id), 3.0))[0].payload == b"4"  # type: ignore[arg-type]


def test_release_with_a_limit_sends_a_chunk_at_a_time() -> None:
    core = attached()
    core.hold_output()
    for i in range(10):
        core.deliver(AppMessage("t", bytes([i]), 0), 0, 1.0)
    assert len(sent(core.release_output(2.0, limit=4))) == 4
    core.hold_output()
    assert core.release_output(2.0, limit=0) == [] and len(core.queued) == 6
    assert len(sent(core.release_output(2.0))) == 6


def test_acks_do_not_drain_while_held() -> None:
    core = attached(max_inflight=1)
    [publish] = sent(core.deliver(AppMessage("t", b"a", 1), 1, 0.0))
    core.deliver(AppMessage("t", b"b", 1), 1, 0.0)  # waits for the window
    core.hold_output()
    assert sent(core.handle(PubAck(publish.packet_id), 1.0)) == []  # type: ignore[arg-type]
    assert [p.payload for p in sent(core.release_output(2.0))] == [b"b"]


def test_a_full_queue_still_drops_and_reports_while_held() -> None:
    core = attached(max_queued_messages=2)
    core.hold_output()
    for i in range(3):
        effects = core.deliver(AppMessage("t", bytes([i]), 0), 0, 1.0)
    assert effects == [Dropped(AppMessage("t", b"\x02", 0), 0, DropReason.QUEUE_FULL)]


def test_a_new_connection_is_not_held() -> None:
    core = attached()
    core.hold_output()
    core.deliver(AppMessage("t", b"q", 1), 1, 0.0)
    core.detach(1.0)
    assert not core.output_held
    effects = core.attach(Connect("MQTT", 4, "c", False, 60), 2.0)
    assert [p.payload for p in sent(effects)[1:]] == [b"q"]
    assert sent(core.deliver(AppMessage("t", b"live", 0), 0, 3.0))[0].payload == b"live"


def test_release_while_offline_sends_nothing() -> None:
    core = attached()
    core.deliver(AppMessage("t", b"x", 1), 1, 0.0)
    core.detach(1.0)
    assert core.release_output(2.0) == []
