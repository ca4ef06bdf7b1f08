"""Session layer: what one MQTT 5 connection negotiated, and its per-connection state. Stdlib and codec only.

A :class:`Link` is made from the CONNECT of an MQTT 5 client when it
attaches to its session and dropped when the connection ends: none of it
survives a reconnect (Topic Aliases, [MQTT-3.3.2-7]; the limits are those of
the new CONNECT). MQTT 3 connections have no Link, so their hot path never
looks at properties.

Inbound (:meth:`Link.accept`), each PUBLISH from the client is checked:
no Subscription Identifier ([MQTT-3.3.4-6]), its Topic Alias resolved
(:mod:`.aliases`) and stripped (aliases are not forwarded), the broker's
Receive Maximum held (:mod:`.flow`), and a payload that says it is UTF-8
(Payload Format Indicator 1) checked: if it is not, a QoS 1/2 PUBLISH is
refused with PUBACK/PUBREC 0x99 and a QoS 0 one closes the connection with
DISCONNECT 0x99 (section 3.3.2.3.2).

Outbound: the client's Receive Maximum bounds the inflight window (the core
applies it), :meth:`Link.fits` says whether a delivery fits the client's
Maximum Packet Size ([MQTT-3.1.2-24]: one that does not is dropped for that
client), :meth:`Link.outgoing` assigns Topic Aliases, and :meth:`Link.reason`
gives Reason String properties only when the client allows problem
information ([MQTT-3.1.2-29]); :meth:`Link.refusal` leaves it out of a
refusing PUBACK/PUBREC that it would make too large for the client.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from actorbroker.codec import (
    NO_PROPERTIES,
    Connect,
    Packet,
    Properties,
    ProtocolError,
    PubAck,
    Publish,
    PubRec,
    ReasonCode,
    encode,
)

from .aliases import InboundAliases, OutboundAliases
from .capabilities import Mqtt5Policy
from .flow import InboundQuota, publish_size
from .message import Delivery, Delivery5, with_properties

__all__ = ["Link"]

#: Bytes a Topic Alias property adds to a PUBLISH (identifier and two bytes).
_ALIAS_BYTES = 3
_MAX_REASON = 200  # characters of a Reason String


def _bound(props: Properties) -> int:
    """At least the encoded size of ``props`` (PUBLISH ones), the fixed header and a Topic Alias."""
    if props is NO_PROPERTIES:
        return 16
    size = 64  # fixed-size properties, lengths, headers
    for text in (props.content_type, props.response_topic):
        if text is not None:
            size += 3 * len(text) + 3
    if props.correlation_data is not None:
        size += len(props.correlation_data) + 3
    for key, value in props.user_property:
        size += 3 * (len(key) + len(value)) + 5
    return size + 5 * len(props.subscription_identifier)


def _is_utf8(payload: bytes) -> bool:
    try:
        payload.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


class Link:
    """The MQTT 5 state of one connection (see the module doc)."""

    __slots__ = ("receive_maximum", "max_packet_size", "problem_info", "response_info",
                 "auth_method", "requested_expiry", "inbound", "outbound", "quota")

    def __init__(self, connect: Connect, policy: Mqtt5Policy) -> None:
        props = connect.properties
        #: The client's Receive Maximum: QoS 1/2 deliveries it takes unacknowledged.
        self.receive_maximum = props.receive_maximum or 65535
        #: The client's Maximum Packet Size (None: only the protocol's limit).
        self.max_packet_size = props.maximum_packet_size
        self.problem_info = props.request_problem_information != 0
        self.response_info = props.request_response_information == 1
        self.auth_method = props.authentication_method
        #: The CONNECT's Session Expiry Interval (0 forbids setting one at DISCONNECT).
        self.requested_expiry = props.session_expiry_interval or 0
        self.inbound = InboundAliases(policy.topic_alias_maximum)
        self.outbound = OutboundAliases(
            min(props.topic_alias_maximum or 0, policy.outbound_topic_aliases))
        self.quota = InboundQuota(policy.receive_maximum)

    # -- inbound ------------------------------------------------------------------

    def accept(self, packet: Publish, awaiting_pubrel: Collection[int]) -> Publish | PubAck | PubRec:
        """The PUBLISH to route (alias resolved and stripped), or the refusing ack to send.

        ``awaiting_pubrel``: packet ids of QoS 2 PUBLISHes received and not
        yet released. Raises ProtocolError when the connection must close.
        """
        props = packet.properties
        if props.subscription_identifier:
            raise ProtocolError("[MQTT-3.3.4-6] a PUBLISH from a client carries a"
                                " Subscription Identifier")
        topic = self.inbound.resolve(packet.topic, props.topic_alias)
        qos = packet.qos
        if qos and not (qos == 2 and packet.packet_id in awaiting_pubrel):
            self.quota.admit(qos, len(awaiting_pubrel))
        if props.payload_format_indicator == 1 and not _is_utf8(packet.payload):
            text = "(section 3.3.2.3.2) Payload Format Indicator 1 but the payload is not UTF-8"
            if qos == 0 or packet.packet_id is None:
                raise ProtocolError(text, ReasonCode.PAYLOAD_FORMAT_INVALID)
            ack = PubAck if qos == 1 else PubRec
            return ack(packet.packet_id, ReasonCode.PAYLOAD_FORMAT_INVALID, self.reason(text))
        if props.topic_alias is not None:
            packet = Publish(topic, packet.payload, qos, packet.retain, packet.dup,
                             packet.packet_id, with_properties(props, topic_alias=None))
        return packet

    # -- outbound -----------------------------------------------------------------

    def fits(self, delivery: Delivery) -> bool:
        """True if ``delivery``'s PUBLISH is within the client's Maximum Packet Size."""
        limit = self.max_packet_size
        if limit is None:
            return True
        message = delivery.message
        props = message.properties
        ids = delivery.subscription_ids if isinstance(delivery, Delivery5) else ()
        # A cheap upper bound first: exact sizes cost an encoding of the properties.
        if len(message.payload) + 4 * len(message.topic) + _bound(props) + 5 * len(ids) <= limit:
            return True
        if ids:
            props = with_properties(props, subscription_identifier=ids)
        size = publish_size(message.topic, len(message.payload), delivery.qos, props)
        return size + (_ALIAS_BYTES if self.outbound.maximum else 0) <= limit

    def outgoing(self, packets: Sequence[Packet]) -> Sequence[Packet]:
        """``packets`` as they go out on this connection (Topic Aliases applied)."""
        if not self.outbound.maximum:
            return packets
        apply = self.outbound.apply
        return [apply(p) if type(p) is Publish else p for p in packets]

    def reason(self, text: str) -> Properties:
        """A Reason String property, if the client allows problem information."""
        if not self.problem_info:
            return NO_PROPERTIES
        return Properties(reason_string=text[:_MAX_REASON])

    def refusal(self, kind: type[PubAck] | type[PubRec], packet_id: int, code: int,
                text: str) -> PubAck | PubRec:
        """A PUBACK/PUBREC refusing ``packet_id`` with ``code``, and :meth:`reason` ``text``
        unless it would make the packet larger than the client's Maximum Packet Size
        ([MQTT-3.4.2-2], [MQTT-3.5.2-2])."""
        refusal = kind(packet_id, code, self.reason(text))
        limit = self.max_packet_size
        if limit is not None and refusal.properties is not NO_PROPERTIES \
                and len(encode(refusal, 5)) > limit:
            return kind(packet_id, code)
        return refusal
