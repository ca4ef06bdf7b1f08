"""SessionCore.unsent: a PUBLISH the actor never wrote is resent as a first send, DUP=0.

[MQTT-3.3.1-1]: DUP=0 means the first occasion the sender attempted to send
the PUBLISH; DUP=1 only when it may have been received before. The actor
reports the first PUBLISHes its connection never got (held for
the commit log when the client's DISCONNECT closed the connection).
"""

from __future__ import annotations

from actorbroker.codec import Connect, Properties, PubAck, PubRec, PubRel, Publish
from actorbroker.session import (AppMessage, Effect, QueuePolicy, Send, SessionConfig,
                                 SessionCore)


def core_with(window: int = 2, level: int = 4) -> SessionCore:
    core = SessionCore("sub", SessionConfig(queue=QueuePolicy(max_inflight=window)))
    core.attach(connect(level), 0.0)
    return core


def connect(level: int, **props: int) -> Connect:
    """A CONNECT resuming the session (MQTT 5: it outlives the connection)."""
    if level == 5:
        props.setdefault("session_expiry_interval", 60)
    return Connect("MQTT", level, "sub", False, 0, properties=Properties(**props))


def publishes(effects: list[Effect]) -> list[Publish]:
    return [p for e in effects if isinstance(e, Send) for p in e.packets if isinstance(p, Publish)]


def reconnect(core: SessionCore, level: int = 4, **props: int) -> list[Publish]:
    core.detach(1.0)
    return publishes(core.attach(connect(level, **props), 2.0))


def deliver(core: SessionCore, *names: str, qos: int = 1) -> list[Publish]:
    return [p for n in names for p in publishes(core.deliver(AppMessage(n, b"x", qos), qos, 0.0))]


def test_a_flight_never_written_is_resent_with_dup_0_and_a_written_one_with_dup_1() -> None:
    core = core_with(window=3)
    deliver(core, "a", "b", "c")
    assert core.unsent([2, 3]) == [2, 3]
    assert [(p.topic, p.packet_id, p.dup) for p in reconnect(core)] == [
        ("a", 1, True), ("b", 2, False), ("c", 3, False)]  # original order, original ids


def test_once_resent_a_flight_counts_as_written() -> None:
    core = core_with()
    deliver(core, "a")
    core.unsent([1])
    assert [p.dup for p in reconnect(core)] == [False]
    assert [p.dup for p in reconnect(core)] == [True]  # the DUP=0 resend may have arrived


def test_the_window_refilled_by_acks_then_disconnect_issue_15() -> None:
    core = core_with(window=2)
    deliver(core, "a", "b", "c", "d")  # a, b in flight; c, d queued
    refill = [p for ack in (PubAck(1), PubAck(2)) for p in publishes(core.handle(ack, 0.0))]
    assert [(p.topic, p.dup) for p in refill] == [("c", False), ("d", False)]
    # The connection closed before the actor could write them: it reports them.
    assert core.unsent(p.packet_id for p in refill if p.packet_id is not None) == [3, 4]
    assert [(p.topic, p.packet_id, p.dup) for p in reconnect(core)] == [
        ("c", 3, False), ("d", 4, False)]


def test_unknown_ids_and_the_pubrel_stage_are_not_marked() -> None:
    core = core_with()
    deliver(core, "a", qos=2)
    assert publishes(core.handle(PubRec(1), 0.0)) == []
    assert core.unsent([1, 7]) == []
    core.detach(1.0)
    effects = core.attach(Connect("MQTT", 4, "sub", False, 0), 2.0)
    assert [p for e in effects if isinstance(e, Send) for p in e.packets][1:] == [PubRel(1)]


def test_a_resend_the_smaller_window_defers_stays_a_first_send_until_it_goes() -> None:
    core = core_with(window=3, level=5)
    deliver(core, "a", "b", "c")
    core.unsent([1, 2, 3])
    # MQTT 5, Receive Maximum 1: one resend now, the others as acks free the window.
    assert [(p.packet_id, p.dup) for p in reconnect(core, 5, receive_maximum=1)] == [(1, False)]
    assert [(p.packet_id, p.dup) for p in publishes(core.handle(PubAck(1), 0.0))] == [(2, False)]
    # Connection lost again: 2 went out (DUP=1 from now on), 3 never did (still DUP=0).
    assert [(p.packet_id, p.dup) for p in reconnect(core, 5)] == [(2, True), (3, False)]
