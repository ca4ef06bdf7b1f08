"""Test support: a reference model of a broker serving MQTT 3.1.1 and 5.0 clients at once. Stdlib only.

Written from the specs, importing nothing of the broker; what
``test_broker5_model.py`` checks the live broker against, when every
operation has settled before the next one starts (default limits):

* A session belongs to a client id, whatever protocol its connections speak.
  MQTT 3.1.1: Clean Session 1 discards the old session and ends with the
  connection; 0 keeps it forever. MQTT 5: Clean Start 1 discards the old
  session; the session outlives the connection when its Session Expiry
  Interval is not 0 (the model uses 0 and 3600, which never passes).
* Filters match as in section 4.7. A live message goes to every session with
  a matching subscription, one copy per session: the subscriptions that
  count are those without No Local, or all of them for another client's
  message ([MQTT-3.8.3-3]); QoS the highest of them, lowered to the message's;
  Subscription Identifiers all of theirs, ascending ([MQTT-3.3.4-3..5]);
  RETAIN as published if one has Retain As Published, else 0 ([MQTT-3.3.1-12]).
  Options stay with the subscription: a later MQTT 3.1.1 connection of the
  same session is served by them too (without the identifiers, which 3.1.1
  cannot carry).
* RETAIN with a payload replaces the retained message, an empty one clears
  it. A SUBSCRIBE sends the matching retained messages with RETAIN 1 at the
  lower QoS, with the SUBSCRIBE's identifier, according to Retain Handling:
  0 always, 1 only if that filter was not subscribed already, 2 never.
* Offline sessions queue QoS 1/2 copies in order and get them on reconnect;
  QoS 0 is dropped for them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["Msg", "Reference5", "Sub", "matches", "same_delivery"]


@dataclass(frozen=True, slots=True)
class Msg:
    """A message as a subscriber sees it (``ids``: Subscription Identifiers; () at 3.1.1)."""

    topic: str
    payload: bytes
    qos: int
    retain: bool
    ids: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Sub:
    """A subscription and its MQTT 5 options."""

    qos: int
    no_local: bool = False
    as_published: bool = False
    sub_id: int = 0


@dataclass(slots=True)
class _Session:
    level: int
    keep: bool  # outlives its connection
    connected: bool = True
    subs: dict[str, Sub] = field(default_factory=dict)
    queue: list[Msg] = field(default_factory=list)


def matches(topic_filter: str, topic: str) -> bool:
    f_levels, t_levels = topic_filter.split("/"), topic.split("/")
    for index, level in enumerate(f_levels):
        if level == "#":
            return True
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


class Reference5:
    """What clients of a correct broker observe; operations return ``{client: [Msg]}``."""

    def __init__(self) -> None:
        self.sessions: dict[str, _Session] = {}
        self.retained: dict[str, tuple[bytes, int]] = {}

    def connected(self, client_id: str) -> bool:
        session = self.sessions.get(client_id)
        return session is not None and session.connected

    def level(self, client_id: str) -> int:
        return self.sessions[client_id].level

    def subscriptions(self, client_id: str) -> dict[str, Sub]:
        session = self.sessions.get(client_id)
        return dict(session.subs) if session is not None else {}

    def connect(self, client_id: str, *, level: int, clean: bool, keep: bool
                ) -> tuple[bool, dict[str, list[Msg]]]:
        """(Session Present, deliveries) of a CONNECT of a client that is not connected."""
        old = self.sessions.get(client_id)
        assert old is None or not old.connected
        resumed = old is not None and not clean
        session = old if resumed and old is not None else _Session(level, keep)
        session.level, session.keep, session.connected = level, keep, True
        self.sessions[client_id] = session
        queued, session.queue = session.queue, []
        if level == 4:
            queued = [Msg(m.topic, m.payload, m.qos, m.retain) for m in queued]
        return resumed, ({client_id: queued} if queued else {})

    def leave(self, client_id: str) -> None:
        """The connection ends (DISCONNECT or drop: no Wills in this model)."""
        session = self.sessions[client_id]
        session.connected = False
        if not session.keep:
            del self.sessions[client_id]

    def subscribe(self, client_id: str, topic_filter: str, sub: Sub, handling: int
                  ) -> dict[str, list[Msg]]:
        session = self.sessions[client_id]
        existed = topic_filter in session.subs
        session.subs[topic_filter] = sub
        if handling == 2 or (handling == 1 and existed):
            return {}
        ids = (sub.sub_id,) if sub.sub_id and session.level == 5 else ()
        retained = [Msg(topic, payload, min(qos, sub.qos), True, ids)
                    for topic, (payload, qos) in self.retained.items()
                    if matches(topic_filter, topic)]
        return {client_id: retained} if retained else {}

    def unsubscribe(self, client_id: str, topic_filter: str) -> None:
        self.sessions[client_id].subs.pop(topic_filter, None)

    def publish(self, publisher: str, topic: str, payload: bytes, qos: int, retain: bool
                ) -> dict[str, list[Msg]]:
        if retain:
            if payload:
                self.retained[topic] = (payload, qos)
            else:
                self.retained.pop(topic, None)
        out: dict[str, list[Msg]] = {}
        for client_id, session in self.sessions.items():
            counted = [s for f, s in session.subs.items() if matches(f, topic)
                       and not (s.no_local and client_id == publisher)]
            if not counted:
                continue
            ids = tuple(sorted({s.sub_id for s in counted if s.sub_id}))
            as_published = any(s.as_published for s in counted) and retain
            message = Msg(topic, payload, min(qos, max(s.qos for s in counted)), as_published,
                          ids if session.level == 5 else ())
            if session.connected:
                out[client_id] = [message]
            elif message.qos:
                # Queued as the broker will send it: the identifiers decided now.
                session.queue.append(Msg(message.topic, message.payload, message.qos,
                                         message.retain, ids))
        return out
