"""Actors layer: a durable session's queue as log offsets (loaded, or spilled from RAM), fetched as the client keeps up. Stdlib, pykka, routing, session, durable.

When a session actor loads a durable session (after a restart, or out of
hibernation), its queued messages come as log offsets (an
:class:`~actorbroker.durable.OffsetQueue`, the *spool*): RAM holds 17 bytes
a message, the payloads stay in the log. Once the client is attached,
:meth:`ResumedQueue.pump` asks the storage actor for the next 64 payloads
whenever the core's own queue is shorter than 32, no more than that queue's
limits have room for (``max_queued_messages``, ``max_queued_bytes``: what
did not fit would be dropped there while newer entries waited on in the
spool), and feeds them to the core in order (which sends what the inflight
window takes and queues the rest). While the spool is not empty, a logged message that arrives live
joins it at the end, within the session's queue limits, so that order is
kept; QoS 0 and unlogged messages go to the core at once (order across QoS
levels is not required, [MQTT-4.6.0-6] is per QoS).

The same spool takes over from a durable session's queue in RAM when that
queue is full (``max_queued_messages``, ``max_queued_bytes``; a connected
client stuck past ``backpressure_timeout``, or an offline one whose session
stays in RAM): a logged QoS 1/2 message for it is in the commit log anyway,
so it waits there, bounded by the log's bytes (``[storage]
durable_queue_bytes``), instead of being dropped.

A logged message with an offset below the position the state was loaded
at, still on its way when the session loaded, is in the spool already (the
fold queued it when its ``PublishAccepted`` was stored): it is skipped.

The spool keeps no MQTT 5 Subscription Identifiers (17 bytes a message).
A spooled message gets those of the session's subscriptions that match its
topic and had one when the session loaded ([MQTT-3.3.4-3]): the client
cannot have changed them while its messages were queued offline.
"""

from __future__ import annotations

from typing import Any

from actorbroker.durable import Entry, OffsetQueue
from actorbroker.routing import matches, parse_shared
from actorbroker.session import AppMessage, Effect, SessionState
from actorbroker.session.queue import OutboundQueue

from ...storage.requests import Fetch, Fetched, SessionLoad

__all__ = ["ResumedQueue"]

#: Messages fetched from the log per round trip, and the core queue length that asks for more.
CHUNK = 64
LOW = 32


