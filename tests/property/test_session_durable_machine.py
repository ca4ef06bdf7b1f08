"""Property test: a durable subscriber's session through acks, disconnects, crashes and restarts.

One persistent subscriber (MQTT 3.1.1, or 5 with a Receive Maximum) holds a
QoS 2 subscription; a publisher sends QoS 1/2 messages to it. The session is
the broker's real SessionActor (durable_kit.py: core, journal, gate, resumed
queue, hibernation, ``_durable_start``) over the real fold, ``load_session``
and ``restart_records``. Rules, in any order: connect (clean or not); one
read of acks owed (in order or not, some withheld), maybe with DISCONNECT;
the network dropping the connection; publishing; the group commit's sync;
each mailbox's next message (storage, registry, topic, transport: any
interleaving, each FIFO); a few busy rounds; a checkpoint; and a crash that keeps what was
written (kill -9) or loses its unsynced tail (power loss), then recovery
(from the latest checkpoint).

The client dedups QoS 2 by packet id until PUBREL ([MQTT-4.3.3-9], method
B). What must hold: every message acknowledged to the publisher while the
client held a SUBACK reaches its application (checked once the client has
stayed and acked until nothing moves: none lost, no queue left unsent); a
QoS 2 message reaches it once; per QoS, first receipts in publish order; a
message is re-sent with DUP=1 ([MQTT-3.3.1-1]); a resumed session is present.

Not modelled: MQTT 3 Clean Session 1 (not durable), the publisher's resend
of what it got no PUBACK for, ``NotDurable``, QoS 0, Wills, expiry, shared
subscriptions, several subscribers. Runs in which a queue limit dropped a
message (reported) skip the delivery check.
"""

from __future__ import annotations

import asyncio
import os
from collections import deque
from typing import Any

from durable_kit import (Conn, MemoryLog, MemoryRegistry, Shell, drain, new_actor, new_node,
                         run_start)
from hypothesis import Phase, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context, event as record_event
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from actorbroker.actors.storage.requests import Append, Durable
from actorbroker.actors.sessions.journal.hold import with_offset
from actorbroker.actors.names import Asleep
from actorbroker.actors.sessions.start import StartMode
from actorbroker.actors.messages import Attach, Deliver
from actorbroker.codec import (ConnAck, Connect, Disconnect, Packet, Properties, PubAck, PubComp,
                               PubRec, PubRel, Publish, SubAck, Subscribe, Subscription)
from actorbroker.durable.journal import publish_record
from actorbroker.ports import ConnectionLost, Inbound
from actorbroker.persistence.records import SessionDropped
from actorbroker.session import AppMessage, QueuePolicy, SessionConfig

CID = "c"
TOPIC = "t"
NEVER = 0xFFFFFFFF
PUBLISHER = "the publisher"  # reply_to of the publisher's Appends
BOXES = ("storage", "registry", "topic", "transport")


def event(text: str) -> None:
    if currently_in_test_context():  # (a scripted case runs the machine outside a test)
        record_event(text)


