"""Durability layer: the durable state of the node, folded from commit log records. Stdlib, routing and persistence only.

:class:`DurableState` applies records in log order and holds what a restart
needs: every durable session (Session Expiry Interval > 0, or Clean Session
0 at MQTT 3) with its subscriptions, Will, inbound QoS 2 packet ids,
outbound flows in flight and queue as log offsets
(:class:`~.queue.OffsetQueue`), and the retained messages as the offsets
of their records. The storage actor keeps one up to date after each sync;
recovery folds the log from the latest checkpoint (or a snapshot) into a
fresh one: the same fold both times.

Queues are *derived*: a QoS 1/2 ``PublishAccepted`` is queued at once for every
durable session whose subscriptions match it (highest granted QoS, No Local
and Retain As Published honoured, shared subscriptions excepted), so a
publisher's PUBACK needs only its own record synced. Offline sessions get
their queue limits applied here (drops reported in :attr:`DurableState.drops`).
What shared groups owe their durable members is :attr:`DurableState.shared`.
Restated records (a checkpoint) count only when folding starts at their
``CheckpointStarted``. The record-by-record table is in docs/storage.md.

Wills: a durable session's Will is in its image (:attr:`SessionImage.will`)
from ``WillSet`` until ``WillSent`` or ``WillCleared``; offline, a Will still
there is *pending* (due at :func:`~.image.will_due_us`). The Wills of
connections that have no durable session (clean sessions, and sessions that
ended before their Will went out) are :attr:`DurableState.loose_wills`: due
as soon as their connection is gone. After a crash, :meth:`DurableState.wills`
lists what the restarted broker must still publish.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from actorbroker.persistence.records import (
    CheckpointCompleted,
    CheckpointStarted,
    OutboundSent,
    OutboundUnsent,
    PubAckReceived,
    PubCompReceived,
    PublishAccepted,
    PubRecReceived,
    PubRelReceived,
    Record,
    RetainedCleared,
    RetainedSet,
    SessionConnected,
    SessionCursor,
    SessionDisconnected,
    SessionDropped,
    SessionExpired,
    SessionQueued,
    SharedPending,
    SharedRouted,
    Subscribed,
    Unsubscribed,
    WillCleared,
    WillSent,
    WillSet,
)
from actorbroker.routing import FilterTrie, matches

from .image import NEVER, Flight, FoldPolicy, SessionImage, copies, will_due_us
from .queue import Entry
from .shared import SharedBacklog, inner_filter

__all__ = ["NEVER", "DurableState", "Flight", "FoldPolicy", "SessionImage"]


class DurableState:
    """Durable sessions and retained offsets, folded from records (see the module doc)."""

    def __init__(self, policy: FoldPolicy | None = None) -> None:
        self.policy = policy or FoldPolicy()
        self.sessions: dict[str, SessionImage] = {}
        #: topic -> offset of the record holding its retained message.
        self.retained: dict[str, int] = {}
        #: (id, offset of CheckpointStarted) of the latest complete checkpoint.
        self.checkpoint: tuple[int, int] | None = None
        #: Client id -> Will of a connection with no durable session (see the module doc).
        self.loose_wills: dict[str, WillSet] = {}
        #: (client id, reason, topic) of every message dropped for an offline session.
        self.drops: list[tuple[str, str, str]] = []
        #: What shared subscriptions owe their durable members (:mod:`.shared`).
        self.shared = SharedBacklog()
        #: The offset after the last record applied.
        self.position = 0
        self._trie: FilterTrie[str, int] = FilterTrie()
        self._topic_ids: dict[str, int] = {"": 0}
        self._topic_names: list[str] = [""]
        self._fresh = True
        self._restating: int | None = None
        self._handlers = self._make_handlers()

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_handlers"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._handlers = self._make_handlers()

    def _make_handlers(self) -> dict[type[Any], Any]:
        return {
            PublishAccepted: self._publish, RetainedSet: self._retained_set,
            RetainedCleared: self._retained_cleared, SessionConnected: self._connected,
            SessionDisconnected: self._disconnected, SessionExpired: self._expired,
            Subscribed: self._subscribed, Unsubscribed: self._unsubscribed,
            WillSet: self._will_set, WillCleared: self._will_gone, WillSent: self._will_gone,
            SessionQueued: self._queued, SessionDropped: self._dropped,
            SessionCursor: self._cursor, OutboundSent: self._sent, OutboundUnsent: self._unsent,
            PubAckReceived: self._done, PubCompReceived: self._done,
            PubRecReceived: self._pubrec, PubRelReceived: self._pubrel,
            SharedRouted: self._shared_routed, SharedPending: self._shared_pending,
            CheckpointStarted: self._checkpoint_started,
            CheckpointCompleted: self._checkpoint_completed,
        }

    # -- applying ---------------------------------------------------------------------

    def apply(self, offset: int, record: Record, next_offset: int | None = None) -> None:
        """Fold one record found at ``offset`` (records of unknown types are ignored)."""
        handler = self._handlers.get(type(record))
        if next_offset is not None:
            self.position = next_offset
        if handler is None or (record.restated and self._restating is None):
            return
        if self._fresh and type(record) is not CheckpointStarted:
            self._fresh = False
        handler(offset, record)

    def apply_all(self, entries: Iterator[Any]) -> int:
        """Fold ``LogEntry`` items in order; return how many."""
        count = 0
        for count, entry in enumerate(entries, 1):  # noqa: B007 (the last one is returned)
            self.apply(entry.offset, entry.record, entry.next_offset)
        return count

    # -- views ------------------------------------------------------------------------

    @property
    def restating(self) -> bool:
        """True inside a checkpoint that folding started at and that has not completed."""
        return self._restating is not None

    def needed_from(self) -> int | None:
        """The lowest offset still needed: by a session's queue or flight, a shared group, or
        the checkpoint."""
        found = [image.first_needed() for image in self.sessions.values()]
        found += [self.shared.first_offset(), self.checkpoint and self.checkpoint[1]]
        return min((s for s in found if s is not None), default=None)

    def topic_of(self, topic_id: int) -> str:
        """The topic of a queue entry's topic id ("" when unknown)."""
        return self._topic_names[topic_id] if 0 <= topic_id < len(self._topic_names) else ""

    def topic_id(self, topic: str) -> int:
        """The id of ``topic`` in the table (added if new)."""
        found = self._topic_ids.get(topic)
        if found is None:
            found = self._topic_ids[topic] = len(self._topic_names)
            self._topic_names.append(topic)
        return found

    def offline(self) -> Iterator[SessionImage]:
        """The durable sessions without a connection."""
        return (s for s in self.sessions.values() if not s.connected)

    def wills(self) -> Iterator[tuple[str, WillSet, int]]:
        """(client id, Will, due time in µs since the epoch; 0: now) of every Will not yet
        sent whose connection is gone: loose ones, and those of offline durable sessions."""
        for client_id, will in self.loose_wills.items():
            yield client_id, will, 0
        for image in self.sessions.values():
            if image.will is not None and not image.connected:
                yield image.client_id, image.will, will_due_us(image.will, image.since_us,
                                                               image.expiry)

    def queued_messages(self) -> int:
        """Entries in every session's queue."""
        return sum(len(s.queue) for s in self.sessions.values() if s.queue is not None)

    # -- messages and retained ---------------------------------------------------------

    def _publish(self, offset: int, record: PublishAccepted) -> None:
        if record.qos == 2 and record.packet_id and record.client_id:
            image = self.sessions.get(record.client_id)
            if image is not None:
                if image.inbound is None:
                    image.inbound = set()
                image.inbound.add(record.packet_id)
        if record.restated or not record.qos:  # restated: only the inbound flow above;
            return  # QoS 0 (log_qos0): history only, never queued, retained by a RetainedSet
        if record.retain:
            if record.payload:
                self.retained[record.topic] = offset
            else:
                self.retained.pop(record.topic, None)
        if len(self._trie):
            self._derive(offset, record)
        self.shared.published(offset, record.qos, record.retain, len(record.payload),
                              record.topic, self.topic_id)

    def _derive(self, offset: int, record: PublishAccepted) -> None:
        best = copies(self._trie, record.topic, record.client_id)
        if not best:
            return
        topic = self.topic_id(record.topic)
        size = len(record.payload)
        limit, limit_bytes = self.policy.max_queued_messages, self.policy.max_queued_bytes
        for client_id, (granted, rap) in best.items():
            qos = min(record.qos, granted)
            if qos == 0:
                continue  # QoS 0 is never queued for later (nor redelivered after a crash)
            image = self.sessions[client_id]
            queue = image.offsets()
            if not image.connected and ((limit and queue.count >= limit) or (
                    limit_bytes and queue.bytes + size > limit_bytes)):
                self.drops.append((client_id, "queue_full", record.topic))
                continue
            queue.insert(Entry(offset, qos, record.retain and rap, size, topic))

    def _retained_set(self, offset: int, record: RetainedSet) -> None:
        self.retained[record.topic] = offset

    def _retained_cleared(self, offset: int, record: RetainedCleared) -> None:
        self.retained.pop(record.topic, None)

    # -- session events ----------------------------------------------------------------

    def _connected(self, offset: int, record: SessionConnected) -> None:
        self.loose_wills.pop(record.client_id, None)  # the new connection brings its own
        image = self.sessions.get(record.client_id)
        if record.clean_start and image is not None and not record.restated:
            self._discard(image)
            image = None
        if image is None:
            if record.expiry_interval == 0:
                return  # a clean session: nothing of it is durable
            image = self.sessions[record.client_id] = SessionImage(record.client_id)
        image.connected = True
        if (image.level == 5) != (record.protocol_level == 5):  # "$share/..." changes meaning
            for topic_filter in image.subs:
                self._index(image, topic_filter, False)
            image.level = record.protocol_level
            for topic_filter in image.subs:
                self._index(image, topic_filter, True)
        image.level = record.protocol_level
        image.expiry = record.expiry_interval
        image.owner = record.username
        image.will = None  # the new connection brings its own (WillSet follows)

    def _disconnected(self, offset: int, record: SessionDisconnected) -> None:
        image = self.sessions.get(record.client_id)
        if image is None:
            return
        image.connected = False
        image.expiry = record.expiry_interval
        image.since_us = record.timestamp_us
        if record.expiry_interval == 0:
            self._discard(image, will_due=True)

    def _expired(self, offset: int, record: SessionExpired) -> None:
        image = self.sessions.get(record.client_id)
        if image is not None:
            self._discard(image, will_due=True)

    def _discard(self, image: SessionImage, *, will_due: bool = False) -> None:
        """Forget a session; the session's end makes a Will it still has due (``will_due``)."""
        if will_due and image.will is not None:
            self.loose_wills[image.client_id] = image.will
        for topic_filter in image.subs:
            self._index(image, topic_filter, False)
        del self.sessions[image.client_id]

    def _index(self, image: SessionImage, topic_filter: str, add: bool) -> None:
        """Put one of ``image``'s subscriptions in (or take it out of) the trie or its group."""
        cid = image.client_id
        if _shared(image, topic_filter):
            if add:
                self.shared.join(topic_filter, cid, image.subs[topic_filter][0] & 3)
            else:
                self.shared.leave(topic_filter, cid)
        elif add:
            self._trie.add(topic_filter, cid, image.subs[topic_filter][0])
        else:
            self._trie.remove(topic_filter, cid)

    def _subscribed(self, offset: int, record: Subscribed) -> None:
        image = self.sessions.get(record.client_id)
        if image is None:
            return
        image.subs[record.topic_filter] = (record.options, record.subscription_id)
        self._index(image, record.topic_filter, True)

    def _unsubscribed(self, offset: int, record: Unsubscribed) -> None:
        image = self.sessions.get(record.client_id)
        if image is None or image.subs.pop(record.topic_filter, None) is None:
            return
        self._index(image, record.topic_filter, False)
        if image.queue:
            # What no remaining filter matches was not (or will not be) routed to it.
            # (A shared subscription's messages come as SharedRouted: its inner filter counts.)
            filters = [inner_filter(f) if _shared(image, f) else f for f in image.subs]
            names = self._topic_names
            image.queue.prune(lambda t: any(matches(f, names[t]) for f in filters))

    def _will_set(self, offset: int, record: WillSet) -> None:
        image = self.sessions.get(record.client_id)
        if image is not None:
            image.will = record
        else:  # a clean session's
            self.loose_wills[record.client_id] = record

    def _will_gone(self, offset: int, record: WillCleared | WillSent) -> None:
        image = self.sessions.get(record.client_id)
        if image is not None:
            image.will = None
        self.loose_wills.pop(record.client_id, None)

    # -- delivery state ----------------------------------------------------------------

    def _queued(self, offset: int, record: SessionQueued | SharedRouted) -> None:
        image = self.sessions.get(record.client_id)
        if image is None or any(f.offset == record.offset for f in (image.inflight or {}).values()):
            return
        image.offsets().insert(Entry(record.offset, record.qos, record.retain, record.size,
                                     self.topic_id(record.topic)))

    def _shared_routed(self, offset: int, record: SharedRouted) -> None:
        self.shared.routed(record.group, record.offset)
        if record.client_id and record.qos:
            self._queued(offset, record)

    def _shared_pending(self, offset: int, record: SharedPending) -> None:
        self.shared.owe(record.group, Entry(record.offset, record.qos, record.retain,
                                                record.size, self.topic_id(record.topic)))

    def _dropped(self, offset: int, record: SessionDropped) -> None:
        image = self.sessions.get(record.client_id)
        if image is not None and image.queue is not None:
            image.queue.remove(record.offset)
        if image is not None and image.inflight:
            # A flight can be dropped too (MQTT 5: too large for a new connection, or a
            # shared subscription's message handed back to its group: SharedPending follows).
            for packet_id in [p for p, f in image.inflight.items() if f.offset == record.offset]:
                del image.inflight[packet_id]

    def _cursor(self, offset: int, record: SessionCursor) -> None:
        image = self.sessions.get(record.client_id)
        queue = None if image is None else image.queue
        while queue:
            head = queue.peek()
            if head is None or head.offset >= record.offset:
                break
            queue.pop()

    def _sent(self, offset: int, record: OutboundSent) -> None:
        image = self.sessions.get(record.client_id)
        if image is None:
            return
        flights = image.flights()
        entry = None if image.queue is None else image.queue.take(record.offset)
        if entry is not None:
            topic = entry.topic
        else:  # the first send of a flow never written before (OutboundUnsent): it keeps its topic
            known = flights.get(record.packet_id)
            topic = known.topic if known is not None and known.offset == record.offset else 0
        flights[record.packet_id] = Flight(record.offset, record.qos, record.retain, False, topic)

    def _unsent(self, offset: int, record: OutboundUnsent) -> None:
        image = self.sessions.get(record.client_id)
        flights = None if image is None else image.inflight
        flight = None if not flights else flights.get(record.packet_id)
        if flights and flight is not None and not flight.released:
            flights[record.packet_id] = flight._replace(unsent=True)  # keeps its place

    def _done(self, offset: int, record: PubAckReceived | PubCompReceived) -> None:
        image = self.sessions.get(record.client_id)
        if image is not None and image.inflight:
            image.inflight.pop(record.packet_id, None)

    def _pubrec(self, offset: int, record: PubRecReceived) -> None:
        image = self.sessions.get(record.client_id)
        flights = None if image is None else image.inflight
        flight = None if not flights else flights.pop(record.packet_id, None)
        if flight is not None and flights is not None:
            flights[record.packet_id] = flight._replace(released=True, unsent=False)  # PUBREC order

    def _pubrel(self, offset: int, record: PubRelReceived) -> None:
        image = self.sessions.get(record.client_id)
        if image is not None and image.inbound:
            image.inbound.discard(record.packet_id)

    # -- checkpoints -------------------------------------------------------------------

    def _checkpoint_started(self, offset: int, record: CheckpointStarted) -> None:
        if self._fresh:
            self._restating = record.checkpoint_id  # folding starts here: take what follows

    def _checkpoint_completed(self, offset: int, record: CheckpointCompleted) -> None:
        if self._restating == record.checkpoint_id:
            self._restating = None
        self.checkpoint = (record.checkpoint_id, record.started_at)


def _shared(image: SessionImage, topic_filter: str) -> bool:
    """True for a shared subscription (``$share/...`` of an MQTT 5 session; a plain filter
    at MQTT 3, as the registry has it)."""
    return image.level == 5 and topic_filter.startswith("$share/")
