"""The ack gate alone: a session's HoldQueue and its Held entries (actors/sessions/journal/hold.py).

No actor, no loop, no thread, no journal: each test holds entries as the
journal would (a token, the effects, the records' places, early/blocking as
``derive`` decides them), answers them as the storage actor would (written,
synced, refused) in the order it wants, and reads what the queue let out, in
order. ``Rig`` is the only thing that knows the queue's calling convention
(written first against the queue that called its actor back, so that these
tests held before and after it returned what to carry out instead).
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from actorbroker.actors.sessions.journal.hold import STOP, Held, HoldQueue, Release
from actorbroker.actors.sessions.journal.records import derive
from actorbroker.codec import Connect, Packet, Properties, PubAck, PubRec, Publish
from actorbroker.session import AppMessage, Close, Effect, Route, Send, SessionCore


class Conn:
    """A connection: what it was sent and whether it was closed."""

    def __init__(self) -> None:
        self.sent: list[Packet] = []
        self.closed: str | None = None

    def send(self, packets: Any) -> None:
        self.sent += packets

    def close(self, code: Any = None, reason: str = "") -> None:
        self.closed = reason


class Credit:
    """A read's credit: held once per entry that holds it, taken back when its routes go."""

    def __init__(self) -> None:
        self.count = 1

    def hold(self, count: int) -> None:
        self.count += count

    def take(self) -> None:
        self.count -= 1


class Rig:
    """One session's HoldQueue, and everything it let out, in order (as SessionActor carries
    it out: a Route's ack goes once the message is handed on)."""

    def __init__(self, level: int = 4) -> None:
        self.core = SessionCore("pub")
        properties = Properties(session_expiry_interval=0) if level == 5 else Properties()
        self.core.attach(Connect("MQTT", level, "pub", True, 0, properties=properties), 0.0)
        self.connection: Any = Conn()
        self.credit: Credit | None = None  # the read credit of what is held now
        self.out: list[Any] = []  # ("route", payload, offset) | ("packet", packet)
        self.stopped = False
        self.queue = HoldQueue()
        self._tokens = 0

    # -- the actor's side: carrying out what the queue let go ---------------------------

    def carry(self, releases: list[Release]) -> None:
        """As SessionActor._carry_releases: the effects, the credit back, callbacks, stop."""
        for release in releases:
            self.carry_out(release.effects)
            if release.credit is not None:
                release.credit.take()
            for callback in release.then:
                callback()
            if release.then_stop:
                self.stopped = True

    def carry_out(self, effects: list[Effect]) -> None:
        for effect in effects:
            if isinstance(effect, Route):
                self.out.append(("route", effect.message.payload, effect.message.log_offset))
                if effect.ack is not None:
                    self.out.append(("packet", effect.ack))
            elif isinstance(effect, Send):
                self.out += [("packet", packet) for packet in effect.packets]
            else:
                self.out.append(("effect", effect))

    # -- the journal's side: hold, and answer as the storage actor ---------------------

    def hold(self, effects: list[Any], *, logged: int = 0, early: bool = False,
             blocking: bool = True, conn: Any = None, own: bool = True) -> int | None:
        """Hold ``effects`` (the first ``logged`` of them Routes of logged messages) under a
        new token (``own`` False: none, only behind what is held); return the token."""
        token = None
        if own:
            self._tokens += 1
            token = self._tokens
        routes = [(index, index) for index in range(logged)]
        records: list[Any] = [object() for _ in range(logged)]
        self.queue.hold(Held(token, effects, self.connection if conn is None else conn, routes,
                             records, early=early, blocking=blocking), self.credit)
        return token

    def written(self, token: int) -> None:
        held = self.queue.find(token)
        assert held is not None
        self.carry(self.queue.written(held, self.offsets(token, held)))

    def synced(self, token: int) -> None:
        held = self.queue.find(token)
        assert held is not None
        held.stored(self.offsets(token, held))
        held.done = True
        self.carry(self.queue.release_ready(self.connection))

    def refused(self, token: int, code: int = 0x97) -> None:
        held = self.queue.find(token)
        assert held is not None
        held.refuse(self.core, code, "disk full")
        held.done = True
        self.carry(self.queue.release_ready(self.connection))

    @staticmethod
    def offsets(token: int, held: Held) -> tuple[int, ...]:
        return tuple(range(100 * token, 100 * token + len(held.records)))

    # -- reading what went out ---------------------------------------------------------------

    def routes(self) -> list[bytes]:
        return [item[1] for item in self.out if item[0] == "route"]

    def packets(self) -> list[Packet]:
        return [item[1] for item in self.out if item[0] == "packet"]


def route(payload: bytes, qos: int, packet_id: int) -> Route:
    ack: PubAck | PubRec = PubAck(packet_id) if qos == 1 else PubRec(packet_id)
    return Route(AppMessage("t", payload, qos), ack)


def test_puback_only_after_synced_durable() -> None:
    rig = Rig()
    token = rig.hold([route(b"a", 1, 1)], logged=1, early=True)
    assert rig.out == []
    rig.written(token)
    assert rig.routes() == [b"a"] and rig.packets() == []  # routed, not acknowledged
    rig.synced(token)
    assert rig.packets() == [PubAck(1)] and rig.routes() == [b"a"]  # not routed twice
    assert rig.out[0] == ("route", b"a", 100)  # with its log offset


