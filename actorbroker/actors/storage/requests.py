"""Actors layer: the messages to and from the storage actor and the session keeper. Stdlib, pykka, codec, session, durable, persistence.

Who tells whom::

    session  -> storage   Append(records, reply_to, token, early)    group commit
    storage  -> session   Durable(token, offsets, synced=False)  written, fsync under way
                          (mode fsync, early Appends only: QoS 1 routed now)
    storage  -> session   Durable(token, offsets) | NotDurable(token, code, reason)
    session  -> storage   Fetch(offsets, reply_to, token)     payloads of a resumed queue
    storage  -> session   Fetched(token, messages)
    session  => storage   LoadSession(client_id)              (ask, from on_start) -> SessionLoad
    registry => storage   LoadRouting()                       (ask, from on_start) -> RoutingLoad
    keeper   => storage   LoadOffline(), LoadWills()          (asks, from on_start)
    keeper   -> storage   Tick()                              retention, checkpoints, probing
    keeper   -> storage   Append(PublishAccepted + WillSent, keeper, token)   a Will, then routed
    storage  -> keeper    OfflineDropped(client_id, reason, topic)
    storage  -> keeper    PendingWill(...)                    a restarted clean session's Will
    session  -> keeper    Hibernated(client_id, expiry, will, will_due)
    session  -> itself    RetryJournal                        records refused, sent again

The storage actor is a thread actor: tells from the loop cost a queue put,
its answers come back as tells (or as the LoopFuture of an ask, awaited on
the loop). It never asks anyone.
"""

from __future__ import annotations

from dataclasses import dataclass

from actorbroker.codec import Subscription
from actorbroker.codec.frozen import quick_init
from actorbroker.durable import OffsetQueue
from actorbroker.persistence.records import Record, WillSet
from actorbroker.session import AppMessage
from supervisors import Teller

__all__ = [
    "Append",
    "Durable",
    "Fetch",
    "Fetched",
    "Hibernated",
    "LoadOffline",
    "LoadRouting",
    "LoadSession",
    "LoadWills",
    "NotDurable",
    "OfflineDropped",
    "OfflineSession",
    "PendingWill",
    "RestoredFlight",
    "RetryJournal",
    "RoutingLoad",
    "SessionLoad",
    "StorageStatus",
    "Tick",
]


@quick_init
@dataclass(frozen=True, slots=True)
class Append:
    """Append ``records`` in one group commit; tell ``reply_to`` (if any) the outcome with ``token``.

    ``early``: the sender routes QoS 1 messages of these records as soon as they are written
    (mode fsync: ``Durable(token, offsets, synced=False)`` before the fdatasync, then the
    final answer); see "What is held" in docs/storage.md.
    """

    records: tuple[Record, ...]
    reply_to: Teller | None
    token: int
    early: bool = False


@quick_init
@dataclass(frozen=True, slots=True)
class Durable:
    """The records of ``token`` are stored (mode fsync: on disk); their offsets, in order.

    ``synced`` False ("written"): the records are written to the log at ``offsets`` (final)
    and their fdatasync is under way; ``Durable(token, offsets)`` or ``NotDurable(token, ...)``
    follows. Sent only to the sender of an ``Append(early=True)``, in mode fsync. (One class
    for both, so that every receiver of ``Durable`` dispatches it as it does today.)
    """

    token: int
    offsets: tuple[int, ...]
    synced: bool = True


@quick_init
@dataclass(frozen=True, slots=True)
class NotDurable:
    """The records of ``token`` could not be stored: ``reason_code`` 0x97 (disk full) or 0x80."""

    token: int
    reason_code: int
    reason: str


@quick_init
@dataclass(frozen=True, slots=True)
class Fetch:
    """Read back the messages logged at ``offsets``; answer :class:`Fetched` with ``token``."""

    offsets: tuple[int, ...]
    reply_to: Teller
    token: int


@quick_init
@dataclass(frozen=True, slots=True)
class Fetched:
    """The messages of a :class:`Fetch`, in its order (None: gone from the log)."""

    token: int
    messages: tuple[AppMessage | None, ...]


