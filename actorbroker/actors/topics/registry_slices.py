"""Actors layer: the registry's subscription work, in slices. Stdlib, supervisors.

Why: every actor of a node shares one event loop, and the registry is
where cold topics are routed. A SUBSCRIBE of a thousand filters costs the
registry about 17 ms (trie, retained index, topic table per filter); 400
of them, queued in its inbox, held another client's QoS 1 round trip for
28 s on this machine, and the end of a session holding 50,000 filters
took 1.3 s. So the registry works through subscription requests
(AddSubscriptions, RemoveSubscriptions, SessionEnded) of more than
:data:`SLICE` filters :data:`SLICE` per turn and lets its inbox move on in
between.

The order the rest of the broker relies on stays as it was:

* while the backlog holds anything, every message but a route or a topic
  actor's news waits behind it, in arrival order (subscription changes,
  session ends, shared redeliveries), so subscription changes are applied in
  the order they came; each slice tells the topic actors of its changes at
  once (a subscriber may get messages before its SUBACK, as MQTT allows);
* a route waits too if the session that sent it (its ``reply_to``) has
  something in the backlog: a session's publishes stay behind its own
  subscription changes. Other sessions' routes go first: that is the point;
* an ask (``SessionStarted``, whose answer must be current) is answered
  after the whole backlog is done.

A session sees its SUBACK only once all of its SUBSCRIBE is applied (the
registry answers after the last slice), so what MQTT promises after a
SUBACK holds.
"""

from __future__ import annotations

import asyncio
from collections import Counter, deque
from typing import TYPE_CHECKING, Any

from pykka import ActorRef

from actorbroker.session import AppMessage
from supervisors import Down, Teller, tell_if_alive

from ..messages import (AddSubscriptions, RouteBatchViaRegistry, RouteViaRegistry,
                       SubscriptionsRemoved, TopicIdle, TopicStarted)

if TYPE_CHECKING:  # the registry is the mixin's actor: a cycle for the types only
    from .registry import Change

    #: What a slice changes, per topic actor (the registry tells each its list).
    Changes = dict[Teller, list[Change]]

__all__ = ["SLICE", "Continue", "RegistryBacklog", "RemoveWork", "SlicedSubscriptions",
           "SubscribeWork"]

#: Filters the registry subscribes per turn (about 1 ms of work, 3-6 ms under load).
SLICE = 64


#: The topic actors' news: the topic table's, not ordered with subscriptions (each slice
#: tells the topic actors of its changes in the same turn, so no port is left holding them).
_TOPIC_NEWS = frozenset({TopicStarted, TopicIdle, Down})


class Continue:
    """To itself, through the loop (``call_soon``): take the next slice of the backlog."""

    __slots__ = ()


class SubscribeWork:
    """An AddSubscriptions under way: how far it got, and what its answer gathers."""

    __slots__ = ("request", "done", "retained")

    def __init__(self, request: AddSubscriptions) -> None:
        self.request = request
        self.done = 0  # subscriptions applied (and told to the topic actors) so far
        self.retained: dict[str, AppMessage] = {}

    @property
    def finished(self) -> bool:
        return self.done >= len(self.request.subscriptions)

    @property
    def reply_to(self) -> ActorRef[Any]:
        return self.request.reply_to


class RemoveWork:
    """A RemoveSubscriptions (or the end of a session: ``drop``) under way."""

    __slots__ = ("client_id", "filters", "reply_to", "packet_id", "drop", "done")

    def __init__(self, client_id: str, filters: list[str] | tuple[str, ...],
                 reply_to: ActorRef[Any] | None,
                 packet_id: int | None, *, drop: bool = False) -> None:
        self.client_id = client_id
        self.filters = filters
        self.reply_to = reply_to
        self.packet_id = packet_id
        self.drop = drop  # SessionEnded: forget the client's Clean Session flag at the end
        self.done = 0

    @property
    def finished(self) -> bool:
        return self.done >= len(self.filters)


