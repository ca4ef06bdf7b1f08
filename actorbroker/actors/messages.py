"""Actors layer: the messages between gateway, sessions, topics, registry and $SYS. Stdlib, pykka, codec, session.

The messages the transport tells a session (``Inbound``, ``Drained``,
``ConnectionLost``) are in :mod:`actorbroker.ports`, which may import
the codec only; these carry :class:`~actorbroker.session.AppMessage` and
therefore live with the actors. All are frozen slotted dataclasses;
commands are imperative, notifications past tense.

Who tells whom: the table in docs/architecture.md, "Who tells whom" (with
the storage actor's messages; tests/unit/test_architecture_doc.py keeps it
complete).

Never ask around a cycle: the registry never asks a session or a topic; a
topic never asks anyone.

A read's messages carry its ``ReadCredit`` from the publisher's session
through ``PublishBatch``/``RouteViaRegistry`` to each ``Deliver`` (and
``DeliverMatched``); see docs/architecture.md, "Backpressure". Shared
subscriptions' deliveries do not: they hold no publisher back.

Epochs: each session actor holds an *epoch*, a number unique on the node,
renewed whenever its session state is discarded (clean start over an old
session, expiry) and fresh for every new actor. Its subscriptions carry the
epoch they were made in, and so does every ``Deliver``; a session ignores a
``Deliver`` of another epoch. Removing old subscriptions is asynchronous
(the registry, then the topic actors): the epoch keeps a message for a
discarded subscription from reaching the new session in the meantime.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pykka import ActorRef

from actorbroker.codec import Connect, Subscription
from actorbroker.codec.frozen import quick_init
from actorbroker.ports import ReadCredit
from actorbroker.session import AppMessage
from actorbroker.session.suboptions import Match, SubOptions

from .topics.grants import Grant

__all__ = [
    "AddSubscriptions",
    "Attach",
    "Deliver",
    "DeliverMatched",
    "DeliverShared",
    "PublishBatch",
    "RedeliverShared",
    "RemoveSubscriptions",
    "RouteBatchViaRegistry",
    "RouteViaRegistry",
    "Routed",
    "Reauthorize",
    "SessionEnded",
    "SessionStarted",
    "SessionSubscriptions",
    "StopTopic",
    "SubscribersChanged",
    "SubscriptionsAdded",
    "SubscriptionsRemoved",
    "Timer",
    "TopicIdle",
    "TopicStarted",
]


@quick_init
@dataclass(frozen=True, slots=True)
class Attach:
    """Attach connection ``conn`` (its CONNECT accepted as ``client_id``) to the session.

    ``port`` is the connection's session port (see
    :class:`~actorbroker.actors.connect.gateway.ConnectionPort`): a session that is
    retiring hands the Attach back to the gateway, which re-points the port.
    """

    conn: Any
    connect: Connect
    client_id: str
    assigned: bool
    port: Any
    #: MQTT 5 enhanced authentication: the last Authentication Data, for the CONNACK.
    auth_data: bytes | None = None
    #: The gateway's claim of the client id for its user (actors/connect/owners.py); 0: none.
    claim: int = 0
    #: The session's owner when a ``takeover_users`` user connects to another's session.
    owner: str | None = None


@quick_init
@dataclass(frozen=True, slots=True)
class Reauthorize:
    """The ACL was reloaded: apply it to the attached client (its subscriptions re-checked)."""


@quick_init
@dataclass(frozen=True, slots=True)
class PublishBatch:
    """Messages published to this topic actor's topic, in order (one read's worth)."""

    messages: tuple[AppMessage, ...]
    #: The publisher's read credit (see :class:`~actorbroker.ports.ReadCredit`).
    credit: ReadCredit | None = field(default=None, compare=False)


@quick_init
@dataclass(frozen=True, slots=True)
class RouteViaRegistry:
    """Publish ``messages`` (all to ``topic``) through the registry.

    The registry updates its retained index, starts the topic actor if there
    is none, forwards a :class:`PublishBatch` to it, then tells ``reply_to``
    (when not None) :class:`Routed`.
    """

    topic: str
    messages: tuple[AppMessage, ...]
    reply_to: ActorRef[Any] | None
    credit: ReadCredit | None = field(default=None, compare=False)


@quick_init
@dataclass(frozen=True, slots=True)
class RouteBatchViaRegistry:
    """Several topics' batches through the registry at once: ``(topic, messages)`` pairs,
    each handled as a :class:`RouteViaRegistry`, then one :class:`Routed` for them all."""

    routes: tuple[tuple[str, tuple[AppMessage, ...]], ...]
    reply_to: ActorRef[Any] | None
    credit: ReadCredit | None = field(default=None, compare=False)


@quick_init
@dataclass(frozen=True, slots=True)
class Routed:
    """The registry handled a :class:`RouteViaRegistry` (or a batch) of ``topics``."""

    topics: tuple[str, ...]


@quick_init
@dataclass(frozen=True, slots=True)
class Deliver:
    """Deliver ``messages`` to this session through subscriptions granted ``qos`` (its maximum).

    ``epoch`` is that of the subscriptions (see the module doc).
    """

    messages: tuple[AppMessage, ...]
    qos: int
    epoch: int
    #: The publisher's read credit: the session takes its hold once it has queued the
    #: messages below its high-water mark (docs/architecture.md, "Backpressure").
    credit: ReadCredit | None = field(default=None, compare=False)


@quick_init
@dataclass(frozen=True, slots=True)
class DeliverMatched:
    """(MQTT 5) Deliver ``messages``; ``matches`` are the client's subscriptions matching them.

    Sent instead of :class:`Deliver` when one of those subscriptions has
    options (No Local, Retain As Published, a Subscription Identifier): the
    session applies them per message (``SessionCore.deliver_matched``).
    """

    messages: tuple[AppMessage, ...]
    epoch: int
    matches: tuple[Match, ...]
    credit: ReadCredit | None = field(default=None, compare=False)


@quick_init
@dataclass(frozen=True, slots=True)
class DeliverShared:
    """(MQTT 5) Deliver ``messages`` through shared subscription ``group`` (its whole filter).

    ``final`` is False when the member was chosen because it was online: if
    it is not any more, the session hands the messages back (see
    :class:`RedeliverShared`) instead of queueing them.
    """

    messages: tuple[AppMessage, ...]
    qos: int
    epoch: int
    group: str
    final: bool = False
    #: The member's subscription options (Retain As Published, Subscription Identifier).
    options: SubOptions | None = None
    #: The publisher's read credit (a topic actor's delivery; see actors/backpressure.py).
    credit: ReadCredit | None = None


@quick_init
@dataclass(frozen=True, slots=True)
class RedeliverShared:
    """(MQTT 5) ``client_id`` hands back these messages of shared subscription ``group``.

    It does not have them (queued, or QoS 1 unacknowledged) and went away;
    the registry gives them to another member of the group.
    """

    client_id: str
    group: str
    messages: tuple[AppMessage, ...]


@quick_init
@dataclass(frozen=True, slots=True)
class AddSubscriptions:
    """Add these subscriptions (QoS already granted) of ``client_id``; SUBSCRIBE ``packet_id``.

    ``clean`` is the session's Clean Session flag: a session actor that is
    restarted after a crash keeps the subscriptions of a persistent session
    only. ``epoch`` is the session's (see the module doc).
    """

    client_id: str
    packet_id: int
    subscriptions: tuple[Subscription, ...]
    clean: bool
    epoch: int
    reply_to: ActorRef[Any]
    #: MQTT 5: the SUBSCRIBE's Subscription Identifier.
    subscription_id: int | None = None
    #: The client's protocol level: ``$share/...`` is a shared subscription at level 5 only.
    protocol_level: int = 4


@quick_init
@dataclass(frozen=True, slots=True)
class SubscriptionsAdded:
    """The registry added the subscriptions of SUBSCRIBE ``packet_id``.

    ``results`` as in ``SessionCore.subscribed`` (None: all granted as
    asked); ``retained``: the retained messages the new filters match, one
    per topic.
    """

    packet_id: int
    results: tuple[int, ...] | None
    retained: tuple[AppMessage, ...]


@quick_init
@dataclass(frozen=True, slots=True)
class RemoveSubscriptions:
    """Remove these filters of ``client_id``; reply when ``packet_id`` is not None."""

    client_id: str
    packet_id: int | None
    topic_filters: tuple[str, ...]
    reply_to: ActorRef[Any]


@quick_init
@dataclass(frozen=True, slots=True)
class SubscriptionsRemoved:
    """The registry removed the filters of UNSUBSCRIBE ``packet_id``."""

    packet_id: int


@quick_init
@dataclass(frozen=True, slots=True)
class SessionStarted:
    """A session actor of ``client_id`` started; asked, answered with :class:`SessionSubscriptions`."""

    client_id: str


@quick_init
@dataclass(frozen=True, slots=True)
class SessionSubscriptions:
    """The subscriptions of a persistent session whose previous actor died (else empty).

    ``epoch`` is theirs: the new actor adopts it (0 when there are none).
    """

    subscriptions: tuple[Subscription, ...]
    epoch: int


@quick_init
@dataclass(frozen=True, slots=True)
class SessionEnded:
    """The session of ``client_id`` ended: drop every subscription it still has."""

    client_id: str


@quick_init
@dataclass(frozen=True, slots=True)
class SubscribersChanged:
    """Changes to a topic actor's subscribers: ``(client_id, filter, grant or None)``.

    A :class:`~.topics.grants.Grant` adds or replaces the client's subscription
    through that filter (its MQTT 5 options, if any, in it); None removes it. The filter of an MQTT 5 shared subscription is a
    :class:`~actorbroker.routing.SharedFilter`, not a string (an MQTT 3
    client's ``$share/...`` is a plain filter).
    """

    changes: tuple[tuple[str, Any, Grant | None], ...]  # the filter: a str or a SharedFilter


@quick_init
@dataclass(frozen=True, slots=True)
class TopicIdle:
    """Topic actor ``ref`` of ``topic`` has had no subscriber, retained message or publish for a while."""

    topic: str
    ref: ActorRef[Any]


@quick_init
@dataclass(frozen=True, slots=True)
class TopicStarted:
    """The Topics supervisor answered a start the registry asked for (``reply``: ref or error).

    ``port`` is the :class:`~.topics.topic_table.TopicPort` that stood for the actor meanwhile.
    """

    port: Any
    reply: Any


@quick_init
@dataclass(frozen=True, slots=True)
class StopTopic:
    """The registry forgot this topic actor: stop."""


@quick_init
@dataclass(frozen=True, slots=True)
class Timer:
    """The actor's own timer ``name`` fired."""

    name: str
