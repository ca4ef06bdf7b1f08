"""Actors layer: the node's name table, names -> live actor refs (Erlang's ``via``). Stdlib, pykka, session, metrics and the actors' messages.

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

A hibernated session has no actor: its entry is an :class:`Asleep` record
(actors/storage/keeper.py tells the story). When its client connects, the
gateway replaces it with a :class:`Waking` entry and starts the actor with
``StartMode.WAKE``; the actor's own ref replaces that when it registers, or
the gateway puts the :class:`Asleep` back if the start failed. Both entries
take a ``Deliver`` without raising: they count what the log's fold did not
queue (QoS 0, a refused QoS 1/2) and drop it.

There is one table per node (per :class:`~actorbroker.app.Broker`), not one
per process, so that tests can run several brokers in one process.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from pykka import ActorRef

from actorbroker.metrics import BrokerMetrics
from actorbroker.session.suboptions import select

from .messages import Deliver, DeliverMatched

__all__ = ["Asleep", "Names", "Singleton", "Waking"]


@dataclass(frozen=True, slots=True, eq=False)
class Asleep:
    """The name table's entry for a hibernated session: no actor, its state in the log.

    Identity matters (``eq=False``): the keeper's deadlines are for one hibernation,
    and a later one puts a new record in place.
    """

    client_id: str
    metrics: BrokerMetrics

    def tell(self, message: Any) -> None:
        """A ``Deliver``/``DeliverMatched`` is counted and dropped (its QoS 1/2 messages
        were queued by the fold); anything else is dropped. Never raises."""
        cls = type(message)
        if cls is Deliver or cls is DeliverMatched:
            if message.credit is not None:
                message.credit.take()  # an offline session holds no publisher back
            self._count_losses(message)

    def _count_losses(self, message: Deliver | DeliverMatched) -> None:
        """Count what the log's fold did not queue for this session: QoS 0 (offline), and
        QoS 1/2 the log refused (a full disk: nowhere to keep it). The rest comes back
        with the session; an MQTT 5 message its subscriptions' No Local excludes was never
        for it. Each message at the QoS its copy would have had."""
        qos0 = unlogged = 0
        for m in message.messages:
            if isinstance(message, Deliver):
                qos = min(m.qos, message.qos)
            else:
                selected = select(message.matches, m.publisher, self.client_id)
                if selected is None:
                    continue
                qos = min(m.qos, selected.qos)
            if not qos:
                qos0 += 1
            elif m.log_offset < 0:
                unlogged += 1
        topic = message.messages[0].topic
        if qos0:
            self.metrics.drop("offline_qos0", qos0, client_id=self.client_id, topic=topic)
        if unlogged:
            self.metrics.drop("session_unavailable", unlogged, client_id=self.client_id,
                              topic=topic)

    def is_alive(self) -> bool:
        return False


@dataclass(frozen=True, slots=True, eq=False)
class Waking:
    """The entry of a hibernated session whose actor the gateway is starting (``WAKE``).

    Its client is connecting: the keeper neither expires it nor sends its Will (it
    looks again a tick later). It takes Delivers as its ``asleep`` does; ``asleep`` goes
    back in place if the start fails.
    """

    asleep: Asleep

    def tell(self, message: Any) -> None:
        self.asleep.tell(message)

    def is_alive(self) -> bool:
        return False


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

    def is_asleep(self, client_id: str) -> bool:
        """True if ``client_id``'s session is hibernated (:class:`Asleep`, or :class:`Waking`:
        no actor yet, the log holds its queue)."""
        entry: object = self.sessions.get(client_id)
        return type(entry) in _ASLEEP

    def asleep(self, client_id: str) -> Asleep | None:
        """The :class:`Asleep` record of ``client_id``'s hibernation, also while it wakes."""
        entry: object = self.sessions.get(client_id)
        if type(entry) is Waking:
            return entry.asleep
        return entry if type(entry) is Asleep else None

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


_ASLEEP = (Asleep, Waking)
