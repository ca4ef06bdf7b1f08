"""Actors layer: RegistryActor, the node's subscription table, retained index and topic actors. Stdlib, pykka, supervisors, routing, session, codec.

The registry is the only writer of subscriptions, so subscribing and
unsubscribing are ordered; it owns:

* the filter trie (:class:`~actorbroker.routing.FilterTrie`): filter ->
  ``{client id: Grant}`` (granted QoS, epoch, MQTT 5 options: see
  :mod:`.grants`), and the same per client (epochs: see :mod:`~actorbroker.actors.messages`);
* the retained index (:class:`~actorbroker.routing.RetainedIndex`), the
  authoritative copy: it survives any topic actor;
* the live topic actors (:class:`~.topic_table.TopicTable`: topic -> ref,
  so that a new filter finds every running topic actor it matches); it alone
  starts them (temporary children of the Topics sharded supervisor, which
  it monitors), names them in the name table and stops them.

On ``AddSubscriptions`` it updates the trie, tells every matching topic
actor ``SubscribersChanged`` and only then answers the session
(``SubscriptionsAdded`` with the matching retained messages, one per topic):
a publish sent after the client saw its SUBACK is behind the change in the
topic actor's inbox. ``RouteViaRegistry`` (or ``RouteBatchViaRegistry``,
several topics at once) updates the retained index (an empty payload clears
it, [MQTT-3.3.1-10]/[MQTT-3.3.1-11]), forwards the batch to the topic's actor
if it has one, and answers ``Routed``.

Cold and hot topics: a topic actor pays off for a topic that keeps being
published to (its subscribers are matched once; batches go straight from
the publishing sessions to it). For a topic published to once, or once a
minute, starting an actor (a supervisor round trip, a monitor, a name, a
few KiB) costs far more than the publish, and 100k such topics would hold
100k actors. So the registry delivers a *cold* topic's batch itself: it
matches the trie and tells each subscriber's session, by the same rules a
topic actor applies (:func:`~.subscribers.deliver_once`). A topic with
4 messages within ``topic_hot_window`` seconds or two (:class:`~.topic_table.HotTopics`),
or matching a shared group (whose strategy keeps per-topic turns), is *hot*:
the registry starts its actor (without waiting for it: see
:mod:`.topic_table`), and the actor stops after ``topic_idle`` seconds
without a publish. Order per topic holds across the switch: a publisher's
batches go through the registry until its actor is named (see
:mod:`~actorbroker.actors.publish_route`).

MQTT 5: grants of subscriptions with options carry them
(``Grant.options``); shared subscriptions (``$share/{group}/{filter}`` of an MQTT
5 client) live in a :class:`~.shared_groups.SharedIndex`, reach topic actors as
``SubscribersChanged`` entries whose filter is a ``SharedFilter``, get no
retained messages ([MQTT-3.3.1-9]: only new non-shared subscriptions do),
and ``RedeliverShared`` gives what a leaving member hands back to another
member (see :mod:`.shared_groups`).

A topic actor that dies is forgotten (Down); its topic's next publishes are
routed as a cold topic's or start a new actor: a crash costs at most the
batches in its inbox. The registry never asks a session or a topic actor; it
tells them with ``tell_if_alive``: one that just died has a successor that
resyncs.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

from pykka import ActorRef

from actorbroker.codec import Subscription
from actorbroker.ports import ReadCredit
from actorbroker.routing import FilterTrie, RetainedIndex, SharedFilter, parse_shared
from actorbroker.session import AppMessage
from actorbroker.session.suboptions import SubOptions
from supervisors import Down, ExitReason, LoopActor, Teller, is_abnormal, tell_if_alive

from ..messages import (
    AddSubscriptions,
    DeliverShared,
    PublishBatch,
    RedeliverShared,
    RemoveSubscriptions,
    RouteBatchViaRegistry,
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
    TopicStarted,
)
from ..node import Node
from .grants import NO_GRANT, Grant
from .registry_journal import DurableRegistry
from .registry_slices import (SLICE, Continue, RegistryBacklog, RemoveWork, SlicedSubscriptions,
                               SubscribeWork)
from .shared_groups import Reachable, SharedIndex, hash_key, journal_handed_back, journal_routed, pick
from .subscribers import deliver_once
from .topic import TopicActor
from .topic_table import HotTopics, TopicPort, TopicTable

__all__ = ["RegistryActor"]

log = logging.getLogger("actorbroker.registry")

Change = tuple[str, str | SharedFilter, Grant | None]  # a client's filter, and its grant


class RegistryActor(SlicedSubscriptions, DurableRegistry, LoopActor):
    """Subscriptions, retained messages and topic actors of one node (see the module doc)."""

    def __init__(self, node: Node) -> None:
        super().__init__()
        self._node = node
        self._trie: FilterTrie[str, Grant] = FilterTrie()
        self._clients: dict[str, dict[str, Grant]] = {}  # client id -> filter -> grant
        self._clean: dict[str, bool] = {}  # client id -> Clean Session of its last SUBSCRIBE
        self._retained: RetainedIndex[AppMessage] = RetainedIndex()
        self._own_retained = 0  # of them, the broker's $SYS topics
        self._live = TopicTable(node, self.actor_ref)  # topic -> topic actor (or its port)
        self._shared = SharedIndex(node.settings.shared_strategy)
        #: Group -> messages handed back that no member could take yet (see _redeliver_one).
        self._owed: dict[str, list[AppMessage]] = {}
        self._hot = HotTopics(node.settings.topic_hot_window)
        self._backlog = RegistryBacklog()  # subscription work in slices (registry_slices.py)

    async def on_start(self) -> None:  # type: ignore[override]
        await self._load_durable()  # registry_journal.py: what the commit log holds

    # -- views (for tests, $SYS and the admin API; loop thread) ---------------

    @property
    def subscription_count(self) -> int:
        """(filter, client) pairs."""
        return len(self._trie)

    def subscriptions_of(self, client_id: str) -> dict[str, int]:
        """Filter -> granted QoS of one client."""
        return {f: grant.qos for f, grant in self._clients.get(client_id, {}).items()}

    def shared_members(self, group: str) -> dict[str, int]:
        """Client -> granted QoS of the members of shared subscription ``group``."""
        return {cid: grant.qos for cid, grant in self._shared.members(group).items()}

    def retained_message(self, topic: str) -> AppMessage | None:
        """The retained message of ``topic``, if any."""
        return self._retained.get(topic)

    def retained_matching(self, topic_filter: str) -> list[tuple[str, AppMessage]]:
        """(topic, message) of every retained message a valid ``topic_filter`` matches."""
        return list(self._retained.match(topic_filter))

    def live_topics(self) -> list[str]:
        """Topics with a running topic actor."""
        return self._live.topics()

    # -- messages --------------------------------------------------------------

    def on_receive(self, message: Any) -> Any:
        cls = type(message)
        if cls is Continue:
            self._backlog.scheduled = False
            self._continue(SLICE)
        elif cls is SessionStarted:
            self._continue(None)  # the answer must see every change that came before
            return self._session_started(message.client_id)
        elif self._backlog.must_wait(message):
            self._backlog.append(message)
        else:
            self._dispatch(message)
        return None

    def _dispatch(self, message: Any) -> None:
        cls = type(message)
        if cls is RouteViaRegistry:
            self._route_all(((message.topic, message.messages),), message)
        elif cls is RouteBatchViaRegistry:
            self._route_all(message.routes, message)
        elif cls is AddSubscriptions:
            if len(message.subscriptions) > SLICE:
                self._backlog.push_front(SubscribeWork(message))
                self._continue(SLICE)
            else:
                self._subscribe(message)
        elif cls is RemoveSubscriptions:
            if len(message.topic_filters) > SLICE:
                self._backlog.push_front(RemoveWork(message.client_id, message.topic_filters,
                                                    message.reply_to, message.packet_id))
                self._continue(SLICE)
            else:
                self._unsubscribe(message)
        elif cls is SessionEnded:
            filters = list(self._clients.get(message.client_id, ()))
            if len(filters) > SLICE:
                self._backlog.push_front(RemoveWork(message.client_id, filters, None, None,
                                                    drop=True))
                self._continue(SLICE)
            else:
                self._drop_client(message.client_id)
        elif cls is RedeliverShared:
            self._redeliver(message)
        elif cls is _RetryOwed:
            self._retry_owed(message.client_id)
        elif cls is TopicStarted:
            self._live.started(message)
        elif cls is TopicIdle:
            self._topic_idle(message.topic, message.ref)
        elif cls is Down:
            self._topic_down(message.ref, message.reason)
        else:
            raise TypeError(f"registry: unexpected message {message!r}")

    # -- subscriptions ---------------------------------------------------------

    def _subscribe(self, request: AddSubscriptions) -> None:
        changes: dict[Teller, list[Change]] = {}
        retained: dict[str, AppMessage] = {}
        self._subscribe_range(request, 0, len(request.subscriptions), changes, retained)
        self._subscribed(request, changes, retained)

    def _subscribe_range(self, request: AddSubscriptions, start: int, stop: int,
                         changes: dict[Teller, list[Change]],
                         retained: dict[str, AppMessage]) -> None:
        """Apply ``request.subscriptions[start:stop]``; gather topic actors' changes and
        the retained messages to send."""
        client_id = request.client_id
        self._clean[client_id] = request.clean
        client = self._clients.setdefault(client_id, {})
        v5 = request.protocol_level == 5
        for sub in request.subscriptions[start:stop]:
            topic_filter = sub.topic_filter
            options = SubOptions.of(sub, request.subscription_id) if v5 else None
            grant = Grant(sub.qos, request.epoch, options)
            shared = parse_shared(topic_filter) if v5 else None
            if shared is not None:
                self._shared.add(shared, client_id, grant)
                client[topic_filter] = grant
                for _, ref in self._live.match(shared.filter):
                    changes.setdefault(ref, []).append((client_id, shared, grant))
                continue
            self._trie.add(topic_filter, client_id, grant)
            client[topic_filter] = grant
            for _, ref in self._live.match(topic_filter):
                changes.setdefault(ref, []).append((client_id, topic_filter, grant))
            for topic, message in self._retained.match(topic_filter):
                retained[topic] = message

    def _subscribed(self, request: AddSubscriptions, changes: dict[Teller, list[Change]],
                    retained: dict[str, AppMessage]) -> None:
        """Tell the topic actors, then the session (its SUBACK goes after the changes)."""
        self._notify(changes)
        self._node.metrics.subscriptions = len(self._trie)
        tell_if_alive(request.reply_to,
              SubscriptionsAdded(request.packet_id, None, tuple(retained.values())))

    def _unsubscribe(self, request: RemoveSubscriptions) -> None:
        self._remove(request.client_id, request.topic_filters)
        if request.packet_id is not None:
            tell_if_alive(request.reply_to, SubscriptionsRemoved(request.packet_id))

    def _remove(self, client_id: str, topic_filters: tuple[str, ...] | list[str]) -> None:
        client = self._clients.get(client_id)
        changes: dict[Teller, list[Change]] = {}
        for topic_filter in topic_filters:
            if self._shared.remove(topic_filter, client_id):
                shared = parse_shared(topic_filter)
                assert shared is not None
                if not self._shared.members(topic_filter) and topic_filter in self._owed:
                    self._settle_unavailable(topic_filter, client_id, self._owed.pop(topic_filter))
                if client is not None:
                    client.pop(topic_filter, None)
                for _, ref in self._live.match(shared.filter):
                    changes.setdefault(ref, []).append((client_id, shared, None))
                continue
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

    def _notify(self, changes: dict[Teller, list[Change]]) -> None:
        for ref, items in changes.items():
            tell_if_alive(ref, SubscribersChanged(tuple(items)))

    def _session_started(self, client_id: str) -> SessionSubscriptions:
        """A session actor starts: the subscriptions to resume, if its session was persistent."""
        if self._clean.get(client_id, False):
            # A clean session's actor died without ending it: nothing of it survives.
            self._drop_client(client_id)
            return SessionSubscriptions((), 0)
        client = self._clients.get(client_id)
        if not client:
            return SessionSubscriptions((), 0)
        if self._owed and any(whole in self._owed for whole in client):
            # After the answer, so that the session has its subscriptions back first.
            self.actor_ref.tell(_RetryOwed(client_id))
        epoch = max(g.epoch for g in client.values())
        return SessionSubscriptions(
            tuple(_subscription(f, g) for f, g in client.items() if g.epoch == epoch), epoch)

    # -- shared subscriptions ----------------------------------------------------

    def _redeliver(self, request: RedeliverShared) -> None:
        """Give what a leaving member handed back to another member (see :mod:`.shared_groups`)."""
        for message in request.messages:
            self._redeliver_one(request.group, request.client_id, message)

    def _redeliver_one(self, whole: str, leaving: str, message: AppMessage) -> None:
        group = self._shared.group(whole)
        names = self._node.names
        tried = {leaving}
        while group is not None:
            choice = pick(group, hash_key(message), names.online,
                          Reachable(names.sessions, self._node.names.storage()), tried)
            if choice is None:
                break
            if self._deliver_shared(whole, choice[0], choice[1], message):
                return
            tried.add(choice[0])
        # No other member can take it: the leaving one keeps it while its session lives.
        if self._shared.holds(whole, leaving) and self._deliver_shared(whole, leaving, True, message):
            return
        if group is not None:
            # Members remain but none can take it now (their sessions are between actors,
            # or the broker is stopping): the group still owes it. Its SharedPending stays
            # in force in the log, so a restart hands it to a durable member; until then
            # the next member session to start gets it (_retry_owed).
            self._owed.setdefault(whole, []).append(message)
            return
        self._settle_unavailable(whole, leaving, (message,))

    def _settle_unavailable(self, whole: str, leaving: str,
                            messages: tuple[AppMessage, ...] | list[AppMessage]) -> None:
        """No member is left to take ``messages``: the group owes them no more (counted)."""
        journal_routed(self._node.names.storage(), whole, "", messages, NO_GRANT)
        for message in messages:
            self._node.metrics.drop("shared_unavailable", client_id=leaving, topic=message.topic)

    def _retry_owed(self, client_id: str) -> None:
        """A member's session started: offer it (or another member) what its groups owe."""
        for whole in list(self._clients.get(client_id, ())):
            owed = self._owed.pop(whole, None)
            for message in owed or ():
                self._redeliver_one(whole, "", message)

    def _deliver_shared(self, whole: str, client_id: str, final: bool,
                        message: AppMessage) -> bool:
        grant = self._shared.members(whole)[client_id]
        ref: Any = self._node.names.sessions.get(client_id)  # an ActorRef, Asleep or Waking
        if ref is None:
            return False
        storage = self._node.names.storage()
        unqueued = journal_routed(storage, whole, client_id, (message,), grant)
        if self._node.names.is_asleep(client_id):  # the SharedRouted record is its queue
            return not unqueued
        if not tell_if_alive(ref, DeliverShared((message,), grant.qos, grant.epoch, whole, final,
                                                grant.options)):
            # Gone since: take it out of that member's queue in the log, owed again.
            journal_handed_back(storage, whole, client_id, (message,), True)
            return False
        return True

    # -- publishing ------------------------------------------------------------

    def _route_all(self, routes: tuple[tuple[str, tuple[AppMessage, ...]], ...],
                   message: RouteViaRegistry | RouteBatchViaRegistry) -> None:
        credit = message.credit
        for topic, messages in routes:
            self._route(topic, messages, credit)
        tell_if_alive(message.reply_to, Routed(tuple(topic for topic, _ in routes)))
        if credit is not None:
            credit.take()  # the message's own hold: what it routed holds the credit now

    def _route(self, topic: str, messages: tuple[AppMessage, ...], credit: ReadCredit | None
               ) -> None:  # each PublishBatch or Deliver told holds ``credit``
        for message in messages:
            if message.retain:
                self._retain(message)
        ref = self._live.get(topic)
        if ref is not None:
            if tell_if_alive(ref, PublishBatch(messages, credit)):  # a ref, or a starting one's port
                if credit is not None:
                    credit.hold(1)
                return
            assert isinstance(ref, ActorRef)  # a port holds what it is told: it never dies
            self._forget(topic, ref)
        if self._hot.seen(topic, self.actor_loop.time(), len(messages)) or (
                len(self._shared) and self._shared.match(topic)):
            self._start_topic(topic).tell(PublishBatch(messages, credit))
            if credit is not None:
                credit.hold(1)
            return
        subscribers = self._subscribers(topic)  # cold: no actor (see the module doc)
        if subscribers:
            node = self._node
            deliver_once(subscribers, messages, node.names.sessions, node.metrics, topic, credit)

    def _retain(self, message: AppMessage) -> None:
        self._journal_retained(message)  # registry_journal.py: QoS 0 changes
        topic, index = message.topic, self._retained
        held = topic in index
        if not message.payload:
            index.delete(topic)
        elif held or not self._node.settings.max_retained or (
                len(index) - self._own_retained < self._node.settings.max_retained):
            index.set(topic, message)
        else:
            self._node.metrics.drop("retained_limit", client_id=message.publisher, topic=topic)
        if topic.startswith("$SYS/"):  # the broker's own: neither counted nor limited
            self._own_retained += (topic in index) - held
        self._node.metrics.retained = len(index) - self._own_retained

    def _subscribers(self, topic: str) -> dict[str, dict[str, Grant]]:
        """Client id -> {filter: grant} of the plain subscriptions matching ``topic``."""
        subscribers: dict[str, dict[str, Grant]] = {}
        for topic_filter, members in self._trie.match_filters(topic):
            for client_id, grant in members.items():
                subscribers.setdefault(client_id, {})[topic_filter] = grant
        return subscribers

    def _start_topic(self, topic: str) -> TopicPort:
        """Start the topic actor of ``topic``; return the port that stands for it meanwhile."""
        shared = self._shared.match(topic) if len(self._shared) else None
        return self._live.start(topic, partial(
            TopicActor.start, topic, self._subscribers(topic), self._node, shared))

    # -- topic actors ending -----------------------------------------------------

    def _forget(self, topic: str, ref: ActorRef[Any]) -> None:
        self._live.forget(topic, ref)

    def _topic_idle(self, topic: str, ref: ActorRef[Any]) -> None:
        if self._live.get(topic) is not ref:
            return
        # Its subscribers stay in the trie and its retained message in the index:
        # the next hot publish starts a new actor with both.
        self._forget(topic, ref)
        tell_if_alive(ref, StopTopic())

    def _topic_down(self, ref: ActorRef[Any], reason: ExitReason) -> None:
        topic = self._live.topic_of(ref)
        if topic is None:
            return
        if is_abnormal(reason):
            log.warning("topic actor of %r exited (%s); the next publish starts a new one",
                        topic, reason)
        self._forget(topic, ref)


class _RetryOwed:
    """To itself: a member of groups with owed messages has started its session."""

    __slots__ = ("client_id",)

    def __init__(self, client_id: str) -> None:
        self.client_id = client_id


def _subscription(topic_filter: str, grant: Grant) -> Subscription:
    """The subscription a grant stands for (options included; not the Subscription Identifier)."""
    options = grant.options
    if options is None:
        return Subscription(topic_filter, grant.qos)
    return Subscription(topic_filter, grant.qos, options.no_local, options.retain_as_published)
