"""Actors layer: the registry's table of live topic actors, started without waiting, and which topics are hot. Stdlib, pykka, supervisors, routing.

:class:`TopicTable` is the registry's own state (used from its handlers
only): topic -> the ref of its topic actor, in a
:class:`~actorbroker.routing.RetainedIndex` so that a new filter finds every
running topic actor it matches, with the registry's monitor on each.

Starting a topic actor never suspends the registry. ``start`` asks the
Topics supervisor for a child whose spec has ``wait_start=False`` (the shard
starts it within one handler and replies with the ref at once) and puts a
:class:`TopicPort` in the table meanwhile: whatever the registry tells the
topic in the meantime (``PublishBatch``, ``SubscribersChanged``) is held by
the port, in order. The reply comes back to the registry as
:class:`~actorbroker.actors.messages.TopicStarted`; ``started`` then tells the held messages
to the new actor, and only after that puts its ref in the table and its
name in the name table, so a session that finds the name tells the actor
behind everything the registry forwarded. Until then sessions route the
topic through the registry, which tells the port. Many starts are thus in
flight at once (one per new topic), where awaiting each start would hold
every other request of the registry for several loop turns per topic.

A start that fails drops what the port held (counted ``topic_unavailable``);
the next publish to the topic tries again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

from pykka import ActorDeadError, ActorRef

from actorbroker.routing import RetainedIndex
from supervisors import (
    ChildSpec,
    LoopFuture,
    Monitor,
    Restart,
    Teller,
    demonitor,
    monitor,
    start_sharded_child,
    tell_if_alive,
)

from ..messages import PublishBatch, StopTopic, TopicStarted
from ..names import Singleton
from ..node import Node

__all__ = ["HotTopics", "TopicPort", "TopicTable"]

log = logging.getLogger("actorbroker.registry")


class TopicPort:
    """Stands for a topic actor being started: holds what it is told, in order."""

    __slots__ = ("held", "topic")

    def __init__(self, topic: str) -> None:
        self.topic = topic
        self.held: list[object] = []

    def tell(self, message: object) -> None:
        """Hold ``message`` until the actor exists."""
        self.held.append(message)


class TopicTable:
    """Live topic actors (and ports of those starting) of one registry."""

    __slots__ = ("_live", "_monitors", "_node", "_owner")

    def __init__(self, node: Node, owner: ActorRef[Any]) -> None:
        self._node = node
        self._owner = owner
        self._live: RetainedIndex[Teller] = RetainedIndex()  # topic -> ref, or TopicPort
        self._monitors: dict[ActorRef[Any], tuple[str, Monitor]] = {}  # ref -> (topic, monitor)

    def __len__(self) -> int:
        return len(self._live)

    def get(self, topic: str) -> Teller | None:
        """The topic's actor ref, its :class:`TopicPort` while it starts, or None."""
        return self._live.get(topic)

    def match(self, topic_filter: str) -> Iterator[tuple[str, Teller]]:
        """(topic, ref or port) of every live topic ``topic_filter`` matches."""
        return self._live.match(topic_filter)

    def topics(self) -> list[str]:
        """Topics with a topic actor (running or starting)."""
        return list(self._live.topics())

    def topic_of(self, ref: ActorRef[Any]) -> str | None:
        """The topic of a monitored topic actor."""
        entry = self._monitors.get(ref)
        return None if entry is None else entry[0]

    # -- starting -------------------------------------------------------------------

    def start(self, topic: str, start: Callable[[], ActorRef[Any]]) -> TopicPort:
        """Ask the Topics supervisor for a new topic actor; return the port that stands for it.

        ``start`` makes the actor (the spec's start function); the reply
        arrives at the registry as ``TopicStarted``.
        """
        port = TopicPort(topic)
        self._live.set(topic, port)
        self._node.metrics.topics = len(self._live)
        sup = self._node.names.whereis(Singleton.TOPICS)
        if sup is None:
            reply: LoopFuture[Any] = LoopFuture()
            error = RuntimeError("the Topics supervisor is not running")
            reply.set_exception((RuntimeError, error, None))
        else:
            spec = ChildSpec(id=topic, start=start, restart=Restart.TEMPORARY, wait_start=False)
            reply = start_sharded_child(sup, topic, spec)
        owner = self._owner

        def tell_owner(done: LoopFuture[Any]) -> None:
            # A registry gone meanwhile drops it: its successor starts topics anew.
            tell_if_alive(owner, TopicStarted(port, done))
        reply.add_done_callback(tell_owner)
        return port

    def started(self, message: TopicStarted) -> None:
        """The supervisor answered: hand the port's messages over, then name the actor."""
        port = message.port
        topic = port.topic
        current = self._live.get(topic) is port
        try:
            ref: ActorRef[Any] = message.reply.get()
        except Exception as exc:
            if current:
                self._live.delete(topic)
                self._node.metrics.topics = len(self._live)
            self._lost(port, exc)
            return
        if not current:  # cannot happen while ports are only replaced here; be safe
            ref.tell(StopTopic())
            return
        try:
            for held in port.held:
                ref.tell(held)
        except ActorDeadError as exc:  # its on_start failed already
            self._live.delete(topic)
            self._node.metrics.topics = len(self._live)
            self._lost(port, exc)
            return
        port.held = []
        self._live.set(topic, ref)
        self._monitors[ref] = (topic, monitor(ref, self._owner))
        self._node.names.register_topic(topic, ref)

    def _lost(self, port: TopicPort, exc: BaseException) -> None:
        # Normal while the tree stops (the Topics supervisor goes before the registry).
        sup = self._node.names.whereis(Singleton.TOPICS)
        level = logging.ERROR if sup is not None and sup.is_alive() else logging.INFO
        log.log(level, "topic %r: could not start its topic actor: %r", port.topic, exc)
        lost = 0
        for held in port.held:
            if type(held) is PublishBatch:
                lost += len(held.messages)
                if held.credit is not None:
                    held.credit.take()  # nobody will deliver it: the publisher may go on
        if lost:
            self._node.metrics.drop("topic_unavailable", lost, topic=port.topic)
        port.held = []

    # -- ending ---------------------------------------------------------------------

    def forget(self, topic: str, ref: ActorRef[Any]) -> None:
        """Drop ``ref`` (dead, or about to be stopped) from the table and the name table."""
        if self._live.get(topic) is ref:
            self._live.delete(topic)
        self._node.names.unregister_topic(topic, ref)
        entry = self._monitors.pop(ref, None)
        if entry is not None:
            demonitor(entry[1])
        self._node.metrics.topics = len(self._live)



