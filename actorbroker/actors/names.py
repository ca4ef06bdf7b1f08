"""Actors layer: the node's name table, names -> live actor refs (Erlang's ``via``). Stdlib and pykka only.

Actors find each other by name, never by a remembered ref: a ref dies with
its actor, a name survives a restart. :class:`Names` maps a session's client
id and a topic to the ref of the actor that serves it right now. Reads are
plain dict lookups on the loop thread, without a message (the hot path
reads ``names.sessions.get(client_id)`` and ``names.topics.get(topic)``).

Writers: a session actor registers its own name when it starts and removes
it when it retires or stops; the registry names topic actors (it is the only
one that starts and stops them, so its decisions and the table never
disagree). A reader may still find a ref whose actor just died: ``tell``
then raises ``ActorDeadError`` and the reader falls back (start a new
session, route through the registry). Persist names, never refs.

``online`` holds the client ids whose session has a connection attached
(each session actor adds and removes its own): MQTT 5 shared subscriptions
prefer online members without asking anyone.

There is one table per node (per :class:`~actorbroker.app.Broker`), not one
per process, so that tests can run several brokers in one process.
"""

from __future__ import annotations

from typing import Any

from pykka import ActorRef

__all__ = ["Names"]


class Names:
    """``sessions``: client id -> session actor; ``topics``: topic -> topic actor; ``online``."""

    __slots__ = ("online", "sessions", "topics")

    def __init__(self) -> None:
        self.sessions: dict[str, ActorRef[Any]] = {}
        self.topics: dict[str, ActorRef[Any]] = {}
        self.online: set[str] = set()

    def register_session(self, client_id: str, ref: ActorRef[Any]) -> None:
        """``ref`` now serves ``client_id`` (replacing a dead or retired holder)."""
        self.sessions[client_id] = ref

    def unregister_session(self, client_id: str, ref: ActorRef[Any]) -> bool:
        """Forget ``client_id`` if ``ref`` still holds it; False if someone else does."""
        if self.sessions.get(client_id) is ref:
            del self.sessions[client_id]
            return True
        return False

    def register_topic(self, topic: str, ref: ActorRef[Any]) -> None:
        """``ref`` is the topic actor of ``topic`` (the registry's call)."""
        self.topics[topic] = ref

    def unregister_topic(self, topic: str, ref: ActorRef[Any]) -> bool:
        """Forget ``topic`` if ``ref`` still holds it."""
        if self.topics.get(topic) is ref:
            del self.topics[topic]
            return True
        return False
