"""The PUBACK hold of a session with storage on (actors/sessions/journal/log.py, hold.py).

Driven with the real LogJournal, HoldQueue and Held and a real SessionCore;
the stand-ins are the storage actor (it only records the ``Append`` it is
told; each test answers ``Durable``/``NotDurable`` itself, in the order it
wants) and a session actor reduced to the few methods the journal calls
(``run_effects`` goes through ``intercept`` as ``SessionActor._run`` does)
plus what it does with the journal's answers (what ``intercept`` lets
through and the ``Release``s of ``on_reply`` are recorded as carried out).
No loop and no thread.
"""

from __future__ import annotations

from typing import Any

import pytest

from actorbroker.actors.sessions.journal.hold import Release
from actorbroker.actors.sessions.journal.log import LogJournal
from actorbroker.actors.sessions.journal.settings import DurabilitySettings
from actorbroker.actors.storage.requests import Append, Durable, NotDurable
from actorbroker.codec import (Connect, Packet, Properties, PubAck, PubRec, Publish, ReasonCode,
                               Subscribe, Subscription)
from actorbroker.metrics import BrokerMetrics
from actorbroker.persistence.records import PublishAccepted
from actorbroker.session import Close, Effect, Route, Send, SessionCore

NEVER = 0xFFFFFFFF


class Storage:
    """The storage actor: keeps every Append (no answer of its own)."""

    def __init__(self) -> None:
        self.appends: list[Append] = []

    def tell(self, message: Any) -> None:
        assert isinstance(message, Append)
        self.appends.append(message)


class Node:
    def __init__(self) -> None:
        storage = Storage()
        self.names = type("Names", (), {"storage": lambda _self: storage})()
        self.metrics = BrokerMetrics()


class Actor:
    """What LogJournal and its HoldQueue call on a session actor, and nothing else."""

    def __init__(self, level: int, *, clean: bool = True) -> None:
        self.client_id = "pub"
        self.core = SessionCore("pub")
        self.node = Node()
        self.connection = object()
        self.actor_ref = object()
        self.carried: list[Effect] = []  # what the actor carried out, in order
        self.durability = LogJournal(self, self.node, DurabilitySettings(hibernate=False))
        properties = Properties(session_expiry_interval=0 if clean else NEVER) if level == 5 \
            else Properties()
        connect = Connect("MQTT", level, "pub", clean, 0, properties=properties)
        effects = self.core.attach(connect, 0.0)
        self.durability.attached(connect, self.core, "peer", 0.0)
        self.run(effects)

    # -- as SessionActor ----------------------------------------------------------

    def run(self, effects: list[Effect]) -> None:
        """SessionActor._run: held by the durability if need be, else carried out."""
        self.carried += self.durability.intercept(effects, self.connection, None)

    def read(self, *packets: Packet) -> None:
        """SessionActor._inbound: one read of the client."""
        self.durability.read(packets)
        self.run(self.core.handle_all(packets, 1.0))

    def run_effects(self, effects: list[Effect], credit: object = None) -> None:
        self.run(effects)

    def carry(self, releases: list[Release]) -> None:
        """SessionActor._carry_releases: what the journal let go, carried out past it."""
        for release in releases:
            self.carried += release.effects

    def renew_epoch(self) -> None:
        pass

    def now(self) -> float:
        return 1.0

    def call_later(self, delay: float, message: Any) -> None:
        pass

    def may_hibernate(self) -> bool:
        return False

    # -- for the tests ----------------------------------------------------------------

    @property
    def appends(self) -> list[Append]:
        return self.node.names.storage().appends

    def answer(self, append: Append, *, synced: bool = True) -> None:
        offsets = tuple(range(100 * append.token, 100 * append.token + len(append.records)))
        self.carry(self.durability.on_reply(Durable(append.token, offsets, synced),
                                            self.connection))

    def refuse(self, append: Append, code: int = 0x97) -> None:
        self.carry(self.durability.on_reply(NotDurable(append.token, code, "disk full"),
                                            self.connection))

    def packets(self) -> list[Packet]:
        """What reaches the client, as SessionActor.carry_out writes it: the packets of
        each Send, and a Route's PUBACK/PUBREC once the message is handed on."""
        out: list[Packet] = []
        for effect in self.carried:
            if isinstance(effect, Send):
                out += effect.packets
            elif isinstance(effect, Route) and effect.ack is not None:
                out.append(effect.ack)
        return out

    def routes(self) -> list[Route]:
        return [e for e in self.carried if isinstance(e, Route)]


def publish(payload: bytes, qos: int, packet_id: int) -> Publish:
    return Publish("t", payload, qos, packet_id=packet_id)


def connected(level: int = 4) -> Actor:
    actor = Actor(level)
    if actor.appends:  # the session events of the CONNECT (not held: a clean session)
        actor.carried.clear()
    return actor


def test_puback_waits_for_the_synced_durable_and_routes_carry_the_offset() -> None:
    actor = connected()
    actor.read(publish(b"a", 1, 1))
    assert actor.carried == [] and actor.appends[-1].early
    [record] = actor.appends[-1].records
    assert isinstance(record, PublishAccepted) and record.payload == b"a"
    actor.answer(actor.appends[-1])
    [route] = actor.routes()
    assert route.message.log_offset == 100 * actor.appends[-1].token
    assert route.ack == PubAck(1) and actor.packets() == [PubAck(1)]