def test_qos1_route_goes_on_written_before_sync_but_not_past_a_blocking_entry() -> None:
    rig = Rig()
    blocking = rig.hold([route(b"q2", 2, 1)], logged=1)
    early = rig.hold([route(b"q1", 1, 2)], logged=1, early=True)
    rig.written(early)
    assert rig.out == []  # the QoS 2 entry before it is not released yet
    rig.synced(blocking)
    assert rig.routes() == [b"q2", b"q1"] and rig.packets() == [PubRec(1)]
    rig.synced(early)
    assert rig.packets() == [PubRec(1), PubAck(2)]


def test_an_early_route_passes_an_entry_that_holds_only_packets() -> None:
    rig = Rig()
    rig.hold([Send((Publish("out", b"z", 0),))], own=False, blocking=False)
    early = rig.hold([route(b"q1", 1, 1)], logged=1, early=True)
    rig.written(early)
    assert rig.routes() == [b"q1"]


def test_qos2_never_early() -> None:
    found = derive([route(b"q2", 2, 1)], "pub", False, lambda: None, {}, 0)
    assert not found.early  # so the journal holds it with early=False
    rig = Rig()
    token = rig.hold([route(b"q2", 2, 1)], logged=1, early=found.early)
    rig.written(token)  # told anyway: ignored
    assert rig.out == []
    rig.synced(token)
    assert rig.routes() == [b"q2"] and rig.packets() == [PubRec(1)]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([1, 2]), min_size=1, max_size=6).flatmap(
    lambda levels: st.tuples(st.just(levels), st.permutations(range(len(levels))),
                             st.lists(st.booleans(), min_size=len(levels),
                                      max_size=len(levels)))))
def test_release_order_is_append_order_whatever_reply_order(
        case: tuple[list[int], list[int], list[bool]]) -> None:
    levels, order, written_first = case
    rig = Rig()
    tokens = [rig.hold([route(bytes([n]), qos, n + 1)], logged=1, early=qos == 1)
              for n, qos in enumerate(levels)]
    acked: set[int] = set()
    for n in order:
        token = tokens[n]
        assert token is not None
        if written_first[n]:
            rig.written(token)
        rig.synced(token)
        acked.add(n)
        # No acknowledgement of an entry not synced yet, and each after its own route.
        for ack in rig.packets():
            assert ack.packet_id - 1 in acked
        for index, item in enumerate(rig.out):
            if item[0] == "packet":
                assert ("route", bytes([item[1].packet_id - 1]), 100 * tokens[
                    item[1].packet_id - 1]) in rig.out[:index]
        # What went out is a prefix of the append order, for routes and acks alike.
        assert rig.routes() == [bytes([n]) for n in range(len(rig.routes()))]
        assert [a.packet_id for a in rig.packets()] == list(range(1, len(rig.packets()) + 1))
    assert rig.routes() == [bytes([n]) for n in range(len(levels))]
    assert [type(a) for a in rig.packets()] == [PubAck if q == 1 else PubRec for q in levels]
    assert not rig.queue


def test_refusal_after_early_route_refuses_the_puback() -> None:
    rig = Rig(level=5)
    token = rig.hold([route(b"a", 1, 1)], logged=1, early=True)
    rig.written(token)
    assert rig.routes() == [b"a"]
    rig.refused(token, 0x97)
    [refusal] = rig.packets()
    assert isinstance(refusal, PubAck) and refusal.reason_code == 0x97
    assert rig.routes() == [b"a"]  # routed once: delivered at least once, resent by the client


def test_a_refusal_at_mqtt3_closes_without_puback() -> None:
    rig = Rig(level=4)
    token = rig.hold([route(b"a", 1, 1)], logged=1, early=True)
    rig.refused(token)
    assert rig.routes() == [] and rig.packets() == []
    assert any(item[0] == "effect" and isinstance(item[1], Close) for item in rig.out)


def test_packets_for_a_replaced_connection_go_to_it_only() -> None:
    rig = Rig()
    old = rig.connection
    token = rig.hold([route(b"a", 1, 1), Send((Publish("out", b"z", 0),)), Close(0x8E, "taken")],
                     logged=1)
    assert rig.queue.packets_for(old) == [Publish("out", b"z", 0)]
    rig.connection = Conn()  # a take-over while the entry waited
    assert token is not None
    rig.synced(token)
    assert old.sent == [Publish("out", b"z", 0)] and old.closed == "taken"
    assert rig.connection.sent == []  # nothing of the old connection's reaches the new one
    assert rig.routes() == [b"a"]  # the message goes on all the same
    assert rig.packets() == [PubAck(1)]  # the ack (of a Route) as the actor carries it out


def test_end_session_held_stops_after_release() -> None:
    rig = Rig()
    token = rig.hold([route(b"a", 1, 1), STOP], logged=1)
    released: list[str] = []
    assert rig.queue.when_released(lambda: released.append("then"))
    assert token is not None and not rig.stopped
    rig.synced(token)
    assert rig.routes() == [b"a"] and released == ["then"] and rig.stopped
    assert not any(item[0] == "effect" for item in rig.out)  # the marker is not an effect


def test_the_read_credit_is_held_until_the_routes_go() -> None:
    rig = Rig()
    rig.credit = credit = Credit()
    token = rig.hold([route(b"a", 1, 1)], logged=1, early=True)
    rig.credit = None
    credit.take()  # the read is over: only the held entry keeps it now
    assert credit.count == 1
    assert token is not None
    rig.written(token)
    assert credit.count == 0  # given back with the early route, not at the sync
    rig.synced(token)
    assert credit.count == 0
