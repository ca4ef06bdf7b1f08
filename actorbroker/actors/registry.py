"""Actors layer: RegistryActor, the node's subscription table, retained index and topic actors. Stdlib, pykka, supervisors, routing, session, codec.

The registry is the only writer of subscriptions, so subscribing and
unsubscribing are ordered; it owns:

* the filter trie (:class:`~actorbroker.routing.FilterTrie`): filter ->
  ``{client id: (granted QoS, epoch)}``, and the same per client (epochs:
  see :mod:`.messages`);
* the retained index (:class:`~actorbroker.routing.RetainedIndex`), the
  authoritative copy: it survives any topic actor;
* the live topic actors, in a second ``RetainedIndex`` (topic -> ref) so
  that a new filter finds every running topic actor it matches; the registry
  alone starts them (under the Topics sharded supervisor, as temporary
  children it monitors), names them in the name table and stops them.

On ``AddSubscriptions`` it updates the trie, tells every matching topic
actor ``SubscribersChanged`` and only then answers the session
(``SubscriptionsAdded`` with the matching retained messages, one per topic):
a publish sent after the client saw its SUBACK is behind the change in the
topic actor's inbox. ``RouteViaRegistry`` updates the retained index (an
empty payload clears it, [MQTT-3.3.1-10]/[MQTT-3.3.1-11]), starts the topic
actor if there is none (awaiting its start: the registry stays sequential
meanwhile), forwards the batch and answers ``Routed``.

A topic actor that dies is forgotten (Down); the next publish to its topic
starts a new one with the current subscribers and retained message, so a
crash costs at most the batches that were in its inbox. The registry never
asks a session or a topic actor (never ask around a cycle).
"""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

from pykka import ActorDeadError, ActorRef

from actorbroker.codec import Subscription
from actorbroker.routing import FilterTrie, RetainedIndex
from actorbroker.session import AppMessage
from supervisors import (
    ChildSpec,
    Down,
    LoopActor,
    Restart,
    demonitor,
    is_abnormal,
    monitor,
    start_sharded_child,
)

from .messages import (
    AddSubscriptions,
    PublishBatch,
    RemoveSubscriptions,
    RouteViaRegistry,
    Routed,
    SessionEnded,
    SessionStarted,
    SessionSubscriptions,
    StopTopic,
    SubscribersChanged,
    SubscriptionsAdded,
    SubscriptionsRemoved,
    TopicIdle,
)
from .node import Node
from .topic import TopicActor

__all__ = ["RegistryActor"]

log = logging.getLogger("actorbroker.registry")

Grant = tuple[int, int]  # (granted QoS, epoch)
Change = tuple[str, str, Grant | None]


def _tell(ref: ActorRef[Any] | None, message: Any) -> None:
    if ref is None:
        return
    try:
        ref.tell(message)
    except ActorDeadError:
        pass  # a session or topic that just died; its successor resyncs


