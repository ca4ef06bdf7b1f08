"""Property test: one SessionCore driven by random deliveries, acks, disconnects and reconnects.

A small model of the client and of the broker's promises runs next to the
core and checks, after every step:

* no accepted QoS 1/2 delivery is lost: each one is in flight (not yet
  acknowledged) or queued, until the client acknowledges it or a ``Dropped``
  effect reports it (queue full, or the session state discarded);
* drops happen only when the policy says so (queue at its limit, QoS 0 to an
  offline client), and every discarded delivery is reported;
* the inflight window is never exceeded and is used whenever something waits;
* packet ids are unique among live flows, resends carry DUP=1 and the
  original id, and first transmissions keep the delivery order (FIFO);
* a reconnect resends every live flow, as the client sees it: the packets
  sent (PUBLISH DUP=1 in first-send order, then PUBREL in PUBREC order) are
  compared with the model's flows, not with the core's own table;
* a QoS 2 message is never sent again once its PUBREC was received;
* client QoS 2 PUBLISH retries before PUBREL are not routed twice.
"""

from __future__ import annotations

from collections import deque

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from actorbroker.codec import (
    ConnAck,
    Connect,
    Disconnect,
    Packet,
    PubAck,
    PubComp,
    PubRec,
    PubRel,
    Publish,
)
from actorbroker.session import (
    AppMessage,
    CancelTimer,
    Close,
    Delivery,
    Dropped,
    DropReason,
    Effect,
    EndSession,
    OutboundState,
    PublishWill,
    QueuePolicy,
    RequestUnsubscribe,
    Route,
    Send,
    SessionConfig,
    SessionCore,
    SessionState,
    StartTimer,
)

_UNACKED = (OutboundState.AWAIT_PUBACK, OutboundState.AWAIT_PUBREC)


def number(delivery: Delivery) -> int:
    return int(delivery.message.payload)


