"""Actors layer: the plain subscribers of one topic and their delivery, for topic actors and the registry. Stdlib, pykka, session.

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
:func:`deliver_once`, which applies the same rules to the trie's matches
without building the tables (one publish uses them once). Shared subscriptions are not here (see
:mod:`.shared`).
"""

from __future__ import annotations

from typing import Any

from pykka import ActorDeadError

from actorbroker.session import AppMessage

from .messages import Deliver, DeliverMatched

__all__ = ["Grant", "TopicSubscribers", "deliver_once"]

Grant = tuple[Any, ...]  # (granted QoS, epoch), or (QoS, epoch, SubOptions) for MQTT 5 options


def _effective(filters: dict[str, Grant]) -> tuple[int, int]:
    """The copy a client gets: the newest epoch, the highest QoS granted in it."""
    if len(filters) == 1:  # the common case: no generators
        for g in filters.values():
            return g[0], g[1]
    epoch = max(g[1] for g in filters.values())
    return max(g[0] for g in filters.values() if g[1] == epoch), epoch


def _matches(filters: dict[str, Grant], epoch: int) -> tuple[Any, ...] | None:
    """(QoS, options) of the newest epoch's subscriptions when one has options, else None."""
    if len(filters) == 1:
        for g in filters.values():
            return None if len(g) == 2 or g[1] != epoch else ((g[0], g[2]),)
    newest = [g for g in filters.values() if g[1] == epoch]
    if all(len(g) == 2 for g in newest):
        return None
    return tuple((g[0], g[2] if len(g) > 2 else None) for g in newest)


class TopicSubscribers:
    """The non-shared subscribers of one topic (see the module doc)."""

    __slots__ = ("grant", "optioned", "subs")

    def __init__(self, subscribers: dict[str, dict[str, Grant]]) -> None:
        self.subs = subscribers
        self.grant = {cid: _effective(filters) for cid, filters in subscribers.items()}
        self.optioned: dict[str, tuple[Any, ...]] = {}  # client -> matches, if options
        for cid, filters in subscribers.items():
            self._set_options(cid, filters)

    def __bool__(self) -> bool:
        return bool(self.grant)

    def _set_options(self, client_id: str, filters: dict[str, Grant]) -> None:
        found = _matches(filters, self.grant[client_id][1])
        if found is None:
            self.optioned.pop(client_id, None)
        else:
            self.optioned[client_id] = found

    def change(self, client_id: str, topic_filter: str, granted: Grant | None) -> None:
        """``client_id``'s subscription ``topic_filter`` is now ``granted`` (None: removed)."""
        subs, grant = self.subs, self.grant
        filters = subs.get(client_id)
        if granted is not None:
            if filters is None:
                filters = subs[client_id] = {}
            filters[topic_filter] = granted
            grant[client_id] = _effective(filters)
            self._set_options(client_id, filters)
        elif filters is not None:
            filters.pop(topic_filter, None)
            if filters:
                grant[client_id] = _effective(filters)
                self._set_options(client_id, filters)
            else:
                del subs[client_id]
                del grant[client_id]
                self.optioned.pop(client_id, None)

    def deliver(self, messages: tuple[AppMessage, ...], sessions: dict[str, Any],
                metrics: Any, topic: str) -> None:
        """Tell each subscriber's session the batch; a session with no running actor (it
        crashed and is restarting) has it counted as dropped (``session_unavailable``)."""
        optioned = self.optioned
        for client_id, (qos, epoch) in self.grant.items():
            _tell(sessions.get(client_id), messages, qos, epoch,
                  optioned.get(client_id) if optioned else None, metrics, client_id, topic)


def deliver_once(subscribers: dict[str, dict[str, Grant]], messages: tuple[AppMessage, ...],
                 sessions: dict[str, Any], metrics: Any, topic: str) -> None:
    """``TopicSubscribers(subscribers).deliver(...)`` without its tables: a cold topic's
    publish, where building them cost more than the delivery itself."""
    for client_id, filters in subscribers.items():
        if len(filters) == 1:  # the common case: the one subscription decides
            for g in filters.values():
                qos, epoch, matches = g[0], g[1], None if len(g) == 2 else ((g[0], g[2]),)
        else:
            qos, epoch = _effective(filters)
            matches = _matches(filters, epoch)
        _tell(sessions.get(client_id), messages, qos, epoch, matches, metrics, client_id, topic)


def _tell(ref: Any, messages: tuple[AppMessage, ...], qos: int, epoch: int,
          matches: tuple[Any, ...] | None, metrics: Any, client_id: str, topic: str) -> None:
    if ref is not None:
        try:
            ref.tell(Deliver(messages, qos, epoch) if matches is None
                     else DeliverMatched(messages, epoch, matches))
            return
        except ActorDeadError:
            pass
    metrics.drop("session_unavailable", len(messages), client_id=client_id, topic=topic)
