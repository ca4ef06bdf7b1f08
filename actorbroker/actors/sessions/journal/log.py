"""Actors layer: what a session actor does for the commit log. Stdlib, pykka, codec, session, durable, persistence.

One :class:`LogJournal` per session actor when storage is on (modes
fsync and os); the actor calls it at a few seams and it never blocks:

* **Journal.** :meth:`intercept` sees the core's effects before the actor
  carries them out and derives records (``actorbroker.durable.journal``):
  a ``PublishAccepted`` per accepted QoS 1/2 message, the session events and, for
  durable sessions, the delivery state. Records of a read's packets, a
  CONNECT, a connection loss or a SUBACK are stashed by the actor before.
* **Held output** (:mod:`.hold`). When records must be
  stored first, the effects are held under a token and one ``Append`` goes
  to the storage actor; ``Durable`` releases them in order (logged messages
  routed with their offsets, then the acks); ``NotDurable`` refuses the
  publishes. Later effects queue behind. An entry whose messages are all
  QoS 1 is marked early: its routes go once the records are written, before
  the fsync, and only its PUBACKs wait (see :mod:`.hold`). A durable
  session's refused state records are sent again with exponential backoff.
* **Resumed queue** (:mod:`.resumed`), **Wills** (:mod:`.wills`:
  ``WillSent``/``WillCleared``, a Will taken back from the log) and
  **hibernation** (:meth:`settle`, actors/storage/keeper.py).

What is held for what: docs/storage.md, "Durable sessions".
"""

from __future__ import annotations

import dataclasses
import logging
from collections import deque
from typing import Any

from actorbroker.codec import Connect, Packet, Subscription, shown
from actorbroker.durable import OffsetQueue
from actorbroker.durable.journal import (
    ack_records,
    connected_record,
    disconnect_cause,
    queued_records,
    subscribed_records,
    will_record,
)
from actorbroker.persistence.records import (DisconnectCause, OutboundUnsent, PublishAccepted, Record,
                                             SessionDisconnected, SessionDropped)
from actorbroker.session import AppMessage, Effect, EndSession, Send, SessionState
from actorbroker.session.backoff import Backoff

from ...storage.requests import (Append, Durable, Fetched, LoadSession, NotDurable, RetryJournal,
                                SessionLoad)
from ...topics.shared_groups import journal_handed_back
from .hold import STOP, UNHELD, Held, HoldQueue, Release, expiry_of, now_us
from ..start import StartMode
from .records import derive
from .resumed import ResumedQueue
from .settings import DurabilitySettings
from .wills import SessionWills

__all__ = ["LogJournal"]

log = logging.getLogger("actorbroker.session")


