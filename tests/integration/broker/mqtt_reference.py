"""Test support: a reference model of MQTT 3.1/3.1.1 broker semantics, written from the spec. Stdlib only.

It does not import the broker (not even its topic matcher): it is what
``test_broker_model.py`` checks the live broker against. It knows what a
client may observe when every operation has settled before the next one
starts, on a broker with default limits (max QoS 2, 20 in flight, 1000
queued, QoS 0 not queued for offline clients):

* Topic filters match as in section 4.7: ``+`` one level, ``#`` any number
  of levels including the parent ([MQTT-4.7.1-2]); (the model's topics never
  start with ``$``, so [MQTT-4.7.2-1] does not arise).
* A live message goes to every session with a matching subscription, **one
  copy per session** at the highest QoS granted by its matching
  subscriptions, lowered to the message's QoS (section 3.3.5, 3.8.4), with
  RETAIN=0 ([MQTT-3.3.1-9]); the publisher gets its own message back if
  subscribed (MQTT 3 has no No Local).
* RETAIN=1 with a payload replaces the topic's retained message (QoS 0 too,
  [MQTT-3.3.1-5], [MQTT-3.3.1-7]); with an empty payload it clears it
  ([MQTT-3.3.1-10]); either way the message is forwarded as usual.
* A SUBSCRIBE sends the retained messages its filter matches with RETAIN=1
  at the lower of their QoS and the granted one ([MQTT-3.3.1-8]), also when
  the filter was subscribed already ([MQTT-3.8.4-3]); the QoS asked for is
  granted (the broker allows QoS 2).
* A persistent session (Clean Session 0) outlives its connection: while it
  is offline, QoS 1/2 messages for it are queued in order and delivered when
  it reconnects; QoS 0 ones are dropped ([MQTT-3.1.2-5]); its CONNACK says
  Session Present at 3.1.1 ([MQTT-3.2.2-2]; 3.1 has no such flag). Clean
  Session 1 discards any previous session and ends with the connection
  ([MQTT-3.1.2-6]).
* The Will is published when the connection closes without DISCONNECT
  ([MQTT-3.1.2-8]) and discarded after DISCONNECT ([MQTT-3.1.2-10]); the
  session of the dropped client sees it as an offline (or ended) session.
* Order: within one step, messages of one topic at one QoS keep their
  publishing order ([MQTT-4.6.0-6]); nothing is promised across topics,
  so :func:`same_delivery` compares a step's messages that way.

The model does not cover a take-over by a client whose old connection has a
Will (whether that Will reaches its own session live or queued is not fixed
by 3.1.1): the test does not generate it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["Msg", "ReferenceBroker", "matches", "same_delivery"]


@dataclass(frozen=True, slots=True)
class Msg:
    """A message as a subscriber sees it."""

    topic: str
    payload: bytes
    qos: int
    retain: bool


@dataclass(frozen=True, slots=True)
class WillSpec:
    topic: str
    payload: bytes
    qos: int
    retain: bool


@dataclass(slots=True)
class _Session:
    clean: bool
    level: int
    connected: bool = True
    subs: dict[str, int] = field(default_factory=dict)
    queue: list[Msg] = field(default_factory=list)
    will: WillSpec | None = None


def matches(topic_filter: str, topic: str) -> bool:
    """Whether ``topic_filter`` matches ``topic`` (section 4.7, written independently)."""
    f_levels, t_levels = topic_filter.split("/"), topic.split("/")
    if topic.startswith("$") and topic_filter[:1] in ("+", "#"):
        return False  # [MQTT-4.7.2-1]
    for index, level in enumerate(f_levels):
        if level == "#":
            return True  # the rest, including none: "a/#" matches "a"
        if index >= len(t_levels):
            return False
        if level != "+" and level != t_levels[index]:
            return False
    return len(f_levels) == len(t_levels)


def same_delivery(expected: Iterable[Msg], received: Iterable[Msg]) -> bool:
    """Same messages, and per (topic, QoS) in the same order ([MQTT-4.6.0-6])."""
    expected, received = list(expected), list(received)
    if Counter(expected) != Counter(received):
        return False
    keys = {(m.topic, m.qos) for m in expected}
    return all([m for m in expected if (m.topic, m.qos) == key]
               == [m for m in received if (m.topic, m.qos) == key] for key in keys)


class ReferenceBroker:
    """What clients of a correct broker observe (see the module doc).

    Each operation returns the deliveries it causes to *connected* clients:
    ``{client_id: [Msg, ...]}`` in the order they must arrive.
    """

    def __init__(self) -> None:
        self.sessions: dict[str, _Session] = {}
        self.retained: dict[str, Msg] = {}
        self.offline_qos0 = 0   # QoS 0 deliveries dropped for offline sessions
        self.discarded = 0      # queued messages lost with a discarded session

    # -- views -----------------------------------------------------------------

    def connected(self, client_id: str) -> bool:
        session = self.sessions.get(client_id)
        return session is not None and session.connected

    def connected_ids(self) -> list[str]:
        return [cid for cid, s in self.sessions.items() if s.connected]

    def offline_persistent_ids(self) -> list[str]:
        return [cid for cid, s in self.sessions.items() if not s.connected]

    def subscriptions(self, client_id: str) -> dict[str, int]:
        session = self.sessions.get(client_id)
        return dict(session.subs) if session is not None else {}

    def subscription_count(self) -> int:
        return sum(len(s.subs) for s in self.sessions.values())

    def will_of(self, client_id: str) -> WillSpec | None:
        session = self.sessions.get(client_id)
        return session.will if session is not None else None

    # -- operations ------------------------------------------------------------

    def connect(self, client_id: str, *, clean: bool, level: int,
                will: WillSpec | None = None) -> tuple[bool, dict[str, list[Msg]]]:
        """CONNECT of a client that is not connected: (Session Present, deliveries)."""
        old = self.sessions.get(client_id)
        assert old is None or not old.connected, "use take_over"
        resumed = old is not None and not clean
        if old is not None and clean:
            self.discarded += len(old.queue)
        session = old if resumed else _Session(clean=clean, level=level)
        assert session is not None
        session.clean, session.level, session.connected, session.will = clean, level, True, will
        self.sessions[client_id] = session
        queued, session.queue = session.queue, []
        present = resumed and level == 4
        return present, ({client_id: queued} if queued else {})

    def take_over(self, client_id: str, *, clean: bool, level: int
                  ) -> tuple[bool, dict[str, list[Msg]]]:
        """A new connection with the id of a connected client (whose connection has no Will)."""
        session = self.sessions[client_id]
        assert session.connected and session.will is None
        session.connected = False
        if session.clean:
            del self.sessions[client_id]  # the clean session ends with its connection
        return self.connect(client_id, clean=clean, level=level)

    def disconnect(self, client_id: str) -> dict[str, list[Msg]]:
        """DISCONNECT: the Will is discarded; a clean session ends."""
        self._detach(client_id)
        return {}

    def drop(self, client_id: str) -> dict[str, list[Msg]]:
        """The network connection closes without DISCONNECT: the Will is published."""
        will = self.sessions[client_id].will
        self._detach(client_id)
        if will is None:
            return {}
        return self.publish(client_id, will.topic, will.payload, will.qos, will.retain)

    def _detach(self, client_id: str) -> None:
        session = self.sessions[client_id]
        session.connected, session.will = False, None
        if session.clean:
            del self.sessions[client_id]

    def subscribe(self, client_id: str, topic_filter: str, qos: int
                  ) -> tuple[int, dict[str, list[Msg]]]:
        """SUBSCRIBE with one filter: (granted QoS, the retained messages it brings)."""
        session = self.sessions[client_id]
        session.subs[topic_filter] = qos
        retained = [Msg(m.topic, m.payload, min(m.qos, qos), True)
                    for topic, m in self.retained.items() if matches(topic_filter, topic)]
        return qos, ({client_id: retained} if retained else {})

    def unsubscribe(self, client_id: str, topic_filter: str) -> None:
        self.sessions[client_id].subs.pop(topic_filter, None)

    def publish(self, publisher: str, topic: str, payload: bytes, qos: int, retain: bool
                ) -> dict[str, list[Msg]]:
        """A PUBLISH accepted from ``publisher`` (or its Will): the live deliveries."""
        del publisher  # MQTT 3 delivers to the publisher too; no No Local
        if retain:
            if payload:
                self.retained[topic] = Msg(topic, payload, qos, True)
            else:
                self.retained.pop(topic, None)
        out: dict[str, list[Msg]] = {}
        for client_id, session in self.sessions.items():
            granted = [q for f, q in session.subs.items() if matches(f, topic)]
            if not granted:
                continue
            message = Msg(topic, payload, min(qos, max(granted)), False)
            if session.connected:
                out[client_id] = [message]
            elif message.qos > 0:
                session.queue.append(message)
            else:
                self.offline_qos0 += 1
        return out
