"""Actors layer: a session's effects held until the commit log stored their records, released in order. Stdlib, codec, session, persistence, durable.

One :class:`HoldQueue` per :class:`~.log.LogJournal`: a queue of
:class:`Held` entries, one per core call whose effects wait for the
commit log (or that came while others waited). An entry is *released*
(its effects handed back, as a :class:`Release`, for the actor to carry
out) once it is at the front and its
records are stored (``Durable``) or refused (``NotDurable``); an entry
without records of its own goes when it reaches the front. So no packet
overtakes a pending PUBACK, and a publisher's messages are routed in order.

Each :class:`Held` holds the effects of one core call, the records told to
the storage actor for them under ``token`` (None: nothing of its own, only
behind earlier entries), and the connection they were made for. When the
answer comes:

* :meth:`Held.stored` gives each logged message its log offset (routes and
  Wills are then carried out with it, so subscribers can journal it);
* :meth:`Held.route_early` (an ``early`` entry, its records written but not
  synced yet): its routes, with their offsets, to carry out now; the PUBACKs
  stay in place until the sync (below);
* :meth:`Held.refuse` puts the session core's refusals
  (:meth:`SessionCore.refuse_unstored`: MQTT 5 PUBACK/PUBREC with the
  reason code, MQTT 3.x no acknowledgement and a Close) in place of the
  acknowledgements it held; a QoS 1 message routed early is refused all
  the same (delivered at least once);
* :meth:`Held.release` gives the effects back to carry out (a
  :class:`Release`). Packets and closes made for a connection that has
  since been replaced (a take-over) go to that connection only.

**Early routes** (mode fsync). An entry whose logged messages are all QoS 1
(``Held.early``) is told ``Durable(token, offsets, synced=False)`` once its
records are written, before their fdatasync. Its routes are then carried
out at once, with their offsets, if every entry before it is released or
holds nothing that routes must not overtake (``Held.blocking`` False: it
only holds packets to this client, timers, and PUBACKs of messages routed
early); else when that becomes true. The PUBACKs and everything else of the
entry stay held until ``Durable``. Safe for QoS 1: if the broker dies
before the sync, the publisher got no PUBACK and resends (at least once
allows the duplicate), and any record a subscriber's session writes about
the offset lands after the ``PublishAccepted`` in the same append-only log, so it
is never durable without it. Not for QoS 2: lost with the sync and resent,
the message would be delivered twice. (docs/storage.md, "What is synced
before what".)

A ``NotDurable`` after an early route refuses the PUBACK all the same (MQTT
5: the reason code; 3.x: no PUBACK, the connection closes): the publisher
sends the message again, which its subscribers then get twice (at least
once).
"""

from __future__ import annotations

import dataclasses
import time
from collections import deque
from collections.abc import Callable
from operator import attrgetter
from typing import Any

from actorbroker.codec import Packet, PubAck, PubRec
from actorbroker.codec.frozen import mutable_twin
from actorbroker.durable import NEVER
from actorbroker.persistence.records import (OutboundUnsent, PubAckReceived, PubCompReceived,
                                             Record, SessionDropped)
from actorbroker.session import (AppMessage, CancelTimer, Close, Dropped, Effect, PublishWill,
                                 Route, Send, SessionCore, StartTimer)

__all__ = ["NEUTRAL", "STOP", "UNHELD", "Held", "HoldQueue", "Release", "expiry_of", "now_us",
           "with_offset"]

#: Records whose loss in a crash costs at most a resend the protocol allows (a QoS 1
#: PUBLISH again, a PUBREL answered anyway, DUP=1 on a PUBLISH never written): the packets
#: after them need not wait.
UNHELD = frozenset({PubAckReceived, PubCompReceived, SessionDropped, OutboundUnsent})

#: Effects that later routes may overtake: packets to this client (a message routed back
#: to it queues behind them), timers, counts. Anything else (a route, a registry request,
#: a Will, a close, the end) keeps the routes of later entries behind it.
NEUTRAL = frozenset({Send, StartTimer, CancelTimer, Dropped})