class LogJournal:
    """Journal, held output, refusals and the resumed queue of one session actor."""

    #: The session's state is in the commit log: its actor's crash loses only QoS 0.
    logged = True

    def __init__(self, actor: Any, node: Any, settings: DurabilitySettings) -> None:
        self._actor = actor
        self._node = node
        self._cid: str = actor.client_id
        self.settings = settings
        self.durable = False
        self.hibernated = False
        self.resumed = ResumedQueue(actor, node, self)
        self.wills = SessionWills()
        self._hold = HoldQueue()
        self._tokens = 0
        self._stash: list[Record] = []
        self._asked: dict[int, deque[tuple[tuple[Subscription, ...], int | None]]] = {}
        self._retry: list[Record] = []
        self._retry_backoff = Backoff(settings.retry)
        self._retry_armed = False

    def close(self) -> None:
        """The session actor stopped: break the cycles through it and the resumed queue, so
        that reference counting frees this object and the actor at once (a served broker
        runs its full collections rarely: actorbroker.collector)."""
        self.resumed.detach()
        self._actor = None

    @property
    def idle(self) -> bool:
        """Nothing held, fetched or waiting to be stored again."""
        return not self._hold and not self.resumed.fetching and not self._retry

    def _storage(self) -> Any:
        return self._node.names.storage()

    # -- stashing records of what the actor saw ------------------------------------

    def read(self, packets: tuple[Packet, ...]) -> None:
        """A read from the client: the acknowledgements' records (durable sessions)."""
        if not self.durable:
            return
        ts = now_us()
        for packet in packets:
            record = ack_records(self._cid, packet, ts)
            if record is not None:
                self._stash.append(record)

    def attached(self, connect: Connect, core: Any, peer: str, now: float,
                 owner: str | None = None) -> None:
        """``core.attach`` ran for ``connect``: the SessionConnected (and WillSet) to store
        (``owner``: the session's, when another user took it over)."""
        was_durable = self.durable
        seconds = 0 if connect.protocol_level != 5 and connect.clean_start else expiry_of(core)
        self.durable = seconds > 0
        if connect.clean_start:
            self.resumed.discard()
        ts = now_us()
        present = was_durable and not connect.clean_start
        self._stash.append(connected_record(self._cid, connect, expiry=seconds, present=present,
                                            peer=peer, ts=ts, owner=owner))
        will = connect.will
        if will is not None:
            delay = will.properties.will_delay_interval or 0
            self._stash.append(will_record(self._cid, will, delay, ts))
        self.wills.attached(connect)

    def detached(self, core: Any, reason: str, code: int | None) -> None:
        """``core.detach`` ran: the SessionDisconnected to store, its cause from the
        reason code of whoever closed the connection (None: the socket went)."""
        seconds = (expiry_of(core) if self.durable and core.state is SessionState.DISCONNECTED
                   else 0)
        self._stash.append(SessionDisconnected(self._cid, disconnect_cause(code),
                                               0 if code is None else int(code),
                                               seconds, reason[:500], timestamp_us=now_us()))
        self.wills.detached()
        if seconds == 0:
            self.durable = False

    def held_for(self, conn: Any) -> list[Packet]:
        """The packets held for ``conn`` (the actor's connection that just ended): never
        written, they go to that closed connection when released."""
        return self._hold.packets_for(conn)

    def unsent(self, packet_ids: list[int]) -> None:
        """The first PUBLISHes of these flows were never written: their ``OutboundUnsent``
        (durable sessions), stored with what comes next (the connection's end)."""
        if self.durable:
            ts = now_us()
            self._stash.extend(OutboundUnsent(self._cid, packet_id, timestamp_us=ts)
                               for packet_id in packet_ids)

    def subscribed(self, packet_id: int, results: tuple[int, ...] | None) -> None:
        """The registry granted SUBSCRIBE ``packet_id``: the Subscribed records."""
        asked = self._asked.get(packet_id)
        if not asked:
            return
        subs, sub_id = asked.popleft()
        if not asked:
            del self._asked[packet_id]
        if results is None:
            granted = list(subs)
        else:
            granted = [dataclasses.replace(sub, qos=code) for sub, code in zip(subs, results)
                       if code < 0x80]
        self._stash.extend(subscribed_records(self._cid, granted, now_us(), sub_id or 0))

    # -- the core's effects ------------------------------------------------------------

    def intercept(self, effects: list[Effect], conn: Any, credit: Any) -> list[Effect]:
        """The effects to carry out now; the rest is held until its records are stored (made
        for connection ``conn``, their routes carrying ``credit``: a read's, or None)."""
        queue = self._hold
        if not self.durable and not self._stash and self.wills.loaded is None:
            for effect in effects:  # the fast path of deliveries: packets only, no records
                if type(effect) is not Send:
                    break
            else:
                if queue:  # behind what is held (nothing to hold for no effects at all)
                    if effects:
                        queue.hold(Held(None, list(effects), conn, blocking=False), credit)
                    return []
                return effects
        cid, durable = self._cid, self.durable
        if self.wills.loaded is not None:  # a Will taken back from the log: out if due
            effects = self.wills.inject(effects, cid, self._actor.now())
        ts = now_us()
        found = derive(effects, cid, durable, self._flights, self._asked, ts,
                       self.settings.log_qos0)
        if found.discarded:
            # Deliveries of the discarded subscriptions must be stale from now on, not from
            # when the held RequestUnsubscribe is carried out (a Deliver can come first).
            self._actor.renew_epoch()
        records, routes, state = found.records, found.routes, found.state
        cleared = self.wills.cleared(effects, cid, ts)
        if cleared is not None:
            state.append(cleared)
        state = found.before + self._stash + state
        self._stash = []
        records += state
        hold = bool(routes) or (durable and any(type(r) not in UNHELD for r in state))
        if not hold:
            if records:
                self._tell_storage(records, None, 0)  # history for the pipeline only
            if queue:
                queue.hold(Held(None, self._ending(effects), conn, blocking=not found.plain),
                           credit)
                return []
            return effects
        if self._retry:
            shift = len(self._retry)
            records = self._retry + records
            routes = [(i, r + shift) for i, r in routes]
            self._retry = []
        self._tokens += 1
        early = found.early and bool(routes)
        queue.hold(Held(self._tokens, self._ending(effects), conn, routes, records, early=early,
                        blocking=bool(routes) or not found.plain), credit)
        self._tell_storage(records, self._actor.actor_ref, self._tokens, early)
        return []

    def _ending(self, effects: list[Effect]) -> list[Any]:
        """``effects`` to hold; an EndSession among them takes effect now.

        The session is over: the registry drops its subscriptions and its
        name goes at once, so a new CONNECT of the client id starts a new
        session instead of reaching this one while its last effects wait.
        """
        held: list[Any] = list(effects)
        for index, effect in enumerate(held):
            if type(effect) is EndSession:
                self._actor.end_now()
                held[index] = STOP
        return held

    def _flights(self) -> Any:
        return self._actor.core.inflight

    def _tell_storage(self, records: list[Record], reply_to: Any, token: int,
                      early: bool = False) -> None:
        storage = self._storage()
        if storage is None:
            raise RuntimeError("the storage actor is not running")
        storage.tell(Append(tuple(records), reply_to, token, early))

    # -- answers from the storage actor ----------------------------------------------------

    def on_reply(self, message: Durable | NotDurable | Fetched, conn: Any) -> list[Release]:
        """What ``message`` lets go (or refuses) of what waited for its token, to carry out in
        order (``conn``: the actor's connection now); fetched messages go to the core."""
        if type(message) is Fetched:
            assert isinstance(message, Fetched)
            self.resumed.fetched(message)
            return []
        queue = self._hold
        held = queue.find(message.token)
        if held is None:
            return []
        if type(message) is Durable:
            assert isinstance(message, Durable)
            if not message.synced:  # written, the fsync under way: QoS 1 routes may go
                return queue.written(held, message.offsets)
            self._stored(held, message.offsets)
        else:
            assert isinstance(message, NotDurable)
            self._refused(held, message.reason_code, message.reason)
        held.done = True
        return queue.release_ready(conn)

    def _stored(self, held: Held, offsets: tuple[int, ...]) -> None:
        if not any(isinstance(r, PublishAccepted) and r.qos for r in held.records) and held.records:
            self._retry_backoff.reset()
        held.stored(offsets)

    def _refused(self, held: Held, code: int, reason: str) -> None:
        count = held.refuse(self._actor.core, code, reason)
        log.warning("client %s: %d publish(es) refused, the commit log cannot store them (%s)%s",
                    shown(self._cid), count, reason,
                    "; QoS 1 routed before the sync failed: delivered "
                    "at least once, resent by the client" if held.acks else "")
        if self.durable:
            kept = [r for r in held.records if not isinstance(r, PublishAccepted)]
            if kept:
                self._retry = kept + self._retry
                self._arm_retry()

    def when_released(self, callback: Any) -> None:
        """Call ``callback()`` once everything held so far is carried out (now if nothing is)."""
        if not self._hold.when_released(callback):
            callback()

    # -- records the storage refused: again, with backoff ---------------------------------

    def _arm_retry(self) -> None:
        if self._retry_armed:
            return
        self._retry_armed = True
        self._actor.call_later(self._retry_backoff.next(), RetryJournal())

    def retry(self) -> None:
        """The retry timer fired: send the kept records again (behind anything held); and
        (its other use) publish a Will taken back from the log that fell due."""
        self._retry_armed = False
        if self.wills.tick():
            self._actor.run_effects([])  # intercept adds the Will
        if not self._retry or self._storage() is None:
            return
        records, self._retry = self._retry, []
        self._tokens += 1
        self._hold.hold(Held(self._tokens, [], self._actor.connection, [], records,
                             blocking=False), None)
        self._tell_storage(records, self._actor.actor_ref, self._tokens)

    def handed_back(self, group: str, messages: tuple[AppMessage, ...]) -> None:
        """The actor gives ``messages`` back to shared subscription ``group`` (not through a
        ``HandBackShared``, whose records went with the session's own): owed by the group
        again in the log, out of this session's queue there."""
        journal_handed_back(self._storage(), group, self._cid, messages, self.durable)

    # -- start ----------------------------------------------------------------------------

    async def load(self, start: StartMode) -> SessionLoad | None:
        """The durable state the log holds for this client id (None: none), asked of the
        storage actor when the actor was woken from hibernation or restarted."""
        storage = self._storage()
        if storage is None or start is StartMode.FRESH:
            return None  # a new client id: the log has nothing of it (no ask on the way)
        load: SessionLoad | None = await storage.ask(LoadSession(self._cid), block=False)
        return load

    # -- the resumed queue (resumed.py) -----------------------------------------------

    def restored(self, load: SessionLoad) -> None:
        """The actor restored ``load``: keep its queue, note an unfinished connection."""
        self.durable = True
        self.resumed.restored(load)
        delay = self.wills.restored(load.will, load.will_due)
        if delay is not None:
            self._actor.call_later(delay, RetryJournal())
        if load.connected:  # its actor died with the connection: journal the end of it
            self._stash.append(SessionDisconnected(
                self._cid, DisconnectCause.UNKNOWN, 0, load.expiry, "session restarted",
                timestamp_us=now_us()))

    @property
    def spool(self) -> OffsetQueue | None:
        """The resumed queue still to fetch (None when there is none)."""
        return self.resumed.spool

    def deliverable(self, messages: tuple[AppMessage, ...], qos: int) -> tuple[AppMessage, ...]:
        """Of a Deliver, what goes to the core now (see :class:`ResumedQueue`)."""
        if self.hibernated:
            qos0 = sum(1 for m in messages if not min(m.qos, qos))
            if qos0:
                self._node.metrics.drop("offline_qos0", qos0, client_id=self._cid,
                                        topic=messages[0].topic)
            return ()
        return self.resumed.admit(messages, qos)

    def pump(self) -> None:
        """Fetch the next chunk of the resumed queue when the core's queue runs short."""
        self.resumed.pump()

    def dropped(self, offset: int, reason: str) -> None:
        """A logged message was dropped before reaching the core: tell the log."""
        if self.durable:
            self._tell_storage([SessionDropped(self._cid, offset, reason, timestamp_us=now_us())],
                               None, 0)

    # -- going to sleep -------------------------------------------------------------------

    def settle(self) -> None:
        """Hibernate a durable session left without a connection once nothing is pending."""
        actor = self._actor
        if (not self.settings.hibernate or not self.durable or self.hibernated
                or actor.core.state is not SessionState.DISCONNECTED or not self.idle
                or not actor.may_hibernate()):
            return
        keep = queued_records(self._cid, actor.core.queued, now_us())
        if keep:
            self._tell_storage(keep, None, 0)
        self.hibernated = True
        actor.hibernate(*self.wills.hand_over())
