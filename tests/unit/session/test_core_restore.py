"""Putting a durable session's flows back into a core after a restart (the commit log kept them).

The next CONNECT resends each PUBLISH in flight under its old packet id with
DUP=1 (DUP=0 for one never written), a PUBREL where the client already sent
PUBREC ([MQTT-4.4.0-1]), and a retried inbound QoS 2 PUBLISH is acknowledged
without being routed twice ([MQTT-4.3.3-9]). The resent packets are compared
byte for byte with the wire form the broker has always written.
"""

from __future__ import annotations

import pytest

from actorbroker.codec import Connect, Packet, PubRec, PubRel, Publish, encode
from actorbroker.session import AppMessage, Effect, Route, Send, SessionConfig, SessionCore
from actorbroker.session.message import Delivery

Flight = tuple[int, Delivery, bool]


def flight(packet_id: int, topic: str, qos: int = 1, *, released: bool = False) -> Flight:
    return packet_id, Delivery(AppMessage(topic, b"x", qos), qos, False), released


def restored(flights: list[Flight], inbound_qos2: tuple[int, ...] = (),
             unsent: frozenset[int] = frozenset()) -> SessionCore:
    core = SessionCore("sub", SessionConfig())
    core.restore([], 0.0)
    core.restore_flows(flights, inbound_qos2, unsent)
    return core


def resumed(core: SessionCore, level: int = 4) -> list[Packet]:
    """What the client's CONNECT with Clean Session 0 gets after the CONNACK."""
    effects = core.attach(Connect("MQTT", level, "sub", False, 0), 1.0)
    return [p for e in effects if isinstance(e, Send) for p in e.packets][1:]


def test_flows_are_resent_in_order_under_their_ids_byte_for_byte() -> None:
    core = restored([flight(4, "a"), flight(9, "b", 2), flight(2, "c", 2, released=True)])
    assert [encode(p, 4) for p in resumed(core)] == [
        bytes.fromhex("3a06000161000478"),  # PUBLISH "a" QoS 1 DUP, id 4, payload "x"
        bytes.fromhex("3c06000162000978"),  # PUBLISH "b" QoS 2 DUP, id 9, payload "x"
        bytes.fromhex("62020002"),          # PUBREL 2
    ]


def test_restored_flows_keep_the_unsent_mark() -> None:
    core = restored([flight(4, "t4"), flight(5, "t5")], unsent=frozenset({5}))
    assert [(p.packet_id, p.dup) for p in resumed(core) if isinstance(p, Publish)] == [
        (4, True), (5, False)]


def test_a_released_flow_is_never_marked_unsent() -> None:
    core = restored([flight(6, "t", 2, released=True)], unsent=frozenset({6}))
    assert resumed(core) == [PubRel(6)]
    assert core.unsent([6]) == []


def test_restored_ids_stay_taken_for_new_deliveries() -> None:
    core = restored([flight(1, "a"), flight(2, "b")])
    resumed(core)
    effects = core.deliver(AppMessage("c", b"x", 1), 1, 2.0)
    [publish] = [p for e in effects if isinstance(e, Send) for p in e.packets]
    assert isinstance(publish, Publish) and publish.packet_id == 3


def test_a_restored_flow_completes_with_its_acknowledgement() -> None:
    core = restored([flight(4, "a", 2)])
    resumed(core)
    assert core.handle(PubRec(4), 2.0) == [Send((PubRel(4),))]
    assert core.inflight_count == 1


def test_a_retried_inbound_qos2_publish_is_not_routed_twice() -> None:
    core = restored([], inbound_qos2=(7,))
    resumed(core)
    assert core.inbound_qos2 == frozenset({7})
    retry: list[Effect] = core.handle(Publish("t", b"x", 2, dup=True, packet_id=7), 2.0)
    assert retry == [Send((PubRec(7),))]
    fresh = core.handle(Publish("t", b"x", 2, packet_id=8), 2.0)
    assert [type(e) for e in fresh] == [Route]


def test_flows_go_into_a_disconnected_core_only() -> None:
    core = SessionCore("sub", SessionConfig())
    with pytest.raises(ValueError, match="DISCONNECTED core, not NEW"):
        core.restore_flows([flight(1, "a")], ())
    core.attach(Connect("MQTT", 4, "sub", False, 0), 0.0)
    with pytest.raises(ValueError, match="not CONNECTED"):
        core.restore_flows([flight(1, "a")], ())


def test_a_qos0_flight_is_refused() -> None:
    core = SessionCore("sub", SessionConfig())
    core.restore([], 0.0)
    with pytest.raises(ValueError, match="packet id 3: a QoS 0 delivery in flight"):
        core.restore_flows([flight(3, "a", 0)], ())


def test_a_packet_id_twice_is_refused() -> None:
    core = SessionCore("sub", SessionConfig())
    core.restore([], 0.0)
    with pytest.raises(ValueError, match="already in use"):
        core.restore_flows([flight(3, "a"), flight(3, "b")], ())
