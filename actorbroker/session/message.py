"""Session layer: the application message as it flows through the broker. Stdlib and codec only.

An :class:`AppMessage` is what a PUBLISH (or a Will) becomes once the broker
has accepted it: the topic, payload, QoS and retain flag the publisher sent,
its MQTT 5 properties (``NO_PROPERTIES`` for 3.x), who sent it and when. It
is immutable and shared by every subscriber it is delivered to; what differs
per subscriber (the QoS after downgrade, the RETAIN flag on the wire, the
packet id) lives in :class:`Delivery` and in the session's inflight table.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from actorbroker.codec import NO_PROPERTIES, Properties, Publish, Will

__all__ = ["AppMessage", "Delivery"]


@dataclass(frozen=True, slots=True)
class AppMessage:
    """One application message, as accepted from its publisher.

    ``qos`` and ``retain`` are the publisher's; ``publisher`` is its client
    id (None for messages the broker makes itself, e.g. ``$SYS``);
    ``received_at`` is the monotonic time of acceptance (the ``now`` of the
    call that accepted it); ``seq`` numbers the messages one session core
    accepted, from 1, so that ``(publisher, seq)`` names a message in logs
    and tests.
    """

    topic: str
    payload: bytes
    qos: int = 0
    retain: bool = False
    properties: Properties = NO_PROPERTIES
    publisher: str | None = None
    received_at: float = 0.0
    seq: int = 0

    @classmethod
    def from_publish(
        cls, publish: Publish, *, publisher: str | None, received_at: float, seq: int = 0
    ) -> AppMessage:
        """The message a client's PUBLISH carries."""
        return cls(
            publish.topic, publish.payload, publish.qos, publish.retain,
            publish.properties, publisher, received_at, seq,
        )

    @classmethod
    def from_will(cls, will: Will, *, publisher: str, received_at: float) -> AppMessage:
        """The message a Will becomes when the broker publishes it."""
        return cls(
            will.topic, will.payload, will.qos, will.retain, will.properties,
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
        the time the message waited in the broker ([MQTT-3.3.2-6]).
        """
        properties = self.properties
        interval = properties.message_expiry_interval
        if interval is not None and now is not None:
            remaining = max(0, interval - int(now - self.received_at))
            properties = dataclasses.replace(properties, message_expiry_interval=remaining)
        return Publish(
            self.topic, self.payload, qos, retain, dup,
            packet_id if qos else None, properties,
        )


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
