"""Durability layer: one durable session as the commit log tells it, and the fold's limits. Stdlib, routing and persistence only.

:class:`SessionImage` is what :class:`~.fold.DurableState` keeps per durable
session; :class:`Flight` one outbound flow of it; :class:`FoldPolicy` the
queue limits applied to offline sessions. :func:`will_due_us` says when a
session's Will is due once its connection is gone (MQTT 5: the Will Delay
Interval, at most the Session Expiry Interval; MQTT 3: at once);
:func:`copies` what a message gives each session's plain subscriptions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from actorbroker.persistence.records import WillSet
from actorbroker.routing import FilterTrie

from .queue import OffsetQueue

__all__ = ["NEVER", "Flight", "FoldPolicy", "SessionImage", "copies", "will_due_us"]

#: Session Expiry Interval that never runs out.
NEVER = 0xFFFFFFFF


def will_due_us(will: WillSet, since_us: int, expiry: int) -> int:
    """When ``will`` is due (microseconds since the epoch) for a connection gone at ``since_us``.

    The Will Delay Interval (0 at MQTT 3), but never later than the end of
    the session ([MQTT-3.1.3-9]: whichever comes first).
    """
    return since_us + min(will.delay_interval, expiry) * 1_000_000


@dataclass(frozen=True, slots=True)
class FoldPolicy:
    """The queue limits applied to offline sessions (``[storage] durable_queue_bytes`` and no
    count; 0: unlimited)."""

    max_queued_messages: int = 1000
    max_queued_bytes: int = 0


class Flight(NamedTuple):
    """An outbound QoS 1/2 flow: the message, how it was sent, whether PUBREC came back,
    whether the PUBLISH was never written. (Fields are only ever appended: a snapshot
    unpickles an older, shorter one with the defaults.)"""

    offset: int
    qos: int
    retain: bool
    released: bool = False  # PUBREC received: resend PUBREL, never the PUBLISH
    topic: int = 0
    unsent: bool = False  # OutboundUnsent: the PUBLISH was never written, resend it with DUP=0


class SessionImage:
    """One durable session as the log tells it (empty parts are None, to save RAM)."""

    __slots__ = ("client_id", "connected", "expiry", "inbound", "inflight", "level", "owner",
                 "queue", "since_us", "subs", "will")

    def __init__(self, client_id: str) -> None:
        self.client_id = client_id
        self.level = 4
        self.expiry = 0
        self.owner = ""  # the user name of its connections: whose session it is
        self.connected = False
        self.since_us = 0  # when it went offline, microseconds since the epoch
        self.subs: dict[str, tuple[int, int]] = {}  # filter -> (options byte, subscription id)
        self.will: WillSet | None = None  # offline: a Will not sent yet (pending)
        self.inbound: set[int] | None = None
        self.inflight: dict[int, Flight] | None = None
        self.queue: OffsetQueue | None = None

    def flights(self) -> dict[int, Flight]:
        if self.inflight is None:
            self.inflight = {}
        return self.inflight

    def offsets(self) -> OffsetQueue:
        if self.queue is None:
            self.queue = OffsetQueue()
        return self.queue

    def first_needed(self) -> int | None:
        """The lowest log offset this session still reads (queue or flight)."""
        found = [f.offset for f in (self.inflight or {}).values()]
        head = None if self.queue is None else self.queue.first_offset()
        if head is not None:
            found.append(head)
        return min(found) if found else None


_NO_LOCAL = 0x04
_RETAIN_AS_PUBLISHED = 0x08


def copies(trie: FilterTrie[str, int], topic: str,
           publisher: str) -> dict[str, tuple[int, bool]]:
    """Client -> (granted QoS, Retain As Published) of the copy each durable session's plain
    subscriptions in ``trie`` (options as the Subscribed record has them) give it of a
    message to ``topic``: the highest QoS, No Local honoured, RETAIN kept if any of them
    is Retain As Published."""
    best: dict[str, tuple[int, bool]] = {}
    for _, members in trie.match_filters(topic):
        for client_id, options in members.items():
            if options & _NO_LOCAL and client_id == publisher:
                continue
            qos, rap = options & 3, bool(options & _RETAIN_AS_PUBLISHED)
            held = best.get(client_id)
            # As a live delivery does (session/suboptions.select): any matching
            # subscription's Retain As Published keeps the RETAIN flag.
            best[client_id] = (qos, rap) if held is None else (max(qos, held[0]), rap or held[1])
    return best
