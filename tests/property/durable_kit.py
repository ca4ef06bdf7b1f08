"""Kit of the durable session machine: a real SessionActor run by hand over an in-memory log.

The actor is the broker's own :class:`~actorbroker.actors.session.SessionActor`
(its core, journal, gate, held acks, resumed queue, hibernation and
``_durable_start``), built on an event loop that never runs: the machine
hands it one message at a time through ``on_receive``, as its mailbox would.
Only its surroundings are stand-ins, each doing what the real actor does
with the same pure code:

* :class:`MemoryLog` is the storage actor: ``Append`` writes records at
  offsets (early ``Durable(synced=False)`` as mode fsync does), :meth:`sync`
  folds them into a real :class:`~actorbroker.durable.DurableState` and
  answers ``Durable``; ``Fetch`` and ``LoadSession`` are answered by the
  real ``storage.reads`` functions; :meth:`restart` is recovery (a fresh
  fold of what survived, then the real ``restart_records``).
* :class:`MemoryRegistry` grants subscriptions at once and answers
  ``SessionStarted`` as the registry does (latest epoch's subscriptions).
* :class:`Conn` is the transport's connection: what the actor writes reaches
  the client while the client still reads it.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Generator
from typing import Any

import supervisors
from actorbroker.actors.sessions.journal.settings import DurabilitySettings
from actorbroker.actors.storage.requests import (Append, Durable, Fetch, Fetched, LoadRouting,
                                                 LoadSession)
from actorbroker.actors.messages import (AddSubscriptions, RemoveSubscriptions, SessionEnded,
                                         SessionStarted, SessionSubscriptions, SubscriptionsAdded,
                                         SubscriptionsRemoved)
from actorbroker.actors.names import Singleton
from actorbroker.actors.node import Node, NodeSettings
from actorbroker.actors.session import SessionActor
from actorbroker.actors.sessions.start import StartMode
from actorbroker.actors.storage.reads import load_routing, load_session, message_at
from actorbroker.actors.storage.recovery import restart_records
from actorbroker.codec import Packet, Subscription
from actorbroker.durable import DurableState, restate
from actorbroker.persistence.records import CheckpointCompleted, Record
from actorbroker.session import SessionConfig

__all__ = ["Conn", "MemoryLog", "MemoryRegistry", "Ready", "Shell", "new_actor", "new_node",
           "run_start"]


#: Wall-clock time of the records the kit writes itself (µs since the epoch).
TS = 1_700_000_000_000_000


class Ready:
    """An answer to ``ask`` that is already there: ``await`` returns it without a loop."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __await__(self) -> Generator[Any, None, Any]:
        return self.value
        yield  # a generator, so that ``await`` accepts it


class MemoryLog:
    """The storage actor over a list of records (offset = index); see the module doc.

    ``reply(to, message)`` hands an answer to whoever sent the request (the
    machine routes it to the actor's mailbox or to the publisher).
    """

    def __init__(self, reply: Callable[[Any, Any], None], records: list[Record] | None = None,
                 synced: int = 0) -> None:
        self.reply = reply
        self.records: list[Record] = list(records or ())
        self.synced = synced
        self.state = DurableState()
        self.pending: list[tuple[Append, tuple[int, ...]]] = []  # written, not synced
        # Recovery folds from the latest complete checkpoint's CheckpointStarted, if any.
        ends = [r for r in self.records[:synced] if isinstance(r, CheckpointCompleted)]
        start = ends[-1].started_at if ends else 0
        for offset in range(start, synced):
            self.state.apply(offset, self.records[offset], offset + 1)

    # -- CommitLog, as storage.reads.message_at reads it ------------------------------

    def read_at(self, offset: int) -> Record:
        if not 0 <= offset < len(self.records):
            raise ValueError(f"no record at {offset}")
        return self.records[offset]

    # -- the storage actor's messages --------------------------------------------------

    def tell(self, message: Any) -> None:
        if isinstance(message, Append):
            start = len(self.records)
            self.records.extend(message.records)
            offsets = tuple(range(start, len(self.records)))
            self.pending.append((message, offsets))
            if message.early and message.reply_to is not None:  # mode fsync: written
                self.reply(message.reply_to, Durable(message.token, offsets, synced=False))
        elif isinstance(message, Fetch):
            self.reply(message.reply_to, Fetched(message.token, tuple(
                message_at(self, offset) for offset in message.offsets)))  # type: ignore[arg-type]
        else:
            raise TypeError(f"storage: unexpected tell {message!r}")

    def ask(self, message: Any, block: bool = True) -> Ready:
        self.sync()  # as the storage actor: reads see every record written, folded
        if isinstance(message, LoadSession):
            load = load_session(self, self.state, message.client_id, None)  # type: ignore[arg-type]
            return Ready(load)
        if isinstance(message, LoadRouting):
            return Ready(load_routing(self, self.state))  # type: ignore[arg-type]
        raise TypeError(f"storage: unexpected ask {message!r}")

    def sync(self) -> None:
        """The group commit's fsync ended: fold what it covered, answer its senders."""
        for offset in range(self.synced, len(self.records)):
            self.state.apply(offset, self.records[offset], offset + 1)
        self.synced = len(self.records)
        pending, self.pending = self.pending, []
        for append, offsets in pending:
            if append.reply_to is not None:
                self.reply(append.reply_to, Durable(append.token, offsets))

    def checkpoint(self) -> None:
        """What the storage actor's housekeeping does: fold everything, restate the state
        in one synced batch, note it (recovery then folds from there)."""
        self.sync()
        state, start = self.state, len(self.records)
        number = state.checkpoint[0] + 1 if state.checkpoint else 1
        self.records += restate(state, number, self.read_at, TS)
        self.records.append(CheckpointCompleted(number, start, timestamp_us=TS))
        self.sync()  # restated records are skipped by a running fold; the id is noted

    def restart(self, keep_unsynced: int) -> MemoryLog:
        """The log after a crash and recovery: what was synced, ``keep_unsynced`` records
        written after it (the rest lost with the page cache), a fresh fold, and the
        records the storage actor appends at start."""
        kept = self.records[:self.synced + keep_unsynced]
        log = MemoryLog(self.reply, kept, len(kept))
        log.records.extend(restart_records(log.state))
        log.sync()
        return log


