"""Actors layer: KeeperActor, the offline durable sessions that have no actor, and their Wills. Stdlib, pykka, supervisors, session, durable, persistence.

A durable session whose client is gone costs an actor (several KiB) for
nothing: its queue is in the commit log and the storage actor's fold holds
it as offsets. So the session actor *hibernates*: it journals, stops, and
an :class:`~actorbroker.actors.names.Asleep` record takes its place in the
name table. For the rest of the broker the session still exists:

* a topic actor's ``Deliver`` (or MQTT 5 ``DeliverMatched``) to it is a
  no-op (QoS 1/2 messages were queued by the fold when their ``PublishAccepted``
  was stored; QoS 0 is dropped and counted ``offline_qos0``, as for any
  offline client);
* a CONNECT of its client id finds it Asleep: the gateway puts a ``Waking``
  entry in its place and starts a session actor with ``StartMode.WAKE``,
  which loads the state from the storage actor and resumes (a failed start
  puts the Asleep record back);
* it counts in ``$SYS`` as a disconnected client.

The keeper starts after the registry and the sessions supervisor: it asks
the storage actor for every offline durable session (after a restart: all
of them), puts their Asleep records in place, and expires each one when its
Session Expiry Interval has run out (registry and log told, entry
removed). Only an Asleep entry expires or has its Will sent: a Waking one's
client is connecting (see :meth:`KeeperActor._waking`). It also ticks the
storage actor every second (retention, checkpoints, probing a full disk)
and counts the drops the fold reports for offline queues.

**Wills after a restart.** It also publishes the Wills that no session
actor will: after a crash (kill -9), those of the connections the crash
cut (their clients sent no DISCONNECT: [MQTT-3.1.2-8]) and those that
were waiting for their Will Delay Interval; after a session actor crash,
those of clean sessions (``PendingWill`` from the storage actor). A
durable session's Will is due at its Will Delay Interval (MQTT 3: at
once), never later than the session's expiry; a clean session's at once.
A client that connects before that takes the session, and its Will, back
from the log (its actor sends the Will if the new connection starts clean,
[MQTT-3.1.3-9]); the keeper then lets it go. Publishing: ``Append`` of the
Will's ``PublishAccepted`` (QoS 1/2) and ``WillSent``, then, once stored, the
message is routed (through the registry) with its log offset, as a session
does it: a crash before the records are stored publishes it at the next
start, a crash after it never again (durable subscribers have it in their
queues from the ``PublishAccepted``).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import time
from typing import Any

from pykka import ActorDeadError

from actorbroker.codec import shown
from actorbroker.durable import NEVER
from actorbroker.durable.journal import publish_record, will_of
from actorbroker.persistence.records import Record, SessionExpired, WillSent, WillSet
from actorbroker.session import AppMessage
from supervisors import LoopActor, send_after, tell_if_alive

from ..admin import ExpireSession
from ..sessions.journal.hold import with_offset
from ..messages import RouteViaRegistry, SessionEnded, Timer
from ..names import Asleep, Waking
from ..node import Node
from .requests import (
    Append,
    Durable,
    Hibernated,
    LoadOffline,
    LoadWills,
    NotDurable,
    OfflineDropped,
    PendingWill,
    Tick,
)

__all__ = ["KeeperActor"]

log = logging.getLogger("actorbroker.session")

_TICK = Timer("tick")
TICK_SECONDS = 1.0
_EXPIRY, _WILL = "expiry", "will"


class KeeperActor(LoopActor):
    """Hibernated sessions' entries, expiry and Wills; the storage actor's ticks."""

    def __init__(self, node: Node) -> None:
        super().__init__()
        self._node = node
        # (when, tie-breaker, _EXPIRY or _WILL, client id, the Asleep record it is for)
        self._deadlines: list[tuple[float, int, str, str, Asleep]] = []
        self._order = itertools.count()
        self._wills: dict[str, tuple[WillSet, Asleep]] = {}  # pending, of hibernated sessions
        self._sending: dict[int, tuple[str, AppMessage]] = {}  # token -> Will being stored
        self._tokens = 0
        self._timer: asyncio.TimerHandle | None = None

    async def on_start(self) -> None:  # type: ignore[override]
        node = self._node
        storage = node.names.storage()
        if storage is not None:
            offline = await storage.ask(LoadOffline(), block=False)
            now, wall = self._now(), time.time()
            for session in offline:
                running: Any = node.names.sessions.get(session.client_id)
                sleeping = node.names.asleep(session.client_id)
                if sleeping is None:
                    if running is not None and running.is_alive():
                        continue  # the keeper restarted alone: that session kept its actor
                    sleeping = Asleep(session.client_id, node.metrics)
                    entry: Any = sleeping
                    node.names.register_session(session.client_id, entry)
                # else: the keeper restarted alone; the record stays (a Waking one's
                # start puts it back if it fails), its deadlines are pushed again.
                node.owners.restore(session.client_id, session.owner)
                if session.expiry != NEVER:
                    left = max(0.0, session.since + session.expiry - wall)
                    self._push(now + left, _EXPIRY, session.client_id, sleeping)
            if offline:
                log.info("%d offline durable session(s) restored from the commit log",
                         len(offline))
            wills = await storage.ask(LoadWills(), block=False)
            for pending in wills:
                self._pending(pending)
            if wills:
                log.info("%d Will(s) of connections that ended with the previous run: %d due "
                         "now", len(wills), len(self._sending))
        self._arm()

    def on_stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _now(self) -> float:
        return self.actor_loop.time()

    def _push(self, when: float, kind: str, client_id: str, sleeping: Asleep) -> None:
        heapq.heappush(self._deadlines, (when, next(self._order), kind, client_id, sleeping))

    def on_receive(self, message: Any) -> Any:
        cls = type(message)
        if cls is ExpireSession:
            return self._expire_now(message.client_id)
        if cls is Hibernated:
            self._hibernated(message)
        elif cls is OfflineDropped:
            self._node.metrics.drop(message.reason, client_id=message.client_id,
                                    topic=message.topic)
        elif cls is Timer:
            self._tick()
        elif cls is Durable or cls is NotDurable:
            self._stored(message)
        elif cls is PendingWill:
            self._pending(message)
        else:
            raise TypeError(f"keeper: unexpected message {message!r}")
        return None

    def _expire_now(self, client_id: str) -> bool:
        """An operator deleted a hibernated session: expire it now (its deadline, still in
        the heap, then finds the entry gone and does nothing). Not a Waking one: its
        client is connecting (the operator's API then sees it online)."""
        sleeping: object = self._node.names.sessions.get(client_id)
        if type(sleeping) is not Asleep:
            return False
        log.info("client %r: offline session deleted by an operator", client_id)
        self._expire(client_id, sleeping)
        return client_id not in self._node.names.sessions

    def _hibernated(self, message: Hibernated) -> None:
        # Reason: the session registers its Asleep record, then tells the keeper; a CONNECT
        # in between may already have made it Waking.
        # Precondition: the deadlines must hold whether the wake succeeds or fails.
        # Solution: they are for the Asleep record, also found inside a Waking entry; a
        # successful wake replaces both, and the deadline then finds neither.
        ref = self._node.names.asleep(message.client_id)
        if ref is None:
            return
        if message.expiry != NEVER:
            self._push(self._now() + message.expiry, _EXPIRY, message.client_id, ref)
        if message.will is not None:
            self._pending(PendingWill(message.client_id, message.will, message.will_due, True))

    def _tick(self) -> None:
        self._timer = None
        tell_if_alive(self._node.names.storage(), Tick())
        now = self._now()
        while self._deadlines and self._deadlines[0][0] <= now:
            _, _, kind, client_id, sleeping = heapq.heappop(self._deadlines)
            if kind == _EXPIRY:
                self._expire(client_id, sleeping)
            else:
                self._will_due(client_id, sleeping)
        self._arm()

    def _expire(self, client_id: str, sleeping: Asleep) -> None:
        node = self._node
        if self._waking(client_id, sleeping, _EXPIRY):
            return
        entry: Any = sleeping
        if not node.names.unregister_session(client_id, entry):
            return  # resumed (or expired) since
        log.info("client %s: offline session expired", shown(client_id))
        pending = self._wills.get(client_id)
        if pending is not None and pending[1] is sleeping:  # [MQTT-3.1.3-9]: at the latest now
            del self._wills[client_id]
            self._publish(client_id, pending[0])
        node.registry().tell(SessionEnded(client_id))
        node.owners.release(client_id)
        storage = node.names.storage()
        if storage is not None:
            storage.tell(Append((SessionExpired(client_id, timestamp_us=int(time.time() * 1e6)),),
                                None, 0))

    # -- Wills (see the module doc) ---------------------------------------------------

    def _pending(self, pending: PendingWill) -> None:
        """A Will not sent yet: publish it now, or when it is due if its session sleeps."""
        client_id = pending.client_id
        if not pending.durable:
            if all(cid != client_id for cid, _ in self._sending.values()):
                self._publish(client_id, pending.will)
            return
        sleeping = self._node.names.asleep(client_id)  # also while it wakes (_hibernated)
        if sleeping is None:
            return  # a session actor runs: it took the session, and the Will, from the log
        self._wills[client_id] = (pending.will, sleeping)
        left = pending.due - time.time()
        if left > 0:
            self._push(self._now() + left, _WILL, client_id, sleeping)
        else:
            self._will_due(client_id, sleeping)

    def _will_due(self, client_id: str, sleeping: Asleep) -> None:
        pending = self._wills.get(client_id)
        if pending is None or pending[1] is not sleeping:
            return  # sent, or for an earlier hibernation
        if self._waking(client_id, sleeping, _WILL):
            return
        current: Any = self._node.names.sessions.get(client_id)
        if current is not sleeping:
            del self._wills[client_id]  # resumed: the new session actor has the Will
            return
        del self._wills[client_id]
        self._publish(client_id, pending[0])

    def _waking(self, client_id: str, sleeping: Asleep, kind: str) -> bool:
        """True if ``sleeping`` is waking: its deadline of ``kind`` is pushed a tick on.

        Reason: a client connects as its session's expiry (or Will) falls due; the gateway
        has made the entry Waking and a session actor is loading it from the log.
        Precondition: no expiry and no Will for a session whose client is connecting;
        yet a failed start (the gateway puts ``sleeping`` back) must leave it expirable,
        and its Will due, exactly as before the attempt.
        Solution: while Waking, the deadline is not dropped but looked at again a tick
        later; then the entry is the session actor's ref (the deadline finds neither
        record: resumed), or ``sleeping`` again (it expires, or its Will goes, then).
        """
        entry: object = self._node.names.sessions.get(client_id)
        if type(entry) is Waking and entry.asleep is sleeping:
            self._push(self._now() + TICK_SECONDS, kind, client_id, sleeping)
            return True
        return False

    def _publish(self, client_id: str, will: WillSet) -> None:
        """Store the Will's records; route it once they are stored (:meth:`_stored`)."""
        message = AppMessage.from_will(will_of(will), publisher=client_id,
                                       received_at=self._now())
        ts = int(time.time() * 1e6)
        records: list[Record] = [publish_record(message, None, ts)] if message.qos else []
        records.append(WillSent(client_id, will.topic, timestamp_us=ts))
        self._tokens += 1
        self._sending[self._tokens] = (client_id, message)
        log.info("client %s: publishing its Will to %s (its connection ended without "
                 "DISCONNECT [MQTT-3.1.2-8])", shown(client_id), shown(will.topic))
        if not tell_if_alive(self._node.names.storage(),
                             Append(tuple(records), self.actor_ref, self._tokens)):
            self._stored(NotDurable(self._tokens, 0x80, "the storage actor is not running"))

    def _stored(self, reply: Durable | NotDurable) -> None:
        found = self._sending.pop(reply.token, None)
        if found is None:
            return
        client_id, message = found
        if isinstance(reply, Durable):
            if message.qos:
                message = with_offset(message, reply.offsets[0])
        else:  # as a session does: published all the same, without durability
            log.warning("client %s: its Will is published without being stored (%s)",
                        shown(client_id), reply.reason)
        try:
            self._node.registry().tell(RouteViaRegistry(message.topic, (message,), None))
        except (ActorDeadError, RuntimeError) as exc:
            log.error("client %s: its Will could not be routed: %r", shown(client_id), exc)

    def _arm(self) -> None:
        if self._timer is None:
            self._timer = send_after(self.actor_loop, self.actor_ref, TICK_SECONDS, _TICK)