@quick_init
@dataclass(frozen=True, slots=True)
class LoadSession:
    """Ask: the durable state of ``client_id`` (a :class:`SessionLoad`, or None)."""

    client_id: str


@quick_init
@dataclass(frozen=True, slots=True)
class RestoredFlight:
    """An outbound QoS 1/2 flow to resume: PUBLISH again with DUP, or PUBREL when ``released``;
    ``unsent``: the PUBLISH was never written, so it goes with DUP=0."""

    packet_id: int
    message: AppMessage | None
    qos: int
    retain: bool
    released: bool
    unsent: bool = False


@quick_init
@dataclass(frozen=True, slots=True)
class SessionLoad:
    """What the log holds of one durable session; ``queue`` is a private copy.

    ``position``: the log offset the state was folded up to. A logged
    message below it that is still on its way to the session is in the
    queue already (or was never for it). ``will``: a Will not sent yet, of a
    connection that is gone (or went with the previous actor), due at
    ``will_due`` (seconds since the epoch) unless a connection resumes the
    session before. ``subscription_ids``: (filter, MQTT 5 Subscription
    Identifier) of the subscriptions that have one; the queue's entries do
    not keep them ([MQTT-3.3.4-3]: see ``ResumedQueue``).
    """

    client_id: str
    level: int
    expiry: int
    connected: bool
    subscriptions: tuple[Subscription, ...]
    will: WillSet | None
    inbound_qos2: tuple[int, ...]
    flights: tuple[RestoredFlight, ...]
    queue: OffsetQueue
    position: int = 0
    will_due: float = 0.0
    subscription_ids: tuple[tuple[str, int], ...] = ()


@quick_init
@dataclass(frozen=True, slots=True)
class LoadRouting:
    """Ask: every durable subscription and retained message (a :class:`RoutingLoad`)."""


@quick_init
@dataclass(frozen=True, slots=True)
class RoutingLoad:
    """Per durable client: (client id, protocol level, ((subscription, its MQTT 5
    Subscription Identifier or 0), ...)); and the retained messages."""

    subscriptions: tuple[tuple[str, int, tuple[tuple[Subscription, int], ...]], ...]
    retained: tuple[AppMessage, ...]


@quick_init
@dataclass(frozen=True, slots=True)
class OfflineSession:
    """A durable session without a connection: its expiry, and since when it is offline."""

    client_id: str
    expiry: int
    since: float  # seconds since the epoch
    owner: str = ""  # the user it belongs to ("" anonymous): see actors/connect/owners.py


@quick_init
@dataclass(frozen=True, slots=True)
class LoadOffline:
    """Ask: every offline durable session (a tuple of :class:`OfflineSession`)."""


@quick_init
@dataclass(frozen=True, slots=True)
class LoadWills:
    """Ask: every Will still to publish (a tuple of :class:`PendingWill`)."""


@quick_init
@dataclass(frozen=True, slots=True)
class PendingWill:
    """The Will of ``client_id``, not sent, its connection gone: due at ``due`` (seconds since
    the epoch; 0: now). ``durable``: the Will of a (hibernated) durable session, which a new
    connection resuming the session before ``due`` cancels; else a loose one, due now."""

    client_id: str
    will: WillSet
    due: float
    durable: bool


@quick_init
@dataclass(frozen=True, slots=True)
class Tick:
    """Periodic work of the storage actor: retention, checkpoints, probing after a failure."""


@quick_init
@dataclass(frozen=True, slots=True)
class StorageStatus:
    """Ask: a dict of the storage actor's figures (tests, $SYS)."""


@quick_init
@dataclass(frozen=True, slots=True)
class OfflineDropped:
    """A message for offline ``client_id`` was dropped by the queue limits (count it)."""

    client_id: str
    reason: str
    topic: str


@quick_init
@dataclass(frozen=True, slots=True)
class RetryJournal:
    """A session's own timer: send the journal records the storage refused again."""


@quick_init
@dataclass(frozen=True, slots=True)
class Hibernated:
    """Durable session ``client_id`` went offline and its actor stopped; ``expiry`` in seconds;
    ``will``: a Will it took back from the log and did not send yet, due at ``will_due``."""

    client_id: str
    expiry: int
    will: WillSet | None = None
    will_due: float = 0.0
