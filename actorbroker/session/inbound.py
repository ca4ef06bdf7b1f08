"""Session layer: what a client publishes, as the broker accepts it. Stdlib, codec and routing only.

:class:`Inbox` checks each PUBLISH against the broker's capabilities, turns
it into an :class:`~.message.AppMessage` stamped with its publisher, arrival
time and sequence number, spends a token of the client's publish quota
(:mod:`~.quota`; none left: ProtocolError 0x97, Quota exceeded), and runs the QoS 2 receiver flow of
:mod:`~.qos_inbound` (route on first receipt, PUBREC again for a retry).
Its effects are ``Route`` (with the PUBACK/PUBREC owed once the message is
accepted) or a ``Send`` of the repeated PUBREC.

A PUBLISH the client may not make (a ``$SYS`` topic, or one its ACL does
not let it write: :attr:`Inbox.acl`) is not routed: MQTT 5 answers QoS 1/2
with PUBACK/PUBREC 0x87 (Not authorized); MQTT 3 has no such code, so the
message is acknowledged as usual and dropped, as the spec allows
([MQTT-3.3.5-2]); QoS 0 is dropped either way. A topic name longer or
deeper than ``max_topic_length`` / ``max_topic_levels`` (the limits filters
have, :class:`~.subscriptions.SubscriptionLimits`) is refused the same way
with 0x90 (Topic Name invalid), as EMQX does: it would only be stored and
matched, never subscribed to.
"""

from __future__ import annotations

from actorbroker.codec import ProtocolError, PubAck, PubComp, PubRec, Publish, ReasonCode
from actorbroker.routing import TopicError, validate_topic_name

from .authorization import Grants, is_sys
from .config import SessionConfig
from .effects import Route, Send
from .message import AppMessage
from .qos_inbound import InboundQoS2
from .quota import TokenBucket

__all__ = ["Inbox"]


class Inbox:
    """Inbound PUBLISH rules of one session and its QoS 2 receiver state."""

    __slots__ = ("acl", "client_id", "config", "qos2", "quota", "seq", "v5")

    def __init__(self, client_id: str, config: SessionConfig) -> None:
        self.client_id = client_id
        self.config = config
        self.qos2 = InboundQoS2()
        self.seq = 0  # messages accepted so far
        self.quota = TokenBucket(config.publish_quota)
        #: The connected client's rights (None: no ACL); set at each attach.
        self.acl: Grants | None = None
        self.v5 = False  # refusals carry reason code 0x87

    def _forbidden(self, packet: Publish, why: ReasonCode = ReasonCode.NOT_AUTHORIZED
                   ) -> Send | None:
        """The answer to a PUBLISH the client may not make (see the module doc)."""
        packet_id = packet.packet_id
        if packet.qos == 0 or packet_id is None:
            return None
        code = why if self.v5 else ReasonCode.SUCCESS
        return Send((PubAck(packet_id, code) if packet.qos == 1 else PubRec(packet_id, code),))

    def publish(self, packet: Publish, now: float) -> Route | Send | None:
        """Accept ``packet`` (None: dropped); raise ProtocolError if the broker must close."""
        try:
            validate_topic_name(packet.topic)
        except TopicError as exc:
            raise ProtocolError(str(exc), ReasonCode.TOPIC_NAME_INVALID) from None
        if packet.qos > self.config.max_qos:
            raise ProtocolError(
                f"(section 3.2.2.3.4) PUBLISH QoS {packet.qos} above the maximum"
                f" {self.config.max_qos}", ReasonCode.QOS_NOT_SUPPORTED,
            )
        if packet.retain and not self.config.retain_available:
            raise ProtocolError(
                "(section 3.2.2.3.5) PUBLISH with RETAIN, but retained messages are not available",
                ReasonCode.RETAIN_NOT_SUPPORTED,
            )
        if not self.quota.take(now):
            quota = self.config.publish_quota
            raise ProtocolError(
                f"(section 4.13) quota exceeded: more than {quota.rate:g} PUBLISH per second"
                f" (burst {quota.capacity:g})", ReasonCode.QUOTA_EXCEEDED,
            )
        packet_id = packet.packet_id
        if packet.qos and packet_id is None:
            raise ProtocolError("[MQTT-2.2.1-2] QoS > 0 PUBLISH without a packet identifier")
        topic = packet.topic
        if (self.acl is not None and not self.acl.may_publish(topic)) or (
                topic[0] == "$" and is_sys(topic)):
            return self._forbidden(packet)
        if self.config.subscription_limits.refusal(topic) is not None:
            return self._forbidden(packet, ReasonCode.TOPIC_NAME_INVALID)
        if packet.qos == 2 and packet_id is not None and not self.qos2.publish(packet_id):
            # [MQTT-4.3.3-9] (3.1.1: [MQTT-4.3.3-2]): a retry before PUBREL, not routed again.
            return Send((PubRec(packet_id),))
        self.seq += 1
        message = AppMessage.from_publish(
            packet, publisher=self.client_id, received_at=now, seq=self.seq
        )
        if packet.qos == 0 or packet_id is None:
            return Route(message)
        return Route(message, PubAck(packet_id) if packet.qos == 1 else PubRec(packet_id))

    def release(self, packet_id: int, *, level: int) -> PubComp:
        """A PUBREL: the PUBCOMP answering it (MQTT 5: 0x92 for an unknown id)."""
        known = self.qos2.release(packet_id)
        if known or level != 5:
            return PubComp(packet_id)
        return PubComp(packet_id, ReasonCode.PACKET_IDENTIFIER_NOT_FOUND)
