"""Session layer: the effects a session core asks its actor to carry out. Stdlib and codec only.

The core never does I/O: each of its methods returns a list of these, in the
order they must be carried out. The SessionActor matches on the type:

    Send(packets)                  write these packets to the attached connection, in order
    Route(message, ack)            publish into the broker; once accepted (durable per
                                   the storage policy) send ``ack`` to the publisher
    PublishWill(message)           publish the Will of the connection that just ended
    RequestSubscribe(id, subs)     add these subscriptions in the registry, then call
                                   ``core.subscribed(id, results, retained, now)``
    RequestUnsubscribe(id, filters)  remove them; when ``id`` is not None, then call
                                   ``core.unsubscribed(id, now)``
    StartTimer(name, delay)        (re)arm the named timer; when it fires call
                                   ``core.on_timer(name, now)``
    CancelTimer(name)              disarm it (no-op if not armed)
    Close(reason_code, reason)     close the network connection (any v5 DISCONNECT to
                                   send was in a Send before it); then call
                                   ``core.detach(now)`` once it is closed (not after
                                   ``take_over``, which ``attach`` follows at once)
    Dropped(message, qos, reason)  a delivery was discarded: count it, never resend it
    EndSession(reason)             the session is over: forget its durable state, stop
    SetKeepAlive(seconds)          (MQTT 5) hold the connection to this Server Keep Alive
    HandBackShared(deliveries)     (MQTT 5) give these shared-subscription deliveries,
                                   which this client does not have, to another member
    Reauthenticate(packet)         (MQTT 5) run this AUTH through the connection's
                                   authentication method; answer with AUTH or
                                   ``core.disconnect(code, reason)``

Timers: :data:`EXPIRY_TIMER` and, for an MQTT 5 Will Delay Interval,
:data:`WILL_TIMER`; the keepalive is the transport's (it sees every packet
without a message per packet).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Final

from actorbroker.codec import Auth, Packet, PubAck, PubRec, ReasonCode, Subscription
from actorbroker.codec.frozen import quick_init

from .message import AppMessage, Delivery5

__all__ = [
    "EXPIRY_TIMER",
    "WILL_TIMER",
    "CancelTimer",
    "Close",
    "DropReason",
    "Dropped",
    "Effect",
    "EndSession",
    "HandBackShared",
    "PublishWill",
    "Reauthenticate",
    "RequestSubscribe",
    "RequestUnsubscribe",
    "RevokeSubscriptions",
    "Route",
    "Send",
    "SetKeepAlive",
    "StartTimer",
]

#: Fires when a detached persistent session has been offline for its expiry time.
EXPIRY_TIMER: Final = "session_expiry"
#: Fires when an MQTT 5 Will Delay Interval has passed without a new connection.
WILL_TIMER: Final = "will_delay"


class DropReason(Enum):
    """Why a delivery was discarded (the metric label)."""

    #: max_queued_messages or max_queued_bytes reached: the *new* message is
    #: dropped and the queue kept, as Mosquitto does.
    QUEUE_FULL = "queue_full"
    #: QoS 0 to a client that is offline, with queue_qos0 off.
    OFFLINE_QOS0 = "offline_qos0"
    #: An MQTT 5 Message Expiry Interval ran out while the message waited.
    EXPIRED = "expired"
    #: The session state was discarded (clean session ended, session expired,
    #: or a clean reconnect replaced it) with this message not yet acknowledged.
    SESSION_ENDED = "session_ended"
    #: Larger than the MQTT 5 client's Maximum Packet Size ([MQTT-3.1.2-25]).
    TOO_LARGE = "too_large"


@quick_init
@dataclass(frozen=True, slots=True)
class Send:
    """Write ``packets`` to the attached connection, in order, in one write if possible."""

    packets: tuple[Packet, ...]


@quick_init
@dataclass(frozen=True, slots=True)
class Route:
    """Publish ``message`` into the broker (to the topic's subscribers, retained store).

    ``ack`` is the PUBACK (QoS 1) or PUBREC (QoS 2) owed to the publisher, None
    for QoS 0. Send it once the message is accepted: after the commit log
    made it durable when storage is on. Packets of later ``Send`` effects
    must not overtake a pending ack.
    """

    message: AppMessage
    ack: PubAck | PubRec | None = None


@quick_init
@dataclass(frozen=True, slots=True)
class PublishWill:
    """Publish the Will Message of the connection that ended without DISCONNECT."""

    message: AppMessage


@quick_init
@dataclass(frozen=True, slots=True)
class RequestSubscribe:
    """Add ``subscriptions`` (QoS already capped to what is granted) for this client.

    Answer with ``core.subscribed(packet_id, results, retained, now)``; the
    core sends the SUBACK then.
    """

    packet_id: int
    subscriptions: tuple[Subscription, ...]
    #: MQTT 5: the SUBSCRIBE's Subscription Identifier, for every subscription of it.
    subscription_id: int | None = None


@quick_init
@dataclass(frozen=True, slots=True)
class RequestUnsubscribe:
    """Remove these filters of this client from the registry.

    With a ``packet_id`` the client asked (answer with
    ``core.unsubscribed(packet_id, now)``, which sends the UNSUBACK); with
    None the core is discarding the session's subscriptions itself.
    """

    packet_id: int | None
    topic_filters: tuple[str, ...]


@quick_init
@dataclass(frozen=True, slots=True)
class RevokeSubscriptions:
    """Remove these filters of this client from the registry: the ACL no longer allows them.

    Unlike a discard (``RequestUnsubscribe(None, ...)``) the session goes on:
    deliveries of its other subscriptions stay valid.
    """

    topic_filters: tuple[str, ...]


@quick_init
@dataclass(frozen=True, slots=True)
class StartTimer:
    """Arm (or re-arm) the timer ``name`` to fire ``delay`` seconds from now."""

    name: str
    delay: float


@quick_init
@dataclass(frozen=True, slots=True)
class CancelTimer:
    """Disarm the timer ``name``."""

    name: str


@quick_init
@dataclass(frozen=True, slots=True)
class Close:
    """Close the network connection.

    ``reason_code`` is the MQTT 5 reason (also the metric label for 3.x);
    ``reason`` a log line carrying the spec rule id where one was broken.
    """

    reason_code: ReasonCode
    reason: str


@quick_init
@dataclass(frozen=True, slots=True)
class Dropped:
    """A delivery of ``message`` at ``qos`` was discarded for ``reason``."""

    message: AppMessage
    qos: int
    reason: DropReason


@quick_init
@dataclass(frozen=True, slots=True)
class SetKeepAlive:
    """Hold the connection to ``seconds`` of Keep Alive (the Server Keep Alive told in CONNACK)."""

    seconds: int


@quick_init
@dataclass(frozen=True, slots=True)
class HandBackShared:
    """Give these deliveries of shared subscriptions to another member of their group.

    The client does not have them (queued, or QoS 1 without PUBACK) and has
    gone (or they reached it after its session ended); the core forgot them.
    """

    deliveries: tuple[Delivery5, ...]


@quick_init
@dataclass(frozen=True, slots=True)
class Reauthenticate:
    """An AUTH from the connected client (re-authentication, section 4.12.1)."""

    packet: Auth


@quick_init
@dataclass(frozen=True, slots=True)
class EndSession:
    """The session ended: forget its durable state; the actor may stop."""

    reason: str


Effect = (
    Send | Route | PublishWill | RequestSubscribe | RequestUnsubscribe | StartTimer
    | CancelTimer | Close | Dropped | EndSession | SetKeepAlive | HandBackShared | Reauthenticate
    | RevokeSubscriptions
)
