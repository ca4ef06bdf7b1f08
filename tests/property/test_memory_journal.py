"""The MemoryJournal passes everything through: the same client script gives the same packets
on a node without storage as on one whose log stores every record at once.

The actor is the broker's own SessionActor run by hand (durable_kit.py). On
the log node every ``Append`` is synced before the next message, so what the
LogJournal held is let go each time: if the MemoryJournal (and the effect
paths the actor binds for it) dropped, reordered or duplicated anything, the
two packet streams would differ. The script takes the paths the journal
touches: a SUBSCRIBE (the SUBACK waits for its records with a log), QoS 0/1/2
publishes with their PUBACK/PUBREC/PUBCOMP, Delivers through the QoS 0 fast
path (``deliver_now``) and through the core's effects, the subscriber's
acknowledgements, an unsubscription and the client's DISCONNECT.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

from durable_kit import Conn, MemoryLog, MemoryRegistry, new_actor, new_node, run_start

from actorbroker.actors.messages import Attach, Deliver, RouteBatchViaRegistry, RouteViaRegistry
from actorbroker.actors.names import Singleton
from actorbroker.actors.node import Node, NodeSettings
from actorbroker.actors.sessions.journal.log import LogJournal
from actorbroker.actors.sessions.journal.memory import MemoryJournal
from actorbroker.actors.sessions.start import StartMode
from actorbroker.codec import (Connect, Disconnect, Packet, PingReq, PubAck, PubComp, PubRec,
                               PubRel, Publish, Subscribe, Subscription, Unsubscribe)
from actorbroker.ports import ConnectionLost, Inbound
from actorbroker.session import AppMessage, SessionConfig

CID = "c"


class Registry(MemoryRegistry):
    """The registry, also taking the batches the session routes through it."""

    def __init__(self, reply: Any) -> None:
        super().__init__(reply)
        self.routed: list[tuple[str, bytes]] = []

    def tell(self, message: Any) -> None:
        if isinstance(message, RouteViaRegistry):
            self.routed += [(message.topic, m.payload) for m in message.messages]
        elif isinstance(message, RouteBatchViaRegistry):
            self.routed += [(topic, m.payload) for topic, batch in message.routes
                            for m in batch]
        else:
            super().tell(message)


def run_script(storage: bool) -> tuple[list[Packet], list[tuple[str, bytes]], type]:
    """The packets the client received, what the session routed, and its journal's type."""
    box: deque[Any] = deque()
    received: list[Packet] = []
    log = MemoryLog(lambda to, message: box.append(message))
    registry = Registry(lambda to, message: box.append(message))
    config = SessionConfig()
    if storage:
        node = new_node(config, log, registry)
    else:
        node = Node(settings=NodeSettings(session=config), durability=None)
        node.names.register(Singleton.REGISTRY, registry)  # type: ignore[arg-type]
    loop = asyncio.new_event_loop()
    try:
        actor = run_start(new_actor(node, CID, loop, lambda: 1.0, start=StartMode.FRESH))
        journal = type(actor._journal)  # noqa: SLF001
        conn = Conn(lambda _conn, packets: received.extend(packets), lambda _conn: None)

        def handle(message: Any) -> None:
            actor.on_receive(message)
            while True:  # the log syncs each append at once; answers come back in order
                log.sync()
                if not box:
                    return
                actor.on_receive(box.popleft())

        def read(*packets: Packet) -> None:
            handle(Inbound(conn.conn_id, packets))

        def deliver(*messages: AppMessage, qos: int = 2) -> None:
            handle(Deliver(messages, qos, actor.epoch))

        handle(Attach(conn, Connect("MQTT", 4, CID, True, 0), CID, False, None))
        read(Subscribe(1, (Subscription("t", 2),)), PingReq())
        read(Publish("p", b"0", 0), Publish("p", b"1", 1, packet_id=2),
             Publish("p", b"2", 2, packet_id=3))
        read(PubRel(3))
        deliver(AppMessage("t", b"a", 0), AppMessage("t", b"b", 0))  # the fast path
        deliver(AppMessage("t", b"c", 1), AppMessage("t", b"d", 2))  # through the core
        deliver(AppMessage("t", b"e", 0), qos=0)
        read(PubAck(1), PubRec(2))
        read(PubComp(2), Unsubscribe(4, ("t",)))
        read(Publish("p", b"3", 1, packet_id=5), Disconnect())
        handle(ConnectionLost(conn.conn_id, "client disconnected", True, 0))
    finally:
        loop.close()
    return received, registry.routed, journal


def test_memory_and_log_journals_give_the_same_packets() -> None:
    memory_packets, memory_routed, memory_kind = run_script(storage=False)
    log_packets, log_routed, log_kind = run_script(storage=True)
    assert (memory_kind, log_kind) == (MemoryJournal, LogJournal)
    assert memory_packets == log_packets
    assert memory_routed == log_routed == [("p", b"0"), ("p", b"1"), ("p", b"2"), ("p", b"3")]
    kinds = [type(p).__name__ for p in memory_packets]
    assert kinds[0] == "ConnAck" and {"SubAck", "PubComp", "UnsubAck", "PubRel"} <= set(kinds)
    assert [p.payload for p in memory_packets if isinstance(p, Publish)] == [
        b"a", b"b", b"c", b"d", b"e"]


def test_a_memory_node_binds_the_direct_paths() -> None:
    """No call and no check per effect without storage: the actor's paths are bound once."""
    registry = Registry(lambda to, message: None)
    node = Node(settings=NodeSettings(session=SessionConfig()), durability=None)
    node.names.register(Singleton.REGISTRY, registry)  # type: ignore[arg-type]
    loop = asyncio.new_event_loop()
    try:
        actor = new_actor(node, CID, loop, lambda: 1.0, start=StartMode.FRESH)
    finally:
        loop.close()
    output = actor._output  # noqa: SLF001
    assert actor._run == actor.carry_out  # noqa: SLF001
    assert output.send_now == output._write_now  # noqa: SLF001
    assert actor._deliver == output.deliver_direct  # noqa: SLF001