def test_qos1_is_routed_once_written_and_its_puback_waits_for_the_sync() -> None:
    actor = connected()
    actor.read(publish(b"a", 1, 1))
    append = actor.appends[-1]
    actor.answer(append, synced=False)
    [route] = actor.routes()
    assert route.message.log_offset == 100 * append.token and route.ack is None
    assert actor.packets() == []  # PUBACK only once the record is synced
    actor.answer(append)
    assert actor.packets() == [PubAck(1)] and len(actor.routes()) == 1  # not routed twice


def test_qos2_is_not_routed_before_the_sync() -> None:
    actor = connected()
    actor.read(publish(b"b", 2, 1))
    append = actor.appends[-1]
    assert not append.early
    actor.answer(append, synced=False)  # even if told: the entry is not early
    assert actor.carried == []
    actor.answer(append)
    assert [r.message.payload for r in actor.routes()] == [b"b"]
    assert actor.packets() == [PubRec(1)]


def test_entries_are_released_in_order_whatever_order_the_answers_come_in() -> None:
    actor = connected()
    actor.read(publish(b"1", 2, 1))
    actor.read(publish(b"2", 2, 2))
    first, second = actor.appends[-2:]
    actor.answer(second)
    assert actor.carried == []  # the second waits for the first
    actor.answer(first)
    assert [r.message.payload for r in actor.routes()] == [b"1", b"2"]
    assert actor.packets() == [PubRec(1), PubRec(2)]


def test_an_early_route_waits_behind_an_entry_that_routes_must_not_overtake() -> None:
    actor = connected()
    actor.read(publish(b"q2", 2, 1))
    actor.read(publish(b"q1", 1, 2))
    held_qos2, early_qos1 = actor.appends[-2:]
    actor.answer(early_qos1, synced=False)
    assert actor.routes() == []  # the QoS 2 message before it is not routed yet
    actor.answer(held_qos2)
    assert [r.message.payload for r in actor.routes()] == [b"q2", b"q1"]
    assert actor.packets() == [PubRec(1)]  # the QoS 1 PUBACK still waits for its sync
    actor.answer(early_qos1)
    assert actor.packets() == [PubRec(1), PubAck(2)]


def test_later_effects_queue_behind_held_ones() -> None:
    actor = connected()
    actor.read(publish(b"a", 1, 1))
    later = [Send((Publish("out", b"z", 0),))]  # a QoS 0 delivery to this client
    actor.run(later)
    assert actor.carried == []
    actor.answer(actor.appends[-1])
    assert actor.packets() == [PubAck(1), Publish("out", b"z", 0)]


def test_a_refused_publish_closes_an_mqtt3_connection_without_puback() -> None:
    actor = connected(4)
    actor.read(publish(b"a", 1, 1))
    actor.refuse(actor.appends[-1])
    assert actor.routes() == [] and actor.packets() == []
    [close] = [e for e in actor.carried if isinstance(e, Close)]
    assert close.reason_code == ReasonCode.QUOTA_EXCEEDED


def test_a_refused_qos1_routed_early_is_refused_all_the_same() -> None:
    actor = connected(5)
    actor.read(publish(b"a", 1, 1))
    append = actor.appends[-1]
    actor.answer(append, synced=False)
    assert len(actor.routes()) == 1
    actor.refuse(append, 0x80)
    [refusal] = actor.packets()
    assert isinstance(refusal, PubAck) and refusal.reason_code == 0x80


@pytest.mark.parametrize("qos, ack", [(1, PubAck), (2, PubRec)])
def test_a_refused_publish_gets_the_reason_code_at_mqtt5(qos: int, ack: type) -> None:
    actor = connected(5)
    actor.read(publish(b"a", qos, 7))
    actor.refuse(actor.appends[-1], 0x97)
    assert actor.routes() == []
    [refusal] = actor.packets()
    assert type(refusal) is ack and refusal.packet_id == 7 and refusal.reason_code == 0x97
    assert "not stored" in (refusal.properties.reason_string or "")
    assert not any(isinstance(e, Close) for e in actor.carried)


def test_a_refused_qos2_publish_is_routed_when_the_client_sends_it_again() -> None:
    actor = connected(5)
    actor.read(publish(b"a", 2, 7))
    actor.refuse(actor.appends[-1])
    actor.read(publish(b"a", 2, 7))  # not a duplicate: the first was never stored
    actor.answer(actor.appends[-1])
    assert [r.message.payload for r in actor.routes()] == [b"a"]
    assert actor.packets()[-1] == PubRec(7)


def test_a_durable_suback_waits_for_its_subscribed_record() -> None:
    actor = Actor(4, clean=False)
    actor.answer(actor.appends[-1])  # the SessionConnected of a durable session
    actor.carried.clear()
    actor.read(Subscribe(3, (Subscription("t", 1),)))
    actor.durability.subscribed(3, None)  # the registry granted it
    actor.run(actor.core.subscribed(3, None, (), 1.0))
    assert actor.packets() == []
    actor.answer(actor.appends[-1])
    assert [type(p).__name__ for p in actor.packets()] == ["SubAck"]