_MESSAGE_FIELDS = attrgetter(*(f.name for f in dataclasses.fields(AppMessage)))
_MessageBuilder: Any = mutable_twin(AppMessage)


def with_offset(message: AppMessage, offset: int) -> AppMessage:
    """``message`` with its log offset: ``dataclasses.replace`` without its cost (once per
    stored message)."""
    built = _MessageBuilder(*_MESSAGE_FIELDS(message))
    built.log_offset = offset
    built.__class__ = AppMessage
    return built  # type: ignore[no-any-return]


def now_us() -> int:
    """Wall-clock time as records hold it: microseconds since the epoch."""
    return int(time.time() * 1e6)


def expiry_of(core: Any) -> int:
    """The core's Session Expiry Interval in force, as a record holds it (0xFFFFFFFF: never)."""
    expiry = core.session_expiry
    return NEVER if expiry is None else min(NEVER, int(expiry))


@dataclasses.dataclass(frozen=True, slots=True)
class _Stop:
    """In held effects in place of EndSession: the session ended already, stop the actor."""


#: The marker that stops the actor once the effects before it are carried out.
STOP = _Stop()


class Held:
    """Effects waiting for ``token``, for connection ``conn`` (see the module doc).

    ``early``: the logged messages are all QoS 1 and every other effect is a
    route or :data:`NEUTRAL`, so the routes may go once the records are
    written (``written``: their offsets), before the sync. ``blocking``: the
    entry still holds something that routes of later entries must not
    overtake.
    """

    __slots__ = ("acks", "blocking", "conn", "credit", "done", "early", "effects", "records",
                 "routes", "then", "token", "written")

    def __init__(self, token: int | None, effects: list[Any], conn: Any,
                 routes: list[tuple[int, int]] | None = None,
                 records: list[Record] | None = None, *, early: bool = False,
                 blocking: bool = True) -> None:
        self.token = token
        self.effects = effects
        self.conn = conn
        self.routes = routes or []  # (effect index, record index) of each logged message
        self.records = records or []
        self.done = False
        self.then: list[Any] = []  # callbacks once released
        self.early = early
        self.blocking = blocking
        self.written: tuple[int, ...] | None = None  # offsets told early (not routed yet)
        self.acks: list[tuple[int, PubAck | PubRec]] = []  # (effect index, ack) of early routes
        self.credit: Any = None  # the read credit its routes carry (actors/backpressure.py)

    def route_early(self) -> list[Effect]:
        """The routes to carry out now, in order, logged messages with their offsets; each
        PUBACK stays in place (a ``Send``) until the records are synced."""
        offsets = self.written
        assert offsets is not None
        at = dict(self.routes)
        effects = self.effects
        now: list[Effect] = []
        for index, effect in enumerate(effects):
            if type(effect) is not Route:
                continue
            assert isinstance(effect, Route)
            message = effect.message
            if index in at:
                message = with_offset(message, offsets[at[index]])
            now.append(Route(message, None))
            ack = effect.ack
            effects[index] = Send(() if ack is None else (ack,))
            if ack is not None and index in at:
                self.acks.append((index, ack))
        self.written = None
        self.blocking = False
        return now

    def stored(self, offsets: tuple[int, ...]) -> None:
        """The records are stored at ``offsets``: each logged message gets its own."""
        effects = self.effects
        for index, at in self.routes:
            effect = effects[index]
            if isinstance(effect, Route):
                effects[index] = Route(with_offset(effect.message, offsets[at]), effect.ack)
            elif isinstance(effect, PublishWill):
                effects[index] = PublishWill(with_offset(effect.message, offsets[at]))

    def refuse(self, core: SessionCore, code: int, reason: str) -> int:
        """The records could not be stored: refuse the publishes (those routed early too: they
        were delivered at least once); return how many."""
        effects = self.effects
        # A logged message that is not a Route is a Will: published all the same.
        held = [(index, effect.ack) for index, _ in self.routes
                if isinstance(effect := effects[index], Route) and effect.ack is not None]
        held += self.acks
        refusals = core.refuse_unstored([ack for _, ack in held], code, reason)
        for (index, _), refusal in zip(held, refusals):
            effects[index] = refusal  # one per ack, in order; then what follows them (a Close)
        effects += refusals[len(held):]
        return len(held)

    def release(self, current: Any) -> Release:
        """What carrying the effects out means now that ``current`` is the actor's connection:
        packets and closes made for a replaced connection go to that one at once, the rest
        (and the callbacks, and the stop if the session ended) to the actor, in order."""
        effects = self.effects
        conn = self.conn
        if conn is not current:
            rest: list[Effect] = []
            for effect in effects:
                if isinstance(effect, Send):
                    if conn is not None and effect.packets:
                        conn.send(effect.packets)
                elif isinstance(effect, Close):
                    if conn is not None:
                        conn.close(None, effect.reason)
                else:
                    rest.append(effect)
            effects = rest
        stop = any(isinstance(e, _Stop) for e in effects)
        if stop:
            effects = [e for e in effects if not isinstance(e, _Stop)]
        credit, self.credit = self.credit, None
        return Release(effects, credit, self.then, stop)