class RegistryBacklog:
    """Messages (and one SubscribeWork at its head, at most) waiting their turn, in order."""

    __slots__ = ("_items", "_senders", "scheduled")

    def __init__(self) -> None:
        self._items: deque[object] = deque()
        self._senders: Counter[ActorRef[Any]] = Counter()  # reply_to -> its items here
        #: A Continue is in the registry's inbox.
        self.scheduled = False

    def __bool__(self) -> bool:
        return bool(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def must_wait(self, message: Any) -> bool:
        """Whether ``message`` has to queue behind the backlog (see the module doc)."""
        if not self._items:
            return False
        cls = type(message)
        if cls is RouteViaRegistry or cls is RouteBatchViaRegistry:
            return message.reply_to is not None and message.reply_to in self._senders
        return cls not in _TOPIC_NEWS

    def append(self, message: object) -> None:
        self._items.append(message)
        self._count(message, 1)

    def push_front(self, work: SubscribeWork | RemoveWork) -> None:
        self._items.appendleft(work)
        self._count(work, 1)

    def head(self) -> object:
        return self._items[0]

    def pop(self) -> object:
        item = self._items.popleft()
        self._count(item, -1)
        return item

    def _count(self, item: object, step: int) -> None:
        sender = getattr(item, "reply_to", None)
        if sender is not None:
            self._senders[sender] += step
            if not self._senders[sender]:
                del self._senders[sender]


class SlicedSubscriptions:
    """The registry's side of the backlog, as a mixin of RegistryActor (see the module doc)."""

    _backlog: RegistryBacklog

    if TYPE_CHECKING:
        actor_ref: ActorRef[Any]
        actor_loop: asyncio.AbstractEventLoop

        def _dispatch(self, message: object) -> None: ...

        def _subscribe_range(self, request: AddSubscriptions, start: int, stop: int,
                             changes: Changes, retained: dict[str, AppMessage]) -> None: ...

        def _notify(self, changes: Changes) -> None: ...

        def _remove(self, client_id: str, topic_filters: tuple[str, ...] | list[str]) -> None: ...

        _clean: dict[str, bool]

        def _subscribed(self, request: AddSubscriptions, changes: Changes,
                        retained: dict[str, AppMessage]) -> None: ...

    def _continue(self, budget: int | None) -> None:
        """Work through the backlog: ``budget`` filters' worth, or all of it (None)."""
        backlog = self._backlog
        left = budget
        while backlog and (left is None or left > 0):
            head = backlog.head()
            if type(head) is SubscribeWork:
                step = len(head.request.subscriptions) if left is None else left
                start = head.done
                head.done = min(start + step, len(head.request.subscriptions))
                changes: Changes = {}
                self._subscribe_range(head.request, start, head.done, changes, head.retained)
                # Now: a topic actor starting meanwhile must not get them through its port.
                self._notify(changes)
                if left is not None:
                    left -= head.done - start
                if head.finished:
                    backlog.pop()
                    self._subscribed(head.request, {}, head.retained)
                continue
            if type(head) is RemoveWork:
                start = head.done
                head.done = min(start + (len(head.filters) if left is None else left),
                                len(head.filters))
                self._remove(head.client_id, head.filters[start:head.done])
                if left is not None:
                    left -= head.done - start
                if head.finished:
                    backlog.pop()
                    if head.drop:
                        self._clean.pop(head.client_id, None)
                    if head.packet_id is not None:
                        tell_if_alive(head.reply_to, SubscriptionsRemoved(head.packet_id))
                continue
            backlog.pop()
            if type(head) is AddSubscriptions and len(head.subscriptions) > SLICE:
                backlog.push_front(SubscribeWork(head))
                continue
            self._dispatch(head)
            if left is not None:
                left -= max(1, len(getattr(head, "subscriptions", ())))
        if backlog and not backlog.scheduled:
            backlog.scheduled = True
            # Through the loop, not a tell: a turn takes up to 256 messages from the inbox,
            # Continues told now included; the loop must poll its sockets in between.
            # A registry stopped meanwhile drops it: nothing is left to continue.
            self.actor_loop.call_soon(tell_if_alive, self.actor_ref, Continue())
