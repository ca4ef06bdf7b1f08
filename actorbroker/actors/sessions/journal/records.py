"""Actors layer: the commit log records a session core's effects make, and how they may be held. Stdlib, session, durable, persistence.

:func:`derive` reads one core call's effects for :class:`~.log.LogJournal`
(which stashes the records of what the actor saw before and decides what to
hold): a ``PublishAccepted`` per QoS 1/2 message routed (and per Will), the
``WillSent`` of a Will, and for durable sessions the delivery state
(``OutboundSent`` of packets sent, ``SessionDropped``, ``Unsubscribed``,
``SessionExpired``). It also tells whether the effects may be routed before
their records are synced (:attr:`Derived.early`: every logged message is
QoS 1 and nothing else in them must stay ordered with routes; see
:mod:`.hold`), and whether later routes may overtake them
(:attr:`Derived.plain`).

With ``[storage] log_qos0`` a QoS 0 message (or Will) gets its ``PublishAccepted``
too, for the data pipeline, but no route entry: nothing waits for it
(:attr:`Derived.routes` stays empty for it, so it holds nothing, its route
takes no offset and no PUBACK waits; alone it goes to storage with no
reply), and QoS 0 stays out of the delivery state (the fold never queues
it, actorbroker/durable/fold.py).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from actorbroker.durable.journal import handed_back_records, publish_record, sent_records
from actorbroker.persistence.records import (Record, SessionDropped, SessionExpired,
                                             Unsubscribed, WillSent)
from actorbroker.session import (
    Dropped,
    Effect,
    EndSession,
    HandBackShared,
    PublishWill,
    RequestSubscribe,
    RequestUnsubscribe,
    RevokeSubscriptions,
    Route,
    Send,
)

from .hold import NEUTRAL

__all__ = ["Derived", "derive"]


class Derived:
    """What :func:`derive` found in one core call's effects."""

    __slots__ = ("before", "discarded", "early", "plain", "records", "routes", "state")

    def __init__(self) -> None:
        self.records: list[Record] = []  # the PublishAccepted of each logged message, in effect order
        self.routes: list[tuple[int, int]] = []  # (effect index, index in records)
        self.before: list[Record] = []  # WillSent: before any stashed SessionConnected
        self.state: list[Record] = []  # the session's own state (durable sessions)
        self.early = True  # the logged messages are all QoS 1 routes, the rest neutral
        self.plain = True  # neutral effects only (packets, timers, counts)
        self.discarded = False  # the core discarded the session state (RequestUnsubscribe(None))


def derive(effects: list[Effect], cid: str, durable: bool, flights: Callable[[], Any],
           asked: dict[int, deque[Any]], ts: int, log_qos0: bool = False) -> Derived:
    """The records of ``effects`` of client ``cid`` (see the module doc); a SUBSCRIBE asked
    for is noted in ``asked`` (its records come with the registry's answer); ``log_qos0``:
    QoS 0 messages get a ``PublishAccepted`` record that nothing waits for."""
    found = Derived()
    records, routes, state = found.records, found.routes, found.state
    for index, effect in enumerate(effects):
        kind = type(effect)
        if kind is Route:
            assert isinstance(effect, Route)
            found.plain = False
            message = effect.message
            if message.qos and message.log_offset < 0:
                if message.qos != 1:
                    found.early = False
                routes.append((index, len(records)))
                records.append(publish_record(
                    message, None if effect.ack is None else effect.ack.packet_id, ts))
            elif log_qos0 and not message.qos:
                records.append(publish_record(message, None, ts))
            continue
        if kind not in NEUTRAL:
            found.early = found.plain = False
        if kind is Send:
            if durable:
                assert isinstance(effect, Send)
                state += sent_records(cid, effect.packets, flights, ts)
        elif kind is PublishWill:
            assert isinstance(effect, PublishWill)
            message = effect.message
            if message.qos and message.log_offset < 0:
                routes.append((index, len(records)))
                records.append(publish_record(message, None, ts))
            elif log_qos0 and not message.qos:
                records.append(publish_record(message, None, ts))
            found.before.append(WillSent(cid, message.topic, timestamp_us=ts))
        elif kind is Dropped:
            assert isinstance(effect, Dropped)
            if durable and effect.qos and effect.message.log_offset >= 0:
                state.append(SessionDropped(cid, effect.message.log_offset,
                                            effect.reason.value, timestamp_us=ts))
        elif kind is HandBackShared:  # MQTT 5: no longer this session's (queued or in flight)
            assert isinstance(effect, HandBackShared)
            state += handed_back_records(
                cid, ((d.group, d.message) for d in effect.deliveries if d.group is not None),
                durable, ts)
        elif kind is RequestSubscribe:
            assert isinstance(effect, RequestSubscribe)
            asked.setdefault(effect.packet_id, deque()).append(
                (effect.subscriptions, effect.subscription_id))
        elif kind is RequestUnsubscribe:
            assert isinstance(effect, RequestUnsubscribe)
            if effect.packet_id is not None:
                state += [Unsubscribed(cid, f, timestamp_us=ts) for f in effect.topic_filters]
            else:
                found.discarded = True
        elif kind is RevokeSubscriptions:
            assert isinstance(effect, RevokeSubscriptions)
            state += [Unsubscribed(cid, f, timestamp_us=ts) for f in effect.topic_filters]
        elif kind is EndSession:
            state.append(SessionExpired(cid, timestamp_us=ts))
    return found