class HotTopics:
    """Which topics are hot: :data:`HOT_AFTER` messages routed within a window or two.

    Two generations of publish counts, each covering one ``window`` seconds
    (at most :data:`MAX_RECENT` topics; past that a generation ends early): a
    topic is hot once its counts in both reach :data:`HOT_AFTER`. So RAM stays
    bounded by the publish rate, and a topic published now and then never
    costs a topic actor. Why more than twice: starting and later stopping an
    actor costs about as much as 20 cold deliveries (the ``routes`` benchmark:
    100,000 topics at 0.15 publishes/s each started ~3,000 actors/s when a
    second publish within the window was enough, 10% of the broker's time).
    """

    __slots__ = ("_older", "_recent", "_until", "window")

    MAX_RECENT = 65536
    HOT_AFTER = 4

    def __init__(self, window: float) -> None:
        self.window = window
        self._recent: dict[str, int] = {}
        self._older: dict[str, int] = {}
        self._until = 0.0

    def seen(self, topic: str, now: float, count: int = 1) -> bool:
        """Note ``count`` messages published to ``topic`` at ``now``; True if the topic is hot."""
        if self.window <= 0:
            return True
        if now >= self._until or len(self._recent) >= self.MAX_RECENT:
            # After a quiet spell longer than a window nothing seen is recent any more.
            self._older = {} if now >= self._until + self.window else self._recent
            self._recent = {}
            self._until = now + self.window
        count += self._recent.get(topic, 0)
        self._recent[topic] = count
        return count + self._older.get(topic, 0) >= self.HOT_AFTER