class RegistryActor(LoopActor):
    """Subscriptions, retained messages and topic actors of one node (see the module doc)."""

    def __init__(self, node: Node) -> None:
        super().__init__()
        self._node = node
        self._trie: FilterTrie[str, Grant] = FilterTrie()
        self._clients: dict[str, dict[str, Grant]] = {}  # client id -> filter -> grant
        self._clean: dict[str, bool] = {}  # client id -> Clean Session of its last SUBSCRIBE
        self._retained: RetainedIndex[AppMessage] = RetainedIndex()
        self._live: RetainedIndex[ActorRef[Any]] = RetainedIndex()
        self._monitors: dict[ActorRef[Any], tuple[str, Any]] = {}  # ref -> (topic, monitor)

    # -- views (for tests and $SYS; loop thread) -------------------------------

    @property
    def subscription_count(self) -> int:
        """(filter, client) pairs."""
        return len(self._trie)

    def subscriptions_of(self, client_id: str) -> dict[str, int]:
        """Filter -> granted QoS of one client."""
        return {f: qos for f, (qos, _) in self._clients.get(client_id, {}).items()}

    def retained_message(self, topic: str) -> AppMessage | None:
        """The retained message of ``topic``, if any."""
        return self._retained.get(topic)

    def live_topics(self) -> list[str]:
        """Topics with a running topic actor."""
        return list(self._live.topics())

    # -- messages --------------------------------------------------------------

    def on_receive(self, message: Any) -> Any:
        cls = type(message)
        if cls is RouteViaRegistry:
            return self._route(message)
        if cls is AddSubscriptions:
            self._subscribe(message)
        elif cls is RemoveSubscriptions:
            self._unsubscribe(message)
        elif cls is SessionEnded:
            self._drop_client(message.client_id)
        elif cls is SessionStarted:
            return self._session_started(message.client_id)
        elif cls is TopicIdle:
            self._topic_idle(message.topic, message.ref)
        elif cls is Down:
            self._topic_down(message.ref, message.reason)
        else:
            raise TypeError(f"registry: unexpected message {message!r}")
        return None

    # -- subscriptions ---------------------------------------------------------

    def _subscribe(self, request: AddSubscriptions) -> None:
        client_id = request.client_id
        self._clean[client_id] = request.clean
        client = self._clients.setdefault(client_id, {})
        changes: dict[ActorRef[Any], list[Change]] = {}
        retained: dict[str, AppMessage] = {}
        for sub in request.subscriptions:
            topic_filter, grant = sub.topic_filter, (sub.qos, request.epoch)
            self._trie.add(topic_filter, client_id, grant)
            client[topic_filter] = grant
            for _, ref in self._live.match(topic_filter):
                changes.setdefault(ref, []).append((client_id, topic_filter, grant))
            for topic, message in self._retained.match(topic_filter):
                retained[topic] = message
        self._notify(changes)
        self._node.metrics.subscriptions = len(self._trie)
        _tell(request.reply_to,
              SubscriptionsAdded(request.packet_id, None, tuple(retained.values())))

    def _unsubscribe(self, request: RemoveSubscriptions) -> None:
        self._remove(request.client_id, request.topic_filters)
        if request.packet_id is not None:
            _tell(request.reply_to, SubscriptionsRemoved(request.packet_id))

    def _remove(self, client_id: str, topic_filters: tuple[str, ...] | list[str]) -> None:
        client = self._clients.get(client_id)
        changes: dict[ActorRef[Any], list[Change]] = {}
        for topic_filter in topic_filters:
            if not self._trie.remove(topic_filter, client_id):
                continue  # never subscribed (or a malformed filter: nothing to find)
            if client is not None:
                client.pop(topic_filter, None)
            for _, ref in self._live.match(topic_filter):
                changes.setdefault(ref, []).append((client_id, topic_filter, None))
        if client is not None and not client:
            del self._clients[client_id]
            self._clean.pop(client_id, None)
        self._notify(changes)
        self._node.metrics.subscriptions = len(self._trie)

    def _drop_client(self, client_id: str) -> None:
        filters = list(self._clients.get(client_id, ()))
        if filters:
            self._remove(client_id, filters)
        self._clean.pop(client_id, None)

    def _notify(self, changes: dict[ActorRef[Any], list[Change]]) -> None:
        for ref, items in changes.items():
            _tell(ref, SubscribersChanged(tuple(items)))

    def _session_started(self, client_id: str) -> SessionSubscriptions:
        """A session actor starts: the subscriptions to resume, if its session was persistent."""
        if self._clean.get(client_id, False):
            # A clean session's actor died without ending it: nothing of it survives.
            self._drop_client(client_id)
            return SessionSubscriptions((), 0)
        client = self._clients.get(client_id)
        if not client:
            return SessionSubscriptions((), 0)
        epoch = max(e for _, e in client.values())
        return SessionSubscriptions(
            tuple(Subscription(f, q) for f, (q, e) in client.items() if e == epoch), epoch)

    # -- publishing ------------------------------------------------------------

    def _route(self, request: RouteViaRegistry) -> Any:
        topic, messages = request.topic, request.messages
        for message in messages:
            if message.retain:
                self._retain(message)
        ref = self._live.get(topic)
        if ref is not None:
            try:
                ref.tell(PublishBatch(messages))
                _tell(request.reply_to, Routed(topic))
                return None
            except ActorDeadError:
                self._forget(topic, ref)
        return self._start_and_route(request)

    async def _start_and_route(self, request: RouteViaRegistry) -> None:
        topic = request.topic
        try:
            ref = await self._start_topic(topic)
            ref.tell(PublishBatch(request.messages))
        except Exception as exc:
            # Normal while the tree stops (the Topics supervisor goes before the registry).
            sup = self._node.refs.topics
            level = logging.ERROR if sup is not None and sup.is_alive() else logging.INFO
            log.log(level, "topic %r: could not start its topic actor: %r", topic, exc)
            self._node.metrics.drop("topic_unavailable", len(request.messages), topic=topic)
        _tell(request.reply_to, Routed(topic))

    def _retain(self, message: AppMessage) -> None:
        topic, index = message.topic, self._retained
        if not message.payload:
            index.delete(topic)
        elif topic in index or not self._node.settings.max_retained or (
                len(index) < self._node.settings.max_retained):
            index.set(topic, message)
        else:
            self._node.metrics.drop("retained_limit", client_id=message.publisher, topic=topic)
        self._node.metrics.retained = len(index)

    async def _start_topic(self, topic: str) -> ActorRef[Any]:
        subscribers: dict[str, dict[str, Grant]] = {}
        for topic_filter, members in self._trie.match_filters(topic):
            for client_id, grant in members.items():
                subscribers.setdefault(client_id, {})[topic_filter] = grant
        node = self._node
        sup = node.refs.topics
        if sup is None:
            raise RuntimeError("the Topics supervisor is not running")
        spec = ChildSpec(
            id=topic,
            start=partial(TopicActor.start, topic, subscribers, self._retained.get(topic), node),
            restart=Restart.TEMPORARY,
        )
        ref: ActorRef[Any] = await start_sharded_child(sup, topic, spec)
        self._monitors[ref] = (topic, monitor(ref, self.actor_ref))
        self._live.set(topic, ref)
        node.names.register_topic(topic, ref)
        node.metrics.topics = len(self._live)
        return ref

    # -- topic actors ending -----------------------------------------------------

    def _forget(self, topic: str, ref: ActorRef[Any]) -> None:
        if self._live.get(topic) is ref:
            self._live.delete(topic)
        self._node.names.unregister_topic(topic, ref)
        entry = self._monitors.pop(ref, None)
        if entry is not None:
            demonitor(entry[1])
        self._node.metrics.topics = len(self._live)

    def _topic_idle(self, topic: str, ref: ActorRef[Any]) -> None:
        if self._live.get(topic) is not ref:
            return
        if topic in self._retained or self._trie.match_filters(topic):
            return  # the topic actor hears of it (SubscribersChanged / PublishBatch)
        self._forget(topic, ref)
        _tell(ref, StopTopic())

    def _topic_down(self, ref: ActorRef[Any], reason: Any) -> None:
        entry = self._monitors.get(ref)
        if entry is None:
            return
        topic = entry[0]
        if is_abnormal(reason):
            log.warning("topic actor of %r exited (%s); the next publish starts a new one",
                        topic, reason)
        self._forget(topic, ref)

