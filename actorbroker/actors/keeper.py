"""Actors layer: KeeperActor, the offline durable sessions that have no actor. Stdlib, pykka, supervisors, durable, persistence.

A durable session whose client is gone costs an actor (several KiB) for
nothing: its queue is in the commit log and the storage actor's fold holds
it as offsets. So the session actor *hibernates*: it journals, stops, and
a :class:`Sleeping` placeholder takes its place in the name table. For the
rest of the broker the session still exists:

* a topic actor's ``Deliver`` to it is a no-op (QoS 1/2 messages were
  queued by the fold when their ``Publish`` was stored; QoS 0 is dropped
  and counted ``offline_qos0``, as for any offline client);
* a CONNECT of its client id finds the placeholder dead (``tell`` raises
  ``ActorDeadError``), so the gateway starts a new session actor, which
  loads the state from the storage actor and resumes;
* it counts in ``$SYS`` as a disconnected client.

The keeper starts after the registry and the sessions supervisor: it asks
the storage actor for every offline durable session (after a restart: all
of them), puts their placeholders in place, and expires each one when its
Session Expiry Interval has run out (registry and log told, placeholder
removed). It also ticks the storage actor every second (retention,
checkpoints, probing a full disk) and counts the drops the fold reports
for offline queues.
"""

from __future__ import annotations

import heapq
import logging
import time
from typing import Any

from pykka import ActorDeadError

from actorbroker.durable import NEVER
from actorbroker.persistence.records import SessionExpired
from supervisors import LoopActor

from .durable_messages import Append, Hibernated, LoadOffline, OfflineDropped, Tick
from .messages import Attach, Deliver, SessionEnded, Timer
from .node import Node

__all__ = ["KeeperActor", "Sleeping"]

log = logging.getLogger("actorbroker.session")

_TICK = Timer("tick")
TICK_SECONDS = 1.0


class Sleeping:
    """The name table's entry for a hibernated session (see the module doc)."""

    __slots__ = ("_node", "client_id")

    def __init__(self, client_id: str, node: Any) -> None:
        self.client_id = client_id
        self._node = node

    def tell(self, message: Any) -> None:
        if type(message) is Deliver:
            metrics = self._node.metrics
            lost = sum(1 for m in message.messages if not min(m.qos, message.qos))
            if lost:
                metrics.drop("offline_qos0", lost, client_id=self.client_id,
                             topic=message.messages[0].topic)
            unlogged = sum(1 for m in message.messages
                           if min(m.qos, message.qos) and m.log_offset < 0)
            if unlogged:  # QoS 1/2 that the log refused (a full disk): nowhere to keep it
                metrics.drop("session_unavailable", unlogged, client_id=self.client_id,
                             topic=message.messages[0].topic)
            return
        if type(message) is Attach:  # the gateway starts a session actor, which loads it
            self._node.woken.add(self.client_id)
        raise ActorDeadError(f"the session of {self.client_id!r} is hibernated")

    def is_alive(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"<Sleeping session {self.client_id!r}>"


class KeeperActor(LoopActor):
    """Hibernated sessions' placeholders and expiry; the storage actor's ticks."""

    def __init__(self, node: Node) -> None:
        super().__init__()
        self._node = node
        self._deadlines: list[tuple[float, str, Sleeping]] = []
        self._timer: Any = None

    async def on_start(self) -> None:  # type: ignore[override]
        node = self._node
        storage = node.refs.storage
        if storage is not None:
            offline = await storage.ask(LoadOffline(), block=False)
            now, wall = self._now(), time.time()
            for session in offline:
                sleeping: Any = Sleeping(session.client_id, node)
                node.names.register_session(session.client_id, sleeping)
                if session.expiry != NEVER:
                    left = max(0.0, session.since + session.expiry - wall)
                    heapq.heappush(self._deadlines, (now + left, session.client_id, sleeping))
            if offline:
                log.info("%d offline durable session(s) restored from the commit log",
                         len(offline))
        self._arm()

    def on_stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _now(self) -> float:
        return self.actor_loop.time()

    def on_receive(self, message: Any) -> None:
        cls = type(message)
        if cls is Hibernated:
            self._hibernated(message)
        elif cls is OfflineDropped:
            self._node.metrics.drop(message.reason, client_id=message.client_id,
                                    topic=message.topic)
        elif cls is Timer:
            self._tick()
        else:
            raise TypeError(f"keeper: unexpected message {message!r}")

    def _hibernated(self, message: Hibernated) -> None:
        ref = self._node.names.sessions.get(message.client_id)
        if isinstance(ref, Sleeping) and message.expiry != NEVER:
            heapq.heappush(self._deadlines, (self._now() + message.expiry, message.client_id, ref))

    def _tick(self) -> None:
        self._timer = None
        storage = self._node.refs.storage
        if storage is not None:
            try:
                storage.tell(Tick())
            except ActorDeadError:
                pass
        now = self._now()
        while self._deadlines and self._deadlines[0][0] <= now:
            _, client_id, sleeping = heapq.heappop(self._deadlines)
            self._expire(client_id, sleeping)
        self._arm()

    def _expire(self, client_id: str, sleeping: Sleeping) -> None:
        node = self._node
        placeholder: Any = sleeping
        if client_id in node.woken:
            return  # its client is connecting: the session actor starting now takes it over
        if not node.names.unregister_session(client_id, placeholder):
            return  # resumed (or expired) since
        log.info("client %r: offline session expired", client_id)
        node.registry().tell(SessionEnded(client_id))
        storage = node.refs.storage
        if storage is not None:
            storage.tell(Append((SessionExpired(client_id, timestamp_us=int(time.time() * 1e6)),),
                                None, 0))

    def _arm(self) -> None:
        if self._timer is None:
            self._timer = self.actor_loop.call_later(TICK_SECONDS, self._fire)

    def _fire(self) -> None:
        try:
            self.actor_ref.tell(_TICK)
        except ActorDeadError:
            pass
