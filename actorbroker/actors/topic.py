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

from .messages import Deliver, PublishBatch, StopTopic, SubscribersChanged, Timer, TopicIdle
from .node import Node

__all__ = ["TopicActor"]

log = logging.getLogger("actorbroker.topic")

_IDLE = Timer("idle")

Grant = tuple[int, int]  # (granted QoS, epoch)


def _effective(filters: dict[str, Grant]) -> Grant:
    """The copy a client gets: the newest epoch, the highest QoS granted in it."""
    epoch = max(e for _, e in filters.values())
    return max(q for q, e in filters.values() if e == epoch), epoch


class TopicActor(LoopActor):
    """Subscribers and retained copy of one topic (see the module doc)."""

    def __init__(self, topic: str, subscribers: dict[str, dict[str, Grant]],
                 retained: AppMessage | None, node: Node) -> None:
        super().__init__()
        self.topic = topic
        self._node = node
        self._subs = subscribers
        self._grant = {cid: _effective(filters) for cid, filters in subscribers.items()}
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
        if not self._grant:
            return
        sessions = self._node.names.sessions
        for client_id, (qos, epoch) in self._grant.items():
            ref = sessions.get(client_id)
            if ref is not None:
                try:
                    ref.tell(Deliver(messages, qos, epoch))
                    continue
                except ActorDeadError:
                    pass
            self._node.metrics.drop("session_unavailable", len(messages),
                                    client_id=client_id, topic=self.topic)

    def _change(self, changes: tuple[tuple[str, str, Grant | None], ...]) -> None:
        subs, grant = self._subs, self._grant
        for client_id, topic_filter, granted in changes:
            filters = subs.get(client_id)
            if granted is not None:
                if filters is None:
                    filters = subs[client_id] = {}
                filters[topic_filter] = granted
                grant[client_id] = _effective(filters)
            elif filters is not None:
                filters.pop(topic_filter, None)
                if filters:
                    grant[client_id] = _effective(filters)
                else:
                    del subs[client_id]
                    del grant[client_id]
        if not subs:
            self._arm_idle()

    def _idle(self) -> bool:
        return not self._subs and self._retained is None

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
