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

The node's singletons (the registry, the storage and keeper actors, the
topic and session supervisors) are named too (:class:`Singleton`): the tree
(actors/tree.py) registers each one as its supervisor starts it, and again
when it restarts it, so ``names.registry()`` is always the current registry.
A singleton's name keeps its last ref while it is down (a ``tell`` then
raises ``ActorDeadError``); a name never registered (no storage in memory
mode) reads None.

There is one table per node (per :class:`~actorbroker.app.Broker`), not one
per process, so that tests can run several brokers in one process.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from pykka import ActorRef

__all__ = ["Names", "Singleton"]


class Singleton(Enum):
    """The names of a node's one-of-a-kind actors."""

    REGISTRY = "registry"
    TOPICS = "topics"       # the ShardedSupervisor of topic actors
    SESSIONS = "sessions"   # the ShardedSupervisor of session actors
    STORAGE = "storage"     # the StorageActor (never registered: durability "memory")
    KEEPER = "keeper"       # the KeeperActor of hibernated sessions


class Names:
    """``sessions``: client id -> session actor; ``topics``: topic -> topic actor; ``online``;
    the singletons by :class:`Singleton`."""

    __slots__ = ("_singletons", "online", "sessions", "topics")

    def __init__(self) -> None:
        self.sessions: dict[str, ActorRef[Any]] = {}
        self.topics: dict[str, ActorRef[Any]] = {}
        self.online: set[str] = set()
        self._singletons: dict[Singleton, ActorRef[Any]] = {}

    def register(self, name: Singleton, ref: ActorRef[Any]) -> None:
        """``ref`` is now the node's ``name`` (started or restarted by the tree)."""
        self._singletons[name] = ref

    def whereis(self, name: Singleton) -> ActorRef[Any] | None:
        """The current ref of ``name``; None if it was never started."""
        return self._singletons.get(name)

    def registry(self) -> ActorRef[Any]:
        """The registry's current ref (RuntimeError before it started)."""
        ref = self._singletons.get(Singleton.REGISTRY)
        if ref is None:
            raise RuntimeError("the registry has not been started")
        return ref

    def storage(self) -> ActorRef[Any] | None:
        """The storage actor's current ref; None without a commit log."""
        return self._singletons.get(Singleton.STORAGE)

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
