"""Codec layer: the MQTT control packets as frozen slotted dataclasses. Stdlib and codec only.

One class per packet type, named as in the spec, shared by MQTT 3.1 (protocol
level 3), 3.1.1 (level 4) and 5.0 (level 5). Fields that exist only in MQTT 5
(properties, reason codes of acknowledgements) keep their defaults at levels
3 and 4: the decoder leaves them so and the encoder ignores them. Payloads
are ``bytes``; a ``reason_code`` decoded from the wire is a
:class:`~actorbroker.codec.reason_codes.ReasonCode` (or, in a v3 CONNACK, a
:class:`~actorbroker.codec.reason_codes.ConnectReturnCode`), which compares
equal to the plain int.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import ClassVar

from .frozen import quick_init
from .properties import NO_PROPERTIES, Properties

__all__ = [
    "PROTOCOL_LEVELS",
    "protocol_name",
    "Auth",
    "ConnAck",
    "Connect",
    "Disconnect",
    "Packet",
    "PacketType",
    "PingReq",
    "PingResp",
    "PubAck",
    "PubComp",
    "PubRec",
    "PubRel",
    "Publish",
    "SubAck",
    "Subscribe",
    "Subscription",
    "UnsubAck",
    "Unsubscribe",
    "Will",
]

#: Protocol levels this codec speaks: 3 (MQTT 3.1), 4 (3.1.1), 5 (5.0).
PROTOCOL_LEVELS = (3, 4, 5)
_VERSIONS = {3: "3.1", 4: "3.1.1", 5: "5.0"}


def protocol_name(level: int | None) -> str:
    """``"MQTT 3.1.1"`` for level 4: what users know a version by (logs, messages)."""
    version = _VERSIONS.get(level) if level is not None else None
    return f"MQTT {version}" if version else f"MQTT protocol level {level}"


class PacketType(IntEnum):
    """Control packet types: the high nibble of the first byte (section 2.1.2)."""

    CONNECT = 1
    CONNACK = 2
    PUBLISH = 3
    PUBACK = 4
    PUBREC = 5
    PUBREL = 6
    PUBCOMP = 7
    SUBSCRIBE = 8
    SUBACK = 9
    UNSUBSCRIBE = 10
    UNSUBACK = 11
    PINGREQ = 12
    PINGRESP = 13
    DISCONNECT = 14
    AUTH = 15


@quick_init
@dataclass(frozen=True, slots=True)
class Will:
    """The Will Message of a CONNECT."""

    topic: str
    payload: bytes
    qos: int = 0
    retain: bool = False
    properties: Properties = NO_PROPERTIES


@quick_init
@dataclass(frozen=True, slots=True)
class Connect:
    """CONNECT: ``protocol_name`` is "MQTT" (levels 4, 5) or "MQIsdp" (level 3)."""

    packet_type: ClassVar[PacketType] = PacketType.CONNECT
    protocol_name: str
    protocol_level: int
    client_id: str
    clean_start: bool
    keepalive: int
    username: str | None = None
    password: bytes | None = None
    will: Will | None = None
    properties: Properties = NO_PROPERTIES


@quick_init
@dataclass(frozen=True, slots=True)
class ConnAck:
    """CONNACK; ``reason_code`` holds the v3 return code at levels 3 and 4."""

    packet_type: ClassVar[PacketType] = PacketType.CONNACK
    session_present: bool = False
    reason_code: int = 0
    properties: Properties = NO_PROPERTIES


@quick_init
@dataclass(frozen=True, slots=True)
class Publish:
    """PUBLISH; ``packet_id`` is None exactly when ``qos`` is 0."""

    packet_type: ClassVar[PacketType] = PacketType.PUBLISH
    topic: str
    payload: bytes
    qos: int = 0
    retain: bool = False
    dup: bool = False
    packet_id: int | None = None
    properties: Properties = NO_PROPERTIES


@quick_init
@dataclass(frozen=True, slots=True)
class PubAck:
    """PUBACK: QoS 1 acknowledgement."""

    packet_type: ClassVar[PacketType] = PacketType.PUBACK
    packet_id: int
    reason_code: int = 0
    properties: Properties = NO_PROPERTIES


@quick_init
@dataclass(frozen=True, slots=True)
class PubRec:
    """PUBREC: QoS 2 delivery part 1."""

    packet_type: ClassVar[PacketType] = PacketType.PUBREC
    packet_id: int
    reason_code: int = 0
    properties: Properties = NO_PROPERTIES


@quick_init
@dataclass(frozen=True, slots=True)
class PubRel:
    """PUBREL: QoS 2 delivery part 2."""

    packet_type: ClassVar[PacketType] = PacketType.PUBREL
    packet_id: int
    reason_code: int = 0
    properties: Properties = NO_PROPERTIES


@quick_init
@dataclass(frozen=True, slots=True)
class PubComp:
    """PUBCOMP: QoS 2 delivery part 3."""

    packet_type: ClassVar[PacketType] = PacketType.PUBCOMP
    packet_id: int
    reason_code: int = 0
    properties: Properties = NO_PROPERTIES


@quick_init
@dataclass(frozen=True, slots=True)
class Subscription:
    """One topic filter of a SUBSCRIBE with its options (v5 section 3.8.3.1).

    At levels 3 and 4 only ``topic_filter`` and ``qos`` travel on the wire.
    """

    topic_filter: str
    qos: int = 0
    no_local: bool = False
    retain_as_published: bool = False
    retain_handling: int = 0


@quick_init
@dataclass(frozen=True, slots=True)
class Subscribe:
    """SUBSCRIBE: at least one subscription."""

    packet_type: ClassVar[PacketType] = PacketType.SUBSCRIBE
    packet_id: int
    subscriptions: tuple[Subscription, ...]
    properties: Properties = NO_PROPERTIES


@quick_init
@dataclass(frozen=True, slots=True)
class SubAck:
    """SUBACK: one reason code (v3: granted QoS or 0x80) per subscription."""

    packet_type: ClassVar[PacketType] = PacketType.SUBACK
    packet_id: int
    reason_codes: tuple[int, ...]
    properties: Properties = NO_PROPERTIES


@quick_init
@dataclass(frozen=True, slots=True)
class Unsubscribe:
    """UNSUBSCRIBE: at least one topic filter."""

    packet_type: ClassVar[PacketType] = PacketType.UNSUBSCRIBE
    packet_id: int
    topic_filters: tuple[str, ...]
    properties: Properties = NO_PROPERTIES


@quick_init
@dataclass(frozen=True, slots=True)
class UnsubAck:
    """UNSUBACK; ``reason_codes`` (one per filter) exist in MQTT 5 only."""

    packet_type: ClassVar[PacketType] = PacketType.UNSUBACK
    packet_id: int
    reason_codes: tuple[int, ...] = ()
    properties: Properties = NO_PROPERTIES


@quick_init
@dataclass(frozen=True, slots=True)
class PingReq:
    """PINGREQ."""

    packet_type: ClassVar[PacketType] = PacketType.PINGREQ


@quick_init
@dataclass(frozen=True, slots=True)
class PingResp:
    """PINGRESP."""

    packet_type: ClassVar[PacketType] = PacketType.PINGRESP


@quick_init
@dataclass(frozen=True, slots=True)
class Disconnect:
    """DISCONNECT; reason code and properties exist in MQTT 5 only."""

    packet_type: ClassVar[PacketType] = PacketType.DISCONNECT
    reason_code: int = 0
    properties: Properties = NO_PROPERTIES


@quick_init
@dataclass(frozen=True, slots=True)
class Auth:
    """AUTH (MQTT 5 only): enhanced authentication exchange."""

    packet_type: ClassVar[PacketType] = PacketType.AUTH
    reason_code: int = 0
    properties: Properties = NO_PROPERTIES


Packet = (
    Connect | ConnAck | Publish | PubAck | PubRec | PubRel | PubComp | Subscribe
    | SubAck | Unsubscribe | UnsubAck | PingReq | PingResp | Disconnect | Auth
)
