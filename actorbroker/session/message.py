"""Session layer: the application message as it flows through the broker. Stdlib and codec only.

An :class:`AppMessage` is what a PUBLISH (or a Will) becomes once the broker
has accepted it: the topic, payload, QoS and retain flag the publisher sent,
its MQTT 5 properties (``NO_PROPERTIES`` for 3.x), who sent it and when. It
is immutable and shared by every subscriber it is delivered to; what differs
per subscriber (the QoS after downgrade, the RETAIN flag on the wire, the
packet id) lives in :class:`Delivery` and in the session's inflight table.

Fan-out: the PUBLISH of a live QoS 0 delivery (no packet id, RETAIN 0, DUP
0, properties as published) is the same for every subscriber, so the
message builds it once and hands every session the same frozen object
(:meth:`AppMessage.to_publish`). Encoding stays per connection: a memo of
encodings by identity was measured (82% hits in ``routes``) and saved
nothing, a lookup costing about what encoding a small PUBLISH does.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from actorbroker.codec import NO_PROPERTIES, Properties, Publish, Will
from actorbroker.codec.frozen import mutable_twin, quick_init

__all__ = ["AppMessage", "Delivery", "Delivery5", "with_properties"]

_PropertiesBuilder: Any = mutable_twin(Properties)
_PublishBuilder: Any = mutable_twin(Publish)
_ALL_PROPERTIES = attrgetter(*(f.name for f in dataclasses.fields(Properties)))


def with_properties(properties: Properties, **changes: Any) -> Properties:
    """``properties`` with ``changes``: ``dataclasses.replace`` without its cost (a hot path
    of MQTT 5 deliveries: expiry, aliases, identifiers)."""
    built = _PropertiesBuilder(*_ALL_PROPERTIES(properties))
    for name, value in changes.items():
        setattr(built, name, value)
    built.__class__ = Properties
    return built  # type: ignore[no-any-return]


@quick_init
@dataclass(frozen=True, slots=True)
class AppMessage:
    """One application message, as accepted from its publisher.

    ``qos`` and ``retain`` are the publisher's; ``publisher`` is its client
    id (None for messages the broker makes itself, e.g. ``$SYS``);
    ``received_at`` is the monotonic time of acceptance (the ``now`` of the
    call that accepted it); ``seq`` numbers the messages one session core
    accepted, from 1, so that ``(publisher, seq)`` names a message in logs
    and tests; ``log_offset`` is set once the commit log stored it.
    """

    topic: str
    payload: bytes
    qos: int = 0
    retain: bool = False
    properties: Properties = NO_PROPERTIES
    publisher: str | None = None
    received_at: float = 0.0
    seq: int = 0
    #: Where the commit log holds it (-1: not logged, e.g. QoS 0 or storage off).
    log_offset: int = -1
    #: The PUBLISH of a live QoS 0 delivery, built by the first one (see to_publish);
    #: derived from the fields above, so neither compared nor shown.
    _live0: Publish | None = field(default=None, init=False, compare=False, repr=False)

    @classmethod
    def from_publish(
        cls, publish: Publish, *, publisher: str | None, received_at: float, seq: int = 0
    ) -> AppMessage:
        """The message a client's PUBLISH carries."""
        if cls is not AppMessage:
            return cls(publish.topic, publish.payload, publish.qos, publish.retain,
                       publish.properties, publisher, received_at, seq)
        # Once per PUBLISH: built as a mutable twin and retyped (see codec mutable_twin),
        # a third of what the frozen __init__ costs.
        built = _AppMessageBuilder(publish.topic, publish.payload, publish.qos, publish.retain,
                                   publish.properties, publisher, received_at, seq)
        built.__class__ = AppMessage
        return built  # type: ignore[no-any-return]

    @classmethod
    def from_will(cls, will: Will, *, publisher: str, received_at: float) -> AppMessage:
        """The message a Will becomes when the broker publishes it.

        Its Will Properties become the message's, but for the Will Delay
        Interval, which is not a PUBLISH property (section 3.1.3.2).
        """
        properties = will.properties
        if properties.will_delay_interval is not None:
            properties = with_properties(properties, will_delay_interval=None)
        return cls(
            will.topic, will.payload, will.qos, will.retain, properties,
            publisher, received_at,
        )

    @property
    def size(self) -> int:
        """Bytes counted against a queue's byte limit: the payload, as Mosquitto counts."""
        return len(self.payload)

    def expired(self, now: float) -> bool:
        """True once an MQTT 5 Message Expiry Interval has run out (never for 3.x)."""
        interval = self.properties.message_expiry_interval
        return interval is not None and now - self.received_at >= interval

    def to_publish(
        self,
        *,
        qos: int,
        packet_id: int | None = None,
        retain: bool = False,
        dup: bool = False,
        now: float | None = None,
    ) -> Publish:
        """The PUBLISH that delivers this message to one subscriber.

        ``qos`` is the delivery QoS (after downgrade), ``retain`` the RETAIN
        flag to send. With ``now``, a Message Expiry Interval is lowered by
        the time the message waited in the broker ([MQTT-3.3.2-6]). The
        PUBLISH of a live QoS 0 delivery of a message without expiry is
        built once and shared by every subscriber (it is immutable).
        """
        properties = self.properties
        interval = properties.message_expiry_interval
        if not qos and not retain and not dup and interval is None:
            live = self._live0
            if live is None:
                built = _PublishBuilder(self.topic, self.payload, 0, False, False, None,
                                        properties)
                built.__class__ = Publish
                live = built
                object.__setattr__(self, "_live0", live)  # a cache of derived data
            return live
        if interval is not None and now is not None:
            remaining = max(0, interval - int(now - self.received_at))
            if remaining != interval:  # within the first second it stays as published
                properties = with_properties(properties, message_expiry_interval=remaining)
        # Once per delivery: the mutable twin, retyped (see from_publish).
        built = _PublishBuilder(self.topic, self.payload, qos, retain, dup,
                                packet_id if qos else None, properties)
        built.__class__ = Publish
        return built  # type: ignore[no-any-return]