class MemoryRegistry:
    """The registry as a session sees it: grants at once, answers through ``reply``."""

    def __init__(self, reply: Callable[[Any, Any], None]) -> None:
        self.reply = reply
        self.clients: dict[str, dict[str, tuple[Subscription, int]]] = {}

    def load(self, log: MemoryLog, epoch: int) -> None:
        """A restarted registry: every durable subscription, under one new epoch each."""
        self.clients = {cid: {sub.topic_filter: (sub, epoch) for sub, _ in subs}
                        for cid, _, subs in log.ask(LoadRouting()).value.subscriptions}

    def subscribers(self, topic: str) -> list[tuple[str, int, int]]:
        """(client id, granted QoS, epoch) of each subscription to ``topic`` (exact filters)."""
        return [(cid, sub.qos, epoch) for cid, subs in self.clients.items()
                for f, (sub, epoch) in subs.items() if f == topic]

    def tell(self, message: Any) -> None:
        if isinstance(message, AddSubscriptions):
            subs = self.clients.setdefault(message.client_id, {})
            for sub in message.subscriptions:
                subs[sub.topic_filter] = (sub, message.epoch)
            if message.reply_to is not None:
                self.reply(message.reply_to, SubscriptionsAdded(message.packet_id, None, ()))
        elif isinstance(message, RemoveSubscriptions):
            subs = self.clients.get(message.client_id, {})
            for topic_filter in message.topic_filters:
                subs.pop(topic_filter, None)
            if message.packet_id is not None:
                self.reply(message.reply_to, SubscriptionsRemoved(message.packet_id))
        elif isinstance(message, SessionEnded):
            self.clients.pop(message.client_id, None)
        else:
            raise TypeError(f"registry: unexpected tell {message!r}")

    def ask(self, message: Any, block: bool = True) -> Ready:
        assert isinstance(message, SessionStarted)
        subs = self.clients.get(message.client_id)
        if not subs:
            return Ready(SessionSubscriptions((), 0))
        epoch = max(e for _, e in subs.values())
        return Ready(SessionSubscriptions(tuple(s for s, e in subs.values() if e == epoch), epoch))


class Conn:
    """One client connection as the transport gives it to the session actor."""

    _ids = 0

    def __init__(self, receive: Callable[[Conn, tuple[Packet, ...]], None],
                 on_close: Callable[[Conn], None]) -> None:
        Conn._ids += 1
        self.conn_id = Conn._ids
        self.peer = ("127.0.0.1", 1000 + self.conn_id)
        self.closed = False  # closed by either side: nothing written reaches the client
        self.congested = False
        self._receive = receive
        self._on_close = on_close

    def send(self, packets: Any) -> None:
        if not self.closed:
            self._receive(self, tuple(packets))

    def close(self, code: Any = None, reason: str = "") -> None:
        self.closed = True
        self._on_close(self)

    def batch_done(self) -> None:
        pass

    def set_keepalive(self, seconds: int) -> None:  # MQTT 5: the transport's keepalive
        pass


class Shell(SessionActor):
    """A SessionActor whose ``stop`` only marks it stopped (no runtime runs it)."""

    stopped = False

    def stop(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        self.stopped = True


def new_node(config: SessionConfig, log: MemoryLog, registry: MemoryRegistry) -> Node:
    """A node with storage on (mode fsync: early answers) and hibernation."""
    node = Node(settings=NodeSettings(session=config), durability=DurabilitySettings())
    node.names.register(Singleton.REGISTRY, registry)  # type: ignore[arg-type]
    node.names.register(Singleton.STORAGE, log)  # type: ignore[arg-type]
    return node


def new_actor(node: Node, client_id: str, loop: asyncio.AbstractEventLoop,
              clock: Callable[[], float], *, start: StartMode) -> Shell:
    """A session actor as the gateway starts one: ``start`` WAKE for a client id whose
    session the log holds (a hibernated one, or any after a restart), FRESH for one it
    does not. Then :func:`run_start`."""
    supervisors.use_loop(loop)
    try:
        actor = Shell(client_id, node, redispatch=_no_gateway, start=start)
    finally:
        supervisors.use_loop(None)
    actor._clock = clock  # noqa: SLF001 (the machine's time, not the loop's)
    return actor


def _no_gateway(attach: Any) -> None:
    raise AssertionError("the machine attaches to live actors only: it has no gateway")


def run_start(actor: Shell) -> Shell:
    """Run the actor's ``on_start`` (its asks are answered at once)."""
    start = actor.on_start()
    try:
        start.send(None)
    except StopIteration:
        return actor
    raise AssertionError("on_start waited for something that never comes")


def drain(queue: deque[Any], handle: Callable[[Any], None]) -> int:
    """Hand every message of ``queue`` (and those queued meanwhile) to ``handle``."""
    count = 0
    while queue:
        handle(queue.popleft())
        count += 1
    return count