class SessionMachine(RuleBasedStateMachine):
    """One persistent client session and a model of what must be true of it."""

    @initialize(
        window=st.integers(1, 4),
        queue_limit=st.integers(1, 6),
        queue_qos0=st.booleans(),
    )
    def start(self, window: int, queue_limit: int, queue_qos0: bool) -> None:
        self.window, self.queue_limit, self.queue_qos0 = window, queue_limit, queue_qos0
        self.config = SessionConfig(queue=QueuePolicy(
            max_inflight=window, max_queued_messages=queue_limit, queue_qos0=queue_qos0
        ))
        self.core = SessionCore("c", self.config)
        self.now = 0.0
        self.next_n = 0
        self.outstanding: set[int] = set()  # accepted QoS 1/2, not acknowledged by the client
        self.unsent: deque[int] = deque()  # queue-path deliveries not yet transmitted, in order
        self.sent_id: dict[int, int] = {}  # n -> packet id of its live QoS 1/2 flow
        self.live_ids: set[int] = set()
        self.pubreced: set[int] = set()  # QoS 2 messages whose PUBREC the core received
        self.owes: dict[int, tuple[str, int]] = {}  # client obligations: packet id -> (ack, n)
        self.inbound_awaiting: set[int] = set()
        self.send_order: list[int] = []  # packet ids of live flows, in first-send order
        self.rel_order: list[int] = []  # packet ids whose PUBREC the core got, in that order
        self.expect_present = False
        self.attach(clean=False)

    # ------------------------------------------------------------ helpers

    def tick(self) -> float:
        self.now += 1.0
        return self.now

    def attach(self, *, clean: bool, discards: bool = False) -> None:
        # What the client must get again ([MQTT-4.4.0-1]): read before the attach, from the
        # model's own record of live flows, and checked against the packets the attach sends.
        owed = [] if clean or discards else self.resends_owed()
        effects = self.core.attach(Connect("MQTT", 4, "c", clean, 0), self.tick())
        if clean or discards:
            self.discarded(effects)
        resent = [(type(p).__name__, p.packet_id) for e in effects if isinstance(e, Send)
                  for p in e.packets if isinstance(p, PubRel) or (isinstance(p, Publish) and p.dup)]
        # [MQTT-4.6.0-1]: PUBLISHes in the order first sent; [MQTT-4.6.0-3]: PUBRELs in
        # PUBREC order. Nothing orders a PUBREL against a PUBLISH: each kind on its own.
        for kind in ("Publish", "PubRel"):
            assert [r for r in resent if r[0] == kind] == [o for o in owed if o[0] == kind], (
                resent, owed)
        assert len(resent) == len(owed), (resent, owed)
        self.process(effects)

    def resends_owed(self) -> list[tuple[str, int]]:
        """Each live flow's resend: unacknowledged PUBLISHes in the order they were first
        sent, and PUBRELs in PUBREC order (the two kinds may interleave)."""
        publishes = [("Publish", pid) for pid in self.send_order if pid not in self.rel_order]
        return publishes + [("PubRel", pid) for pid in self.rel_order]

    def discarded(self, effects: list[Effect]) -> None:
        """The session state was discarded: every unacknowledged delivery must be reported."""
        dropped = {int(e.message.payload) for e in effects
                   if isinstance(e, Dropped) and e.reason is DropReason.SESSION_ENDED}
        assert self.outstanding <= dropped, (self.outstanding, dropped)
        assert set(self.unsent) <= dropped
        self.outstanding.clear()
        self.unsent.clear()
        self.sent_id.clear()
        self.live_ids.clear()
        self.send_order.clear()
        self.rel_order.clear()
        self.inbound_awaiting.clear()
        self.expect_present = False

    def process(self, effects: list[Effect]) -> None:
        for effect in effects:
            if isinstance(effect, Send):
                for packet in effect.packets:
                    self.receive(packet)
            elif isinstance(effect, Dropped):
                assert effect.reason is not DropReason.EXPIRED  # no expiry in this model
            else:
                assert isinstance(effect, RequestUnsubscribe | EndSession | Route | Close | CancelTimer
                                  | StartTimer | PublishWill), effect

    def receive(self, packet: Packet) -> None:
        """What the client sees."""
        assert self.core.state is SessionState.CONNECTED
        if isinstance(packet, ConnAck):
            assert packet.session_present is self.expect_present
            return
        if isinstance(packet, PubRel):
            assert packet.packet_id in self.live_ids
            kind, n = self.owes.get(packet.packet_id, ("PUBCOMP", -1))
            if n == -1:
                n = next(k for k, v in self.sent_id.items() if v == packet.packet_id)
            assert n in self.pubreced
            self.owes[packet.packet_id] = ("PUBCOMP", n)
            return
        assert isinstance(packet, Publish), packet
        n = int(packet.payload)
        if packet.qos == 0:
            assert not packet.dup and packet.packet_id is None
            if self.unsent and self.unsent[0] == n:
                self.unsent.popleft()
            return
        assert packet.packet_id is not None
        if packet.qos == 2:
            assert n not in self.pubreced, f"QoS 2 message {n} sent again after PUBREC"
        if packet.dup:
            assert self.sent_id[n] == packet.packet_id  # original packet id
        else:
            assert self.unsent and self.unsent[0] == n, (list(self.unsent), n)  # FIFO
            self.unsent.popleft()
            assert packet.packet_id not in self.live_ids
            self.sent_id[n] = packet.packet_id
            self.live_ids.add(packet.packet_id)
            self.send_order.append(packet.packet_id)
        self.owes[packet.packet_id] = ("PUBACK" if packet.qos == 1 else "PUBREC", n)

    # -------------------------------------------------------------- rules

    @rule(message_qos=st.integers(0, 2), sub_qos=st.integers(0, 2))
    def deliver(self, message_qos: int, sub_qos: int) -> None:
        n = self.next_n = self.next_n + 1
        qos = min(message_qos, sub_qos)
        queued_before = len(self.core.queued)
        online = self.core.attached
        effects = self.core.deliver(AppMessage(f"t/{n % 3}", str(n).encode(), message_qos),
                                    sub_qos, self.tick())
        drops = [e for e in effects if isinstance(e, Dropped)]
        sent_now = any(isinstance(p, Publish) and int(p.payload) == n
                       for e in effects if isinstance(e, Send) for p in e.packets)
        if drops:
            [drop] = drops
            assert drop.qos == qos and not sent_now
            if drop.reason is DropReason.SESSION_ENDED:
                assert self.core.state is SessionState.ENDED
            elif drop.reason is DropReason.QUEUE_FULL:
                assert queued_before == self.queue_limit  # dropped only when the limit is reached
            else:
                assert drop.reason is DropReason.OFFLINE_QOS0
                assert qos == 0 and not online and not self.queue_qos0
        elif qos or not sent_now:
            self.unsent.append(n)
            if qos:
                self.outstanding.add(n)
        self.process(effects)

    @precondition(lambda self: self.core.attached and self.owes)
    @rule(data=st.data())
    def client_acks(self, data: st.DataObject) -> None:
        packet_id = data.draw(st.sampled_from(sorted(self.owes)))
        kind, n = self.owes.pop(packet_id)
        ack: Packet
        if kind == "PUBACK":
            ack = PubAck(packet_id)
            self.outstanding.discard(n)
            self.live_ids.discard(packet_id)
            self.send_order.remove(packet_id)
            del self.sent_id[n]
        elif kind == "PUBREC":
            ack = PubRec(packet_id)
            self.outstanding.discard(n)
            self.pubreced.add(n)
            self.rel_order.append(packet_id)
        else:
            ack = PubComp(packet_id)
            self.live_ids.discard(packet_id)
            self.send_order.remove(packet_id)
            self.rel_order.remove(packet_id)
            del self.sent_id[n]
        effects = self.core.handle(ack, self.tick())
        if kind == "PUBREC":
            assert effects and isinstance(effects[0], Send) and effects[0].packets[0] == PubRel(packet_id)
        self.process(effects)

    @precondition(lambda self: self.core.attached)
    @rule(packet_id=st.integers(1, 4), retry=st.booleans())
    def client_publishes_qos2(self, packet_id: int, retry: bool) -> None:
        effects = self.core.handle(Publish("in", b"x", 2, dup=retry, packet_id=packet_id), self.tick())
        if packet_id in self.inbound_awaiting:
            assert effects == [Send((PubRec(packet_id),))]  # not routed twice
        else:
            [route] = effects
            assert isinstance(route, Route) and route.ack == PubRec(packet_id)
            self.inbound_awaiting.add(packet_id)

    @precondition(lambda self: self.core.attached)
    @rule(packet_id=st.integers(1, 4))
    def client_releases(self, packet_id: int) -> None:
        assert self.core.handle(PubRel(packet_id), self.tick()) == [Send((PubComp(packet_id),))]
        self.inbound_awaiting.discard(packet_id)

    @precondition(lambda self: self.core.state is SessionState.CONNECTED)
    @rule(send_disconnect=st.booleans())
    def connection_lost(self, send_disconnect: bool) -> None:
        if send_disconnect:
            self.process(self.core.handle(Disconnect(), self.tick()))
        clean = self.core.clean_session
        effects = self.core.detach(self.tick())
        if clean:
            assert self.core.state is SessionState.ENDED
            self.discarded(effects)
        self.process(effects)
        self.owes.clear()  # the client re-learns them from the resends
        self.expect_present = not clean

    @precondition(lambda self: self.core.state in (SessionState.DISCONNECTED, SessionState.ENDED))
    @rule(clean=st.booleans())
    def reconnect(self, clean: bool) -> None:
        if self.core.state is SessionState.ENDED:
            self.core = SessionCore("c", self.config)
            self.pubreced.clear()
        self.attach(clean=clean)  # checks the resends against the packets sent
        self.expect_present = False

    @precondition(lambda self: self.core.attached)
    @rule(clean=st.booleans())
    def take_over(self, clean: bool) -> None:
        old_clean = self.core.clean_session
        effects = self.core.take_over(self.tick())
        assert isinstance(effects[0], Close) and not any(isinstance(e, Send) for e in effects)
        self.process(effects)
        self.owes.clear()
        self.expect_present = not (old_clean or clean)
        self.attach(clean=clean, discards=old_clean)
        self.expect_present = False

    # --------------------------------------------------------- invariants

    @invariant()
    def window_is_respected_and_used(self) -> None:
        inflight = len(self.core.inflight)
        assert inflight <= self.window
        if self.core.attached and self.core.queued:
            assert inflight == self.window

    @invariant()
    def queue_is_bounded_and_in_order(self) -> None:
        assert len(self.core.queued) <= self.queue_limit
        assert [number(d) for d in self.core.queued] == list(self.unsent)

    @invariant()
    def no_accepted_delivery_is_lost(self) -> None:
        unacked = {number(d) for d, state in self.core.inflight.values() if state in _UNACKED}
        waiting = {number(d) for d in self.core.queued if d.qos}
        assert unacked | waiting == self.outstanding

    @invariant()
    def packet_ids_are_the_live_flows(self) -> None:
        assert set(self.core.inflight) == self.live_ids
        assert all(1 <= pid <= 0xFFFF for pid in self.live_ids)

    @invariant()
    def inbound_qos2_state_matches(self) -> None:
        assert self.core.inbound_qos2 == self.inbound_awaiting


SessionMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=60, deadline=None)
TestSessionMachine = SessionMachine.TestCase
