"""Actors layer: TopicActor, one per concrete topic. Stdlib, pykka, supervisors, session.

A topic actor holds the subscribers whose filters match its topic (exact and
wildcard: ``client id -> {filter: Grant}`` (:mod:`.grants`), computed by the
registry when it starts the actor and kept current by ``SubscribersChanged``);
retained messages are the registry's. On each ``PublishBatch`` it tells every subscribing session one
``Deliver`` with the whole batch (:class:`~.subscribers.TopicSubscribers`:
one copy per client at the highest QoS granted by its matching subscriptions
of the newest epoch; the session lowers it to each message's QoS and ignores
a Deliver of an epoch that is not its own).

MQTT 5: a client whose matching subscriptions carry options (No Local,
Retain As Published, Subscription Identifiers) gets ``DeliverMatched`` with
those subscriptions instead, and the session applies them per message
(:mod:`actorbroker.session.suboptions`); shared subscriptions
(:mod:`.shared_groups`) get each message to one member of each group.

Topic actors are for hot topics: the registry starts one when a topic is
published to again soon after (or matches a shared group) and delivers a
cold topic's publish itself (see :mod:`.registry`). Idle: with no publish for
``topic_idle`` seconds, the actor tells the registry ``TopicIdle`` (its
subscribers are in the registry's trie, its shared groups in the registry's
index, for the next start). The registry, which alone starts and names topic
actors, decides: if the actor is still the topic's, it removes the name and
tells ``StopTopic``. Deciding in the
registry closes the race with a concurrent subscription: a subscription the
registry handles after removing the name reaches the next start instead of
an actor that is stopping.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from actorbroker.ports import ReadCredit
from actorbroker.routing import SharedFilter
from actorbroker.session import AppMessage
from supervisors import LoopActor, send_after, tell_if_alive

from ..faults import CrashForTest, crash_for_test
from ..messages import (
    DeliverShared,
    PublishBatch,
    RedeliverShared,
    StopTopic,
    SubscribersChanged,
    Timer,
    TopicIdle,
)
from ..names import Asleep, Singleton, Waking
from ..node import Node
from .grants import NO_GRANT, Grant
from .shared_groups import Reachable, SharedSlots, journal_routed
from .subscribers import TopicSubscribers

__all__ = ["TopicActor"]

log = logging.getLogger("actorbroker.topic")

_IDLE = Timer("idle")


class TopicActor(LoopActor):
    """The subscribers and shared groups of one hot topic (see the module doc)."""

    def __init__(self, topic: str, subscribers: dict[str, dict[str, Grant]], node: Node,
                 shared: dict[str, dict[str, Grant]] | None = None) -> None:
        super().__init__()
        self.topic = topic
        self._node = node
        self._subs = TopicSubscribers(subscribers)
        self._shared = SharedSlots(shared, node.settings.shared_strategy)
        self._busy = False  # a publish since the last idle check
        self._timer: asyncio.TimerHandle | None = None
        #: Messages published to the topic through this actor (the busiest-topics view).
        self.published = 0

    @property
    def subscribers(self) -> dict[str, int]:
        """Client id -> the QoS its copy is delivered at (the highest granted)."""
        return {cid: qos for cid, (qos, _, _) in self._subs.copies.items()}

    def on_start(self) -> None:
        self._arm_idle()

    def on_stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def on_receive(self, message: Any) -> None:
        cls = type(message)
        if cls is PublishBatch:
            self._publish(message.messages, message.credit)
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

    def _publish(self, messages: tuple[AppMessage, ...], credit: ReadCredit | None) -> None:
        self._busy = True
        self.published += len(messages)
        if self._shared.groups:
            self._publish_shared(messages, credit)
        if self._subs:
            node = self._node
            self._subs.deliver(messages, node.names.sessions, node.metrics, self.topic, credit)
        if credit is not None:
            credit.take()  # the batch's own hold: the Delivers hold it now

    def _publish_shared(self, messages: tuple[AppMessage, ...], credit: ReadCredit | None
                        ) -> None:
        """Each message to one member of each matching shared group (see :mod:`.shared_groups`);
        each ``DeliverShared`` told holds the publisher's ``credit``, as a ``Deliver`` does."""
        node = self._node
        names, storage = node.names, node.names.storage()
        sessions = names.sessions
        for client_id, whole, grant, final, batch in self._shared.route(
                messages, names.online, Reachable(sessions, storage)):
            if not client_id:
                self._owe(whole, batch)
                continue
            # Written before the member hears of them: the log orders it before anything
            # the member journals about these messages.
            unqueued = journal_routed(storage, whole, client_id, batch, grant)
            ref: Any = sessions.get(client_id) if client_id else None  # or Asleep/Waking
            lost = len(batch)
            if ref is not None and not isinstance(ref, Asleep | Waking):
                if credit is not None:
                    credit.hold(1)
                if tell_if_alive(ref, DeliverShared(tuple(batch), grant.qos, grant.epoch, whole,
                                                    final, grant.options, credit)):
                    lost = 0
                else:
                    if credit is not None:
                        credit.take()  # never the last hold: the batch keeps its own
                    ref = sessions.get(client_id)  # it may have hibernated meanwhile
            if isinstance(ref, Asleep | Waking):  # the SharedRouted records are its queue
                lost = unqueued
            if lost:
                node.metrics.drop("shared_unavailable", lost, client_id=client_id or None,
                                  topic=self.topic)

    def _owe(self, whole: str, batch: list[AppMessage]) -> None:
        """No member of group ``whole`` can take ``batch`` now: its members' sessions are
        between actors, or the broker is stopping (a SIGTERM's seed 639277478 settled two
        acknowledged QoS 2 messages as undeliverable here, and the restart lost them). The
        logged QoS 1/2 ones stay owed: the registry gives them to the next member session
        that starts (``RedeliverShared`` from nobody); a logged one's ``PublishAccepted`` stays unsettled in
        the log meanwhile, so a restart hands them to a durable member. QoS 0 is
        dropped, counted."""
        node = self._node
        owed = tuple(m for m in batch if m.qos)
        registry = node.names.whereis(Singleton.REGISTRY)
        if owed:  # a dead (stopping) registry: the log keeps them owed for the restart
            tell_if_alive(registry, RedeliverShared("", whole, owed))
        lost = [m for m in batch if not m.qos]
        if lost:
            journal_routed(node.names.storage(), whole, "", lost, NO_GRANT)
            node.metrics.drop("shared_unavailable", len(lost), topic=self.topic)

    def _change(self, changes: tuple[tuple[str, str | SharedFilter, Grant | None], ...]
                ) -> None:
        subs = self._subs
        for client_id, topic_filter, granted in changes:
            if type(topic_filter) is not str:  # a SharedFilter: MQTT 5 $share/{group}/{filter}
                self._shared.change(client_id, str(topic_filter), granted)
            else:
                subs.change(client_id, topic_filter, granted)

    def _arm_idle(self) -> None:
        if self._timer is None:
            self._timer = send_after(self.actor_loop, self.actor_ref,
                                     self._node.settings.topic_idle, _IDLE)

    def _idle_check(self) -> None:
        self._timer = None  # fired: the next idle check arms a new one
        if self._busy:
            self._busy = False
        else:
            registry = self._node.names.whereis(Singleton.REGISTRY)
            if registry is not None:
                registry.tell(TopicIdle(self.topic, self.actor_ref))
        self._arm_idle()
