"""Actors layer: TopicActor, one per concrete topic. Stdlib, pykka, supervisors, session.

A topic actor holds the subscribers whose filters match its topic (exact and
wildcard: ``client id -> {filter: (granted QoS, epoch)}``, computed by the
registry when it starts the actor and kept current by ``SubscribersChanged``) and a
copy of the topic's retained message (the registry's index is the
authority). On each ``PublishBatch`` it tells every subscribing session one
``Deliver`` with the whole batch: one copy per client at the highest QoS
granted by its matching subscriptions of the newest epoch (Mosquitto's
behaviour for 3.1.1; the session lowers it to each message's QoS and ignores
a Deliver of an epoch that is not its own). Sessions are found by name; a
subscriber with no running session actor (it crashed and is restarting)
has the messages counted as dropped (``session_unavailable``).

MQTT 5: a client whose matching subscriptions carry options (No Local,
Retain As Published, Subscription Identifiers) gets ``DeliverMatched`` with
those subscriptions instead, and the session applies them per message
(:mod:`actorbroker.session.suboptions`); shared subscriptions
(:mod:`.shared`) get each message to one member of each group.

Idle: with no subscriber, no retained message and no publish for
``topic_idle`` seconds, the actor tells the registry ``TopicIdle``. The
registry, which alone starts and names topic actors, decides: if it also
sees nothing for the topic it removes the name and tells ``StopTopic``.
Deciding in the registry closes the race with a concurrent subscription: a
subscription the registry handles after removing the name creates a new
topic actor for the next publish instead of joining one that is stopping.
"""

from __future__ import annotations

import logging
from typing import Any

from pykka import ActorDeadError

from actorbroker.session import AppMessage
from supervisors import LoopActor

from .messages import (
    Deliver,
    DeliverMatched,
    DeliverShared,
    PublishBatch,
    StopTopic,
    SubscribersChanged,
    Timer,
    TopicIdle,
)
from .faults import CrashForTest, crash_for_test
from .node import Node
from .keeper import Sleeping
from .shared import Reachable, SharedSlots, queue_asleep

__all__ = ["TopicActor"]

log = logging.getLogger("actorbroker.topic")

_IDLE = Timer("idle")

Grant = tuple[Any, ...]  # (granted QoS, epoch), or (QoS, epoch, SubOptions) for MQTT 5 options


def _effective(filters: dict[str, Grant]) -> tuple[int, int]:
    """The copy a client gets: the newest epoch, the highest QoS granted in it."""
    if len(filters) == 1:  # the common case, on every topic actor start: no generators
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