@dataclasses.dataclass(frozen=True, slots=True)
class Release:
    """Effects the queue let go, for the actor to carry out past the journal, in order; then
    it takes ``credit`` back (the read credit their routes carried: it was held once more
    for them), calls ``then`` and stops if ``then_stop`` (an EndSession was among them)."""

    effects: list[Effect]
    credit: Any = None
    then: list[Callable[[], None]] = dataclasses.field(default_factory=list)
    then_stop: bool = False


class HoldQueue:
    """The held entries of one session actor (see the module doc).

    Pull style: it never calls the actor. What it lets go comes back as
    :class:`Release` values, in order, which the actor carries out past the
    journal (``SessionActor._carry_releases``).
    """

    __slots__ = ("_entries", "_waiting")

    def __init__(self) -> None:
        self._entries: deque[Held] = deque()
        self._waiting = 0  # entries written early whose routes wait for an entry before them

    def __bool__(self) -> bool:
        return bool(self._entries)

    def hold(self, held: Held, credit: Any) -> None:
        """Queue ``held`` behind everything held so far; it holds ``credit``, the read credit
        of the effects (if they came from a read), once more until its routes go."""
        if credit is not None:
            credit.hold(1)
        held.credit = credit
        self._entries.append(held)

    def packets_for(self, conn: Any) -> list[Packet]:
        """The packets held for ``conn``: once it is gone, never written (``Held.release``
        gives them to that closed connection, which drops them)."""
        return [packet for held in self._entries if held.conn is conn
                for effect in held.effects if type(effect) is Send
                for packet in effect.packets]

    def find(self, token: int) -> Held | None:
        """The entry waiting for ``token`` (None: none, e.g. answered already)."""
        for held in self._entries:
            if held.token == token:
                return held
        return None

    def written(self, held: Held, offsets: tuple[int, ...]) -> list[Release]:
        """The records of ``held`` are written at ``offsets``, not synced: its routes, if they
        may go now."""
        if not held.early or held.done or not held.blocking:
            return []
        held.written = offsets
        self._waiting += 1
        return self._route_early()

    def release_ready(self, current: Any) -> list[Release]:
        """The entries at the front that are answered (or have no records), released for
        ``current`` (the actor's connection now); then the early routes they held back."""
        entries = self._entries
        released: list[Release] = []
        while entries and (entries[0].done or entries[0].token is None):
            held = entries.popleft()
            if held.written is not None:  # written early, never routed early: routed now
                self._waiting -= 1
            released.append(held.release(current))
        if self._waiting:
            released += self._route_early()
        return released

    def _route_early(self) -> list[Release]:
        released: list[Release] = []
        for held in self._entries:
            if held.written is not None:
                self._waiting -= 1
                credit, held.credit = held.credit, None
                released.append(Release(held.route_early(), credit))  # each with its read's credit
            if held.blocking:
                break
        return released

    def when_released(self, callback: Callable[[], None]) -> bool:
        """Call ``callback()`` once everything held so far is carried out; False if nothing
        is held (the caller calls it now)."""
        if self._entries:
            self._entries[-1].then.append(callback)
            return True
        return False