class DurableSessionMachine(RuleBasedStateMachine):
    """One durable subscriber, one publisher, a log that crashes (see the module doc)."""

    @initialize(window=st.integers(1, 3), queue_limit=st.sampled_from([0, 3]), v5=st.booleans())
    def start(self, window: int, queue_limit: int, v5: bool) -> None:
        # queue_limit 0: unlimited (nothing may be dropped); 3: drops allowed but reported,
        # so the end-to-end check only runs when nothing was dropped.
        self.config = SessionConfig(queue=QueuePolicy(max_inflight=window,
                                                      max_queued_messages=queue_limit))
        self.loop = asyncio.new_event_loop()  # never run: timers are only recorded
        self.now = 0.0
        self.log = MemoryLog(self.reply)
        self.registry = MemoryRegistry(self.reply)
        self.node = new_node(self.config, self.log, self.registry)
        self.actor: Shell | None = None
        self.boxes: dict[str, deque[Any]] = {name: deque() for name in BOXES}
        # The publisher: message number -> (QoS, published while the client held a SUBACK).
        self.next_n = 0
        self.published: dict[int, tuple[int, bool]] = {}
        self.offsets: dict[int, int] = {}  # n -> offset, once written
        self.acked: set[int] = set()
        # The client.
        self.conn: Conn | None = None
        self.level = 4
        self.packet_id = 0
        self.qos2_ids: set[int] = set()  # QoS 2 packet ids received, not yet released
        self.owes: dict[int, Packet] = {}  # acknowledgements owed, by packet id, in order
        self.app: list[int] = []  # what reached the application, first receipts in order
        self.twice: list[int] = []  # QoS 2 messages that reached it again
        self.first_sent: set[int] = set()  # messages received with DUP=0
        self.sent_again: list[int] = []  # ... more than once
        self.tracking = False  # the client holds a SUBACK of this session
        self.expect_present: bool | None = None
        self.lost_told: set[int] = set()
        self.drops: dict[str, int] = {}
        # The subscriber starts subscribed (SUBACK seen): the rules take it from there.
        self.connect(False, v5, 3)
        self.settle_everything()
        assert self.tracking

    def teardown(self) -> None:
        try:
            if getattr(self, "config", None) is not None:
                self.settle_everything()
                self.qos2_once()
                self.redelivered_with_dup()
                if self.dropped_somewhere():
                    event("dropped by a limit: not checked")
                else:
                    self.check_delivered()
        finally:
            if getattr(self, "loop", None) is not None:
                self.loop.close()

    def tick(self) -> float:
        self.now += 1.0
        return self.now

    def reply(self, to: Any, message: Any) -> None:
        """An answer of the storage actor or the registry reaches its asker."""
        if to == PUBLISHER:
            self.publisher_answered(message)
        elif self.actor is not None and to is self.actor.actor_ref:
            self.boxes["storage" if type(message).__name__ in ("Durable", "NotDurable",
                                                               "Fetched") else "registry"
                       ].append(message)
        # else: its actor is gone; tells to a dead actor are dropped

    def live(self) -> Shell | None:
        actor = self.actor
        return None if actor is None or actor.stopped else actor

    def handle(self, message: Any) -> None:
        actor = self.live()
        if actor is None:
            return  # the actor stopped (hibernated): its mailbox dies with it
        self.tick()
        actor.on_receive(message)
        if actor.stopped:
            for box in self.boxes.values():
                box.clear()

    def closed(self, conn: Conn) -> None:
        """The transport tells ``ConnectionLost`` once, after the connection's last read."""
        if conn is self.conn:
            self.conn = None  # the client sees it closed
        if conn.conn_id not in self.lost_told:
            self.lost_told.add(conn.conn_id)
            self.boxes["transport"].append(ConnectionLost(conn.conn_id, "closed", False))

    def dropped_somewhere(self) -> bool:
        """A delivery was dropped by a limit (reported, allowed): then nothing is owed."""
        self.count_drops()
        # A drop whose effect waited in the gate when the broker crashed was never counted,
        # but its SessionDropped record may have been stored: that reports it too.
        logged = any(isinstance(r, SessionDropped) and r.reason != "session_ended"
                     for r in self.log.records)
        return bool(self.drops) or logged

    def count_drops(self) -> None:
        for reason, count in self.node.metrics.dropped.items():
            if reason != "session_ended" and count:  # session_ended: a clean start's, void
                self.drops[reason] = self.drops.get(reason, 0) + count
        self.node.metrics.dropped.clear()

    def publisher_answered(self, message: Any) -> None:
        assert isinstance(message, Durable)
        n = message.token
        qos, _ = self.published[n]
        self.offsets[n] = message.offsets[0]
        if not message.synced:  # written: a QoS 1 message is routed at once (mode fsync)
            self.route(n)
            return
        self.acked.add(n)
        if qos == 2:
            self.route(n)

    def route(self, n: int) -> None:
        """The topic actor hands the message to each live subscriber's actor."""
        qos, _ = self.published[n]
        message = with_offset(AppMessage(TOPIC, str(n).encode(), qos, publisher="p",
                                         received_at=self.now), self.offsets[n])
        for cid, granted, epoch in self.registry.subscribers(TOPIC):
            if cid == CID and self.live() is not None:
                self.boxes["topic"].append(Deliver((message,), granted, epoch))
            # else: an Asleep entry takes it (a no-op: the fold queued it)

    def receive(self, conn: Conn, packets: tuple[Packet, ...]) -> None:
        if conn is not self.conn:
            return  # a connection the client has given up
        for packet in packets:
            if isinstance(packet, ConnAck):
                if self.expect_present is not None and self.level != 3:
                    assert packet.session_present is self.expect_present, "session lost"
            elif isinstance(packet, SubAck):
                self.tracking = True
            elif isinstance(packet, Publish):
                self.got_publish(packet)
            elif isinstance(packet, PubRel):
                self.qos2_ids.discard(packet.packet_id)
                self.owes[packet.packet_id] = PubComp(packet.packet_id)

    def got_publish(self, packet: Publish) -> None:
        n = int(packet.payload)
        assert packet.packet_id is not None
        if not packet.dup:  # [MQTT-3.3.1-1]: a re-delivery has DUP=1, a first one is first
            if n in self.first_sent:
                self.sent_again.append(n)
            self.first_sent.add(n)
        if packet.qos == 1:
            self.owes[packet.packet_id] = PubAck(packet.packet_id)
        else:
            self.owes[packet.packet_id] = PubRec(packet.packet_id)
            if packet.packet_id in self.qos2_ids:
                return  # a duplicate by the spec's method: not delivered again
            self.qos2_ids.add(packet.packet_id)
            if n in self.app:
                self.twice.append(n)
        if n not in self.app:
            self.app.append(n)

    def send(self, *packets: Packet) -> None:
        assert self.conn is not None
        self.boxes["transport"].append(Inbound(self.conn.conn_id, packets))

    @precondition(lambda self: self.conn is None)
    # Clean starts void what was owed: one connect in four, so that most runs owe something.
    @rule(clean=st.sampled_from([False, False, False, True]), v5=st.booleans(),
          receive_maximum=st.integers(1, 3))
    def connect(self, clean: bool, v5: bool, receive_maximum: int) -> None:
        """A CONNECT the gateway routes to the session (a new actor if it has none)."""
        if clean and not v5:
            clean = False  # MQTT 3 Clean Session 1 is not durable: not modelled (see report)
        if self.live() is None:
            start = StartMode.WAKE if self.node.names.is_asleep(CID) else StartMode.FRESH
            # Named before it loads: a message routed meanwhile reaches it (the horizon case).
            self.actor = new_actor(self.node, CID, self.loop, lambda: self.now, start=start)
            run_start(self.actor)
        if clean:  # the client starts over: nothing before this is owed
            self.app, self.twice, self.qos2_ids, self.first_sent = [], [], set(), set()
            self.published = {n: (q, False) for n, (q, _) in self.published.items()}
            self.tracking = False
        # Clean: never present; resumed after a SUBACK: present; else it may or may not be.
        self.expect_present = False if clean else (True if self.tracking else None)
        self.owes = {}
        self.level = 5 if v5 else 4
        properties = Properties(session_expiry_interval=NEVER, receive_maximum=receive_maximum
                                ) if v5 else Properties()
        self.conn = Conn(self.receive, self.closed)
        self.handle(Attach(self.conn, Connect("MQTT", self.level, CID, clean, 0,
                                              properties=properties), CID, False, None))
        if not self.tracking:  # clients subscribe without waiting for the CONNACK
            self.packet_id = self.packet_id % 100 + 1
            self.send(Subscribe(self.packet_id, (Subscription(TOPIC, 2),)))

    @precondition(lambda self: self.conn is not None and not self.conn.closed)
    @rule(data=st.data(), disconnect=st.booleans())
    def client_acks(self, data: st.DataObject, disconnect: bool) -> None:
        """One read: some of the acks owed, in any order, maybe a DISCONNECT after them."""
        owed = list(self.owes)
        chosen = data.draw(st.lists(st.sampled_from(owed), unique=True) if owed else st.just([]))
        acks = [self.owes.pop(pid) for pid in chosen]
        if disconnect:
            acks.append(Disconnect())
        if acks:
            self.send(*acks)
        if disconnect:  # sent, then half-closed: the transport closes once it has read it
            self.lose_connection()

    @precondition(lambda self: self.conn is not None)
    @rule()
    def lose_connection(self) -> None:
        assert self.conn is not None
        conn, self.conn = self.conn, None
        conn.closed = True
        self.closed(conn)

    @rule(levels=st.lists(st.integers(1, 2), min_size=1, max_size=4), synced=st.booleans())
    def publish(self, levels: list[int], synced: bool) -> None:
        """The publisher's session stores each message (one Append each, as one read would
        have them); QoS 1 is routed once written, QoS 2 once synced (see publisher_answered).
        ``synced``: the group commit follows at once (most runs then owe something)."""
        for qos in levels:
            n = self.next_n = self.next_n + 1
            self.published[n] = (qos, self.tracking)
            message = AppMessage(TOPIC, str(n).encode(), qos, publisher="p",
                                 received_at=self.now)
            record = publish_record(message, n % 65535 + 1, 1_700_000_000_000_000 + n)
            self.log.tell(Append((record,), PUBLISHER, n, qos == 1))
        if synced:
            self.log.sync()

    @rule()
    def sync(self) -> None:
        self.log.sync()

    @precondition(lambda self: any(self.boxes.values()))
    @rule(data=st.data())
    def next_message(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from([n for n in BOXES if self.boxes[n]]))
        self.handle(self.boxes[name].popleft())

    @rule(rounds=st.integers(1, 6))
    def busy_rounds(self, rounds: int) -> None:
        """A few rounds of everything moving at once (a shortcut to the deeper states that
        single steps reach rarely: a QoS 2 flow half done when the crash comes)."""
        for _ in range(rounds):
            self.round(sync=True)

    @rule()
    def checkpoint(self) -> None:
        self.log.checkpoint()

    @rule(lost=st.integers(0, 6))
    def crash_and_restart(self, lost: int) -> None:
        """The broker dies; the last ``lost`` records written and not synced go with it
        (0: kill -9, the page cache keeps them; more: a power loss)."""
        unsynced = len(self.log.records) - self.log.synced
        keep = unsynced - min(lost, unsynced)
        for box in self.boxes.values():
            box.clear()
        if self.conn is not None:
            self.conn.closed = True
            self.conn = None
        self.count_drops()
        self.log = self.log.restart(keep)
        self.registry = MemoryRegistry(self.reply)
        self.node = new_node(self.config, self.log, self.registry)
        self.registry.load(self.log, self.node.next_epoch())
        for image in self.log.state.offline():  # the keeper's Asleep entries
            self.node.names.register_session(image.client_id, Asleep(  # type: ignore[arg-type]
                image.client_id, self.node.metrics))
        self.actor = None
        self.offsets = {n: o for n, o in self.offsets.items() if o < len(self.log.records)}
        # The publisher resends what it got no PUBACK for; not modelled: those are not owed.
        self.published = {n: (q, t and n in self.acked) for n, (q, t) in self.published.items()}

    @invariant()
    def qos2_once(self) -> None:
        assert not self.twice, f"QoS 2 messages delivered twice: {self.twice}"

    @invariant()
    def redelivered_with_dup(self) -> None:
        assert not self.sent_again, f"sent again with DUP=0: {self.sent_again}"

    def settle_everything(self) -> None:
        """The client comes back (not clean) and keeps up until nothing moves."""
        for _ in range(100 + 4 * self.next_n):  # a few rounds a message (window 1, QoS 2)
            moved = False
            if self.conn is None:
                self.connect(False, self.level == 5, 3)
                moved = True
            if not self.round(sync=True) and not moved:
                return
        raise AssertionError("the session never settled")

    def round(self, *, sync: bool) -> bool:
        """Sync (maybe), let the actor take every message, the client ack all it owes; True
        if anything happened."""
        if sync:
            self.log.sync()
        moved = False
        for name in BOXES:
            moved = drain(self.boxes[name], self.handle) > 0 or moved
        if self.conn is not None and self.owes:
            self.send(*self.owes.values())
            self.owes = {}
            moved = True
        return moved

    def check_delivered(self) -> None:
        owed = sorted(n for n, (_, tracked) in self.published.items()
                      if tracked and n in self.acked)
        event(f"messages owed at the end: {min(len(owed), 5)}{'+' if len(owed) >= 5 else ''}")
        missing = [n for n in owed if n not in self.app]
        assert not missing, f"acknowledged messages never delivered: {missing}"
        for qos in (1, 2):
            firsts = [n for n in self.app if n in self.acked and self.published[n][0] == qos]
            assert firsts == sorted(firsts), f"QoS {qos} out of order: {firsts}"


# About 15 s on one core; ACTORBROKER_MODEL_EXAMPLES=5000 for a deeper search by hand.
DurableSessionMachine.TestCase.settings = settings(
    max_examples=int(os.environ.get("ACTORBROKER_MODEL_EXAMPLES", "400")),
    stateful_step_count=20, deadline=None,
    # No explain phase: its tracing makes a failure's report take minutes.
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink])
TestDurableSessionMachine = DurableSessionMachine.TestCase