class TopicActor(LoopActor):
    """Subscribers and retained copy of one topic (see the module doc)."""

    def __init__(self, topic: str, subscribers: dict[str, dict[str, Grant]],
                 retained: AppMessage | None, node: Node,
                 shared: dict[str, dict[str, Grant]] | None = None) -> None:
        super().__init__()
        self.topic = topic
        self._node = node
        self._subs = subscribers
        self._grant = {cid: _effective(filters) for cid, filters in subscribers.items()}
        self._optioned: dict[str, tuple[Any, ...]] = {}  # client -> matches, if options
        for cid, filters in subscribers.items():
            self._set_options(cid, filters)
        self._shared = SharedSlots(shared, node.settings.shared_strategy)
        self._retained = retained
        self._busy = False  # a publish since the last idle check
        self._timer: Any = None

    @property
    def subscribers(self) -> dict[str, int]:
        """Client id -> the QoS its copy is delivered at (the highest granted)."""
        return {cid: qos for cid, (qos, _) in self._grant.items()}

    @property
    def retained(self) -> AppMessage | None:
        """This topic's retained message (a copy of the registry's)."""
        return self._retained

    def on_start(self) -> None:
        self._arm_idle()

    def on_stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def on_receive(self, message: Any) -> None:
        cls = type(message)
        if cls is PublishBatch:
            self._publish(message.messages)
        elif cls is SubscribersChanged:
            self._change(message.changes)
        elif cls is Timer:
            self._idle_check()
        elif cls is StopTopic:
            self.stop()
        elif cls is CrashForTest:
            crash_for_test(self._node.settings, f"topic {self.topic!r}", message)
        else:
            raise TypeError(f"topic {self.topic!r}: unexpected message {message!r}")

    def _publish(self, messages: tuple[AppMessage, ...]) -> None:
        self._busy = True
        for message in messages:
            if message.retain:
                # [MQTT-3.3.1-10]/[MQTT-3.3.1-11]: an empty payload clears it.
                self._retained = message if message.payload else None
        if self._retained is None and self._timer is None:
            self._arm_idle()
        if self._shared.groups:
            self._publish_shared(messages)
        if not self._grant:
            return
        sessions = self._node.names.sessions
        optioned = self._optioned
        for client_id, (qos, epoch) in self._grant.items():
            ref = sessions.get(client_id)
            if ref is not None:
                try:
                    if optioned and client_id in optioned:
                        ref.tell(DeliverMatched(messages, epoch, optioned[client_id]))
                    else:
                        ref.tell(Deliver(messages, qos, epoch))
                    continue
                except ActorDeadError:
                    pass
            self._node.metrics.drop("session_unavailable", len(messages),
                                    client_id=client_id, topic=self.topic)

    def _publish_shared(self, messages: tuple[AppMessage, ...]) -> None:
        """Each message to one member of each matching shared group (see :mod:`.shared`)."""
        node = self._node
        names, storage = node.names, node.refs.storage
        sessions = names.sessions
        for client_id, whole, grant, final, batch in self._shared.route(
                messages, names.online, Reachable(sessions, storage)):
            ref: Any = sessions.get(client_id) if client_id else None  # or a Sleeping
            lost = len(batch)
            if ref is not None and type(ref) is not Sleeping:
                try:
                    ref.tell(DeliverShared(tuple(batch), grant[0], grant[1], whole, final,
                                           grant[2] if len(grant) > 2 else None))
                    lost = 0
                except ActorDeadError:
                    ref = sessions.get(client_id)  # it may have hibernated meanwhile
            if type(ref) is Sleeping:
                lost = queue_asleep(storage, client_id, batch, grant)
            if lost:
                node.metrics.drop("shared_unavailable", lost, client_id=client_id or None,
                                  topic=self.topic)

    def _set_options(self, client_id: str, filters: dict[str, Grant]) -> None:
        found = _matches(filters, self._grant[client_id][1])
        if found is None:
            self._optioned.pop(client_id, None)
        else:
            self._optioned[client_id] = found

    def _change(self, changes: tuple[tuple[str, Any, Grant | None], ...]) -> None:
        subs, grant = self._subs, self._grant
        for client_id, topic_filter, granted in changes:
            if type(topic_filter) is not str:  # a SharedFilter: MQTT 5 $share/{group}/{filter}
                self._shared.change(client_id, str(topic_filter), granted)
                continue
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
                    self._optioned.pop(client_id, None)
        if not subs and not self._shared:
            self._arm_idle()

    def _idle(self) -> bool:
        return not self._subs and not self._shared and self._retained is None

    def _arm_idle(self) -> None:
        if self._timer is None and self._idle():
            self._timer = self.actor_loop.call_later(
                self._node.settings.topic_idle, self._fire)

    def _fire(self) -> None:
        self._timer = None
        try:
            self.actor_ref.tell(_IDLE)
        except ActorDeadError:
            pass

    def _idle_check(self) -> None:
        if not self._idle():
            return  # armed again when it becomes idle
        if self._busy:
            self._busy = False
        else:
            registry = self._node.refs.registry
            if registry is not None:
                registry.tell(TopicIdle(self.topic, self.actor_ref))
        self._arm_idle()
