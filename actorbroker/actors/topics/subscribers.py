"""Actors layer: the plain subscribers of one topic and their delivery, for topic actors and the registry. Stdlib, supervisors, session.

:class:`TopicSubscribers` holds ``client id -> {filter: grant}`` for one
concrete topic (the registry's trie matched it) and what follows from it:
the copy each client gets (one per client, at the highest QoS granted by its
matching subscriptions of the newest epoch: Mosquitto's behaviour for
3.1.1) and, for MQTT 5 subscriptions with options, the matching
subscriptions themselves. :meth:`~TopicSubscribers.deliver` tells every
subscribing session one ``Deliver`` (or ``DeliverMatched``) with a whole
batch.

A topic actor keeps one for its lifetime and updates it on
``SubscribersChanged``; the registry delivers a publish to a *cold* topic,
one without a topic actor (see :mod:`.registry`), with
:func:`deliver_once`, which applies the same rule (``_copy``) to the trie's
matches without keeping a table. Shared subscriptions are not here (see
:mod:`.shared_groups`).
"""

from __future__ import annotations

from collections.abc import Mapping

from actorbroker.metrics import BrokerMetrics
from actorbroker.ports import ReadCredit
from actorbroker.session import AppMessage
from actorbroker.session.suboptions import Match
from supervisors import Teller, tell_if_alive

from ..messages import Deliver, DeliverMatched
from .grants import Grant

__all__ = ["TopicSubscribers", "deliver_once"]

Copy = tuple[int, int, "tuple[Match, ...] | None"]  # (QoS, epoch, matches) of a client's copy


def _copy(filters: dict[str, Grant]) -> Copy:
    """The copy a client gets from its matching subscriptions ``filters``.

    The newest epoch decides; the highest QoS granted in it; and, when one
    of that epoch's subscriptions has MQTT 5 options, ``(QoS, options)`` of
    each of them (else None).
    """
    if len(filters) == 1:  # the common case: the one subscription decides
        for g in filters.values():
            return g.qos, g.epoch, None if g.options is None else ((g.qos, g.options),)
    epoch = max(g.epoch for g in filters.values())
    newest = [g for g in filters.values() if g.epoch == epoch]
    qos = max(g.qos for g in newest)
    if all(g.options is None for g in newest):
        return qos, epoch, None
    return qos, epoch, tuple((g.qos, g.options) for g in newest)


class TopicSubscribers:
    """The non-shared subscribers of one topic (see the module doc)."""

    __slots__ = ("copies", "subs")

    def __init__(self, subscribers: dict[str, dict[str, Grant]]) -> None:
        self.subs = subscribers
        #: Client id -> the copy it gets (see ``_copy``).
        self.copies = {cid: _copy(filters) for cid, filters in subscribers.items()}

    def __bool__(self) -> bool:
        return bool(self.copies)

    def change(self, client_id: str, topic_filter: str, granted: Grant | None) -> None:
        """``client_id``'s subscription ``topic_filter`` is now ``granted`` (None: removed)."""
        subs = self.subs
        filters = subs.get(client_id)
        if granted is not None:
            if filters is None:
                filters = subs[client_id] = {}
            filters[topic_filter] = granted
        elif filters is not None:
            filters.pop(topic_filter, None)
            if not filters:
                del subs[client_id]
                del self.copies[client_id]
                return
        else:
            return
        self.copies[client_id] = _copy(filters)

    def deliver(self, messages: tuple[AppMessage, ...], sessions: Mapping[str, Teller],
                metrics: BrokerMetrics, topic: str, credit: ReadCredit | None) -> None:
        """Tell each subscriber's session the batch; a session with no running actor (it
        crashed and is restarting) has it counted as dropped (``session_unavailable``).

        Each Deliver carries the publisher's ``credit``, held once per session
        told (the caller still holds its own)."""
        copies = self.copies
        if credit is not None:
            credit.hold(len(copies))
        for client_id, (qos, epoch, matches) in copies.items():
            _tell(sessions.get(client_id), messages, qos, epoch, matches, metrics, client_id,
                  topic, credit)


def deliver_once(subscribers: dict[str, dict[str, Grant]], messages: tuple[AppMessage, ...],
                 sessions: Mapping[str, Teller], metrics: BrokerMetrics, topic: str,
                 credit: ReadCredit | None) -> None:
    """``TopicSubscribers(subscribers).deliver(...)`` without keeping its table: a cold
    topic's publish, which uses it once."""
    if credit is not None:
        credit.hold(len(subscribers))
    for client_id, filters in subscribers.items():
        qos, epoch, matches = _copy(filters)
        _tell(sessions.get(client_id), messages, qos, epoch, matches, metrics, client_id, topic,
              credit)


def _tell(ref: Teller | None, messages: tuple[AppMessage, ...], qos: int, epoch: int,
          matches: tuple[Match, ...] | None, metrics: BrokerMetrics, client_id: str, topic: str,
          credit: ReadCredit | None) -> None:
    if ref is not None and tell_if_alive(ref, Deliver(messages, qos, epoch, credit)
                                         if matches is None
                                         else DeliverMatched(messages, epoch, matches, credit)):
        return
    if credit is not None:
        credit.take()  # held for this session, which will not take it (never the last hold)
    metrics.drop("session_unavailable", len(messages), client_id=client_id, topic=topic)
