"""Actors layer: where a session sends what its client publishes, in order per topic. Stdlib, supervisors, session.

A session hands each topic's batch straight to the topic actor found in the
name table. It goes through the registry instead when there is no topic
actor (a cold topic: the registry delivers it or starts an actor), when a
message has RETAIN set (the registry holds the retained index), or while an
earlier batch of the same topic is still on its way through the registry:
:class:`PublishRouter` counts those per topic until the registry answers
``Routed``, so one publisher's messages to one topic are never reordered
([MQTT-4.6.0-6]). Every batch goes through the registry too while one of
the session's own SUBSCRIBEs or UNSUBSCRIBEs is there unanswered: the
registry updates the topic actors before it forwards the batch, so a client
that publishes right after subscribing, without waiting for its SUBACK,
gets its own message through the new subscription as well (one copy with
every identifier, as the Paho suite's reference broker does), never through
the old subscriptions alone. All of one call's registry-bound batches travel
in one ``RouteBatchViaRegistry`` with one ``Routed`` back: a read that
publishes to a hundred cold topics costs the session and the registry one
message each way, not a hundred.
"""

from __future__ import annotations

from typing import Any

from actorbroker.ports import ReadCredit
from actorbroker.session import AppMessage
from supervisors import tell_if_alive

from .messages import PublishBatch, RouteBatchViaRegistry, RouteViaRegistry

__all__ = ["PublishRouter"]


class PublishRouter:
    """One session's routing of published batches (see the module doc)."""

    __slots__ = ("_node", "_owner", "changing", "via")

    def __init__(self, node: Any, owner: Any) -> None:
        self._node = node
        self._owner = owner  # the session's ref: where Routed comes back
        self.via: dict[str, int] = {}  # topic -> batches through the registry not yet Routed
        #: The session's subscription changes at the registry not yet answered.
        self.changing = 0

    def route(self, routes: dict[str, list[AppMessage]], credit: ReadCredit | None) -> None:
        """Hand each topic's batch to its topic actor, or to the registry; each message
        told holds the read's ``credit`` (when routed for a read)."""
        topics = self._node.names.topics
        via = self.via
        direct = not self.changing
        pending: list[tuple[str, tuple[AppMessage, ...]]] = []
        for topic, messages in routes.items():
            batch = tuple(messages)
            if direct and topic not in via and not any(m.retain for m in messages):
                ref = topics.get(topic)
                # One that just died: the registry starts a new one.
                if ref is not None and tell_if_alive(ref, PublishBatch(batch, credit)):
                    if credit is not None:
                        credit.hold(1)
                    continue
            via[topic] = via.get(topic, 0) + 1
            pending.append((topic, batch))
        if len(pending) == 1:
            topic, batch = pending[0]
            self._node.registry().tell(RouteViaRegistry(topic, batch, self._owner, credit))
        elif pending:
            self._node.registry().tell(RouteBatchViaRegistry(tuple(pending), self._owner, credit))
        else:
            return
        if credit is not None:
            credit.hold(1)

    def routed(self, topics: tuple[str, ...]) -> None:
        """The registry handled one batch of each of ``topics``."""
        via = self.via
        for topic in topics:
            left = via.get(topic, 0) - 1
            if left > 0:
                via[topic] = left
            else:
                via.pop(topic, None)