class ResumedQueue:
    """The spool of one session actor (see the module doc)."""

    __slots__ = ("_actor", "_fetching", "_journal", "_node", "_sub_ids", "_tokens", "horizon",
                 "spool")

    def __init__(self, actor: Any, node: Any, journal: Any) -> None:
        self._actor = actor
        self._node = node
        self._journal = journal  # LogJournal: dropped(offset, reason)
        self.spool: OffsetQueue | None = None
        self.horizon = 0  # offsets below it came with the loaded state
        self._fetching: tuple[int, list[Entry]] | None = None
        self._tokens = 0
        #: (filter matched against a topic, Subscription Identifier) as loaded.
        self._sub_ids: tuple[tuple[str, str, int], ...] = ()

    @property
    def fetching(self) -> bool:
        return self._fetching is not None

    def detach(self) -> None:
        """The session actor stopped: let go of it and of its journal, which holds this queue
        (reference cycles the collector would have to find)."""
        self._journal = None
        self._actor = None

    def restored(self, load: SessionLoad) -> None:
        self.horizon = load.position
        if load.queue:
            self.spool = load.queue
        self._sub_ids = tuple((f, _plain(f), sub_id) for f, sub_id in load.subscription_ids)

    def _ids_for(self, topic: str) -> tuple[int, ...]:
        """The Subscription Identifiers a spooled message on ``topic`` goes out with."""
        held = self._actor.core.subscriptions
        return tuple(sub_id for f, plain, sub_id in self._sub_ids
                     if f in held and matches(plain, topic))

    def discard(self) -> None:
        """The session state was discarded (clean start): the spool goes, counted."""
        if self.spool:
            self._node.metrics.drop("session_ended", len(self.spool),
                                    client_id=self._actor.client_id)
        self.spool = None
        self._fetching = None  # a chunk on its way belongs to the discarded state: ignored

    def admit(self, messages: tuple[AppMessage, ...], qos: int) -> tuple[AppMessage, ...]:
        """Of a Deliver, what goes to the core now; logged messages join a non-empty spool,
        and start one when the core's queue cannot take them (a durable session)."""
        spool, horizon = self.spool, self.horizon
        queue = None
        if spool is None and not horizon:
            queue = self._actor.core.queue
            if queue.elastic or not self._journal.durable or not queue.refuses(
                    sum(m.size for m in messages), len(messages)):
                return messages
        now: list[AppMessage] = []
        now_bytes = 0
        settings = self._journal.settings
        limit, limit_bytes = settings.max_queued_messages, settings.max_queued_bytes
        for message in messages:
            delivery_qos = min(message.qos, qos)
            if delivery_qos and 0 <= message.log_offset < horizon:
                continue  # routed before the state was loaded: the loaded queue has it
            if spool is None and queue is not None and delivery_qos and message.log_offset >= 0 \
                    and queue.refuses(now_bytes + message.size, len(now) + 1):
                # The queue in RAM is full: from here on what the log holds waits there as
                # offsets, behind that queue (see the module doc).
                spool = self.spool = OffsetQueue()
            if spool is None or not delivery_qos or message.log_offset < 0:
                now.append(message)
                now_bytes += message.size
            elif (limit and len(spool) >= limit) or (
                    limit_bytes and spool.bytes + message.size > limit_bytes):
                self._node.metrics.drop("queue_full", client_id=self._actor.client_id,
                                        topic=message.topic)
                self._journal.dropped(message.log_offset, "queue_full")
            else:
                spool.append(Entry(message.log_offset, delivery_qos, False, message.size))
        return tuple(now)

    def pump(self) -> None:
        """Fetch the next chunk of the spool when the core's queue runs short."""
        spool, core = self.spool, self._actor.core
        if spool is None or self._fetching is not None or not core.attached:
            return
        if not spool:
            self.spool = None
            return
        queue = core.queue
        if len(queue) >= LOW:
            return
        entries = _fitting(spool, queue)
        if not entries:
            return  # the queue's limits have no room yet: the next acknowledgement makes some
        self._tokens += 1
        self._fetching = (self._tokens, entries)
        self._node.names.storage().tell(Fetch(tuple(e.offset for e in entries),
                                           self._actor.actor_ref, self._tokens))

    def fetched(self, message: Fetched) -> None:
        """The storage actor read a chunk back: feed it to the core, then ask for more."""
        fetching, self._fetching = self._fetching, None
        if fetching is None or fetching[0] != message.token:
            return
        actor = self._actor
        core, now = actor.core, actor.now()
        effects: list[Effect] = []
        for entry, found in zip(fetching[1], message.messages):
            if found is None:  # its segment was lost (quarantined, deleted by hand)
                self._node.metrics.drop("unreadable", client_id=actor.client_id)
                self._journal.dropped(entry.offset, "unreadable")
                continue
            if core.state is SessionState.ENDED:
                break
            grants = core.grants  # queued before an ACL reload revoked its subscription
            if grants is not None and not grants.may_read(found.topic):
                self._node.metrics.drop("not_authorized", client_id=actor.client_id,
                                        topic=found.topic)
                self._journal.dropped(entry.offset, "not_authorized")
                continue
            ids = self._ids_for(found.topic) if self._sub_ids else ()
            if ids:
                effects += core.deliver5(found, entry.qos, now, retain=entry.retain,
                                         subscription_ids=ids)
            else:
                effects += core.deliver(found, entry.qos, now, retain=entry.retain)
        if effects:
            actor.run_effects(effects)
        if self.spool is not None and not self.spool and self._fetching is None:
            self.spool = None
        self.pump()


def _fitting(spool: OffsetQueue, queue: OutboundQueue) -> list[Entry]:
    """The head of ``spool`` that the core's ``queue`` has room for (at most :data:`CHUNK`),
    taken off the spool. A chunk past the queue's limits would be dropped there (queue_full)
    while the newer entries behind it waited on in the spool. One entry that could never fit
    is taken when the queue is empty (the core drops it)."""
    policy = queue.policy
    room = CHUNK
    if policy.max_queued_messages:
        room = min(room, policy.max_queued_messages - len(queue))
    room_bytes = policy.max_queued_bytes - queue.bytes if policy.max_queued_bytes else None
    entries: list[Entry] = []
    while len(entries) < room and spool:
        head = spool.peek()
        if head is None:
            break
        if room_bytes is not None:
            if head.size > room_bytes and (entries or queue):
                break
            room_bytes -= head.size
        entries.append(spool.pop())
    return entries


def _plain(topic_filter: str) -> str:
    """The filter a topic is matched against (a shared subscription's inner one)."""
    shared = parse_shared(topic_filter)
    return topic_filter if shared is None else shared.filter