_AppMessageBuilder: Any = mutable_twin(AppMessage)


@quick_init
@dataclass(frozen=True, slots=True)
class Delivery:
    """One message on its way to one subscriber: QoS after downgrade, RETAIN to send."""

    message: AppMessage
    qos: int
    retain: bool = False

    def to_publish(
        self, packet_id: int | None = None, *, dup: bool = False, now: float | None = None
    ) -> Publish:
        """The PUBLISH for this delivery."""
        return self.message.to_publish(
            qos=self.qos, packet_id=packet_id, retain=self.retain, dup=dup, now=now
        )


@quick_init
@dataclass(frozen=True, slots=True)
class Delivery5(Delivery):
    """A delivery that carries MQTT 5 extras; plain :class:`Delivery` stays the MQTT 3 fast path.

    ``subscription_ids``: the Subscription Identifiers of the matching
    subscriptions, sent in the PUBLISH ([MQTT-3.3.4-3]); ``group``: the
    ``$share/{group}/{filter}`` this delivery came through, None for a
    non-shared subscription (a shared delivery may be handed back to the
    group when this client goes away, see :mod:`actorbroker.session.outbox`).
    """

    subscription_ids: tuple[int, ...] = ()
    group: str | None = None

    def to_publish(
        self, packet_id: int | None = None, *, dup: bool = False, now: float | None = None
    ) -> Publish:
        """The PUBLISH for this delivery, with its Subscription Identifiers."""
        publish = self.message.to_publish(
            qos=self.qos, packet_id=packet_id, retain=self.retain, dup=dup, now=now
        )
        if not self.subscription_ids:
            return publish
        properties = with_properties(publish.properties,
                                     subscription_identifier=self.subscription_ids)
        return Publish(publish.topic, publish.payload, publish.qos, publish.retain, publish.dup,
                       publish.packet_id, properties)
