"""Codec layer: MQTT 5 properties (section 2.2.2). Imports the stdlib and the codec only.

One table row per property: identifier, wire type and the packets it may
appear in. :class:`Properties` holds one field per property (None when
absent); the two that may repeat are tuples. Their wire format is in
:mod:`actorbroker.codec.property_codec`.

Contexts are packet type numbers (1 CONNECT ... 15 AUTH) plus
:data:`WILL_PROPERTIES` (0) for the Will Properties of a CONNECT payload.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import Enum, IntEnum
from operator import attrgetter
from typing import Final

__all__ = [
    "NO_PROPERTIES",
    "WILL_PROPERTIES",
    "Properties",
    "PropertyId",
    "PropertySpec",
    "PropertyType",
    "SPECS",
]

WILL_PROPERTIES: Final = 0
_CONNECT, _CONNACK, _PUBLISH, _PUBACK, _PUBREC, _PUBREL, _PUBCOMP = 1, 2, 3, 4, 5, 6, 7
_SUBSCRIBE, _SUBACK, _UNSUBSCRIBE, _UNSUBACK, _DISCONNECT, _AUTH = 8, 9, 10, 11, 14, 15
CONTEXT_NAMES: Final = {
    0: "Will Properties", 1: "CONNECT", 2: "CONNACK", 3: "PUBLISH", 4: "PUBACK",
    5: "PUBREC", 6: "PUBREL", 7: "PUBCOMP", 8: "SUBSCRIBE", 9: "SUBACK",
    10: "UNSUBSCRIBE", 11: "UNSUBACK", 14: "DISCONNECT", 15: "AUTH",
}


class PropertyId(IntEnum):
    """Property identifiers (section 2.2.2.2, table 2-4)."""

    PAYLOAD_FORMAT_INDICATOR = 0x01
    MESSAGE_EXPIRY_INTERVAL = 0x02
    CONTENT_TYPE = 0x03
    RESPONSE_TOPIC = 0x08
    CORRELATION_DATA = 0x09
    SUBSCRIPTION_IDENTIFIER = 0x0B
    SESSION_EXPIRY_INTERVAL = 0x11
    ASSIGNED_CLIENT_IDENTIFIER = 0x12
    SERVER_KEEP_ALIVE = 0x13
    AUTHENTICATION_METHOD = 0x15
    AUTHENTICATION_DATA = 0x16
    REQUEST_PROBLEM_INFORMATION = 0x17
    WILL_DELAY_INTERVAL = 0x18
    REQUEST_RESPONSE_INFORMATION = 0x19
    RESPONSE_INFORMATION = 0x1A
    SERVER_REFERENCE = 0x1C
    REASON_STRING = 0x1F
    RECEIVE_MAXIMUM = 0x21
    TOPIC_ALIAS_MAXIMUM = 0x22
    TOPIC_ALIAS = 0x23
    MAXIMUM_QOS = 0x24
    RETAIN_AVAILABLE = 0x25
    USER_PROPERTY = 0x26
    MAXIMUM_PACKET_SIZE = 0x27
    WILDCARD_SUBSCRIPTION_AVAILABLE = 0x28
    SUBSCRIPTION_IDENTIFIER_AVAILABLE = 0x29
    SHARED_SUBSCRIPTION_AVAILABLE = 0x2A


class PropertyType(Enum):
    """Wire types of property values (section 1.5)."""

    BYTE = 1
    TWO_BYTE_INTEGER = 2
    FOUR_BYTE_INTEGER = 3
    VARIABLE_BYTE_INTEGER = 4
    UTF8_STRING = 5
    BINARY_DATA = 6
    UTF8_STRING_PAIR = 7


@dataclass(frozen=True, slots=True)
class PropertySpec:
    """One row of table 2-4: where a property may appear and how it is encoded."""

    id: PropertyId
    type: PropertyType
    contexts: frozenset[int]
    #: contexts in which the property may appear more than once
    repeatable_in: frozenset[int] = frozenset()

    @property
    def name(self) -> str:
        """The :class:`Properties` field holding this property."""
        return self.id.name.lower()


@dataclass(frozen=True, slots=True, repr=False)
class Properties:
    """The properties of one packet (or of a Will); None means absent."""

    payload_format_indicator: int | None = None
    message_expiry_interval: int | None = None
    content_type: str | None = None
    response_topic: str | None = None
    correlation_data: bytes | None = None
    subscription_identifier: tuple[int, ...] = ()
    session_expiry_interval: int | None = None
    assigned_client_identifier: str | None = None
    server_keep_alive: int | None = None
    authentication_method: str | None = None
    authentication_data: bytes | None = None
    request_problem_information: int | None = None
    will_delay_interval: int | None = None
    request_response_information: int | None = None
    response_information: str | None = None
    server_reference: str | None = None
    reason_string: str | None = None
    receive_maximum: int | None = None
    topic_alias_maximum: int | None = None
    topic_alias: int | None = None
    maximum_qos: int | None = None
    retain_available: int | None = None
    user_property: tuple[tuple[str, str], ...] = ()
    maximum_packet_size: int | None = None
    wildcard_subscription_available: int | None = None
    subscription_identifier_available: int | None = None
    shared_subscription_available: int | None = None

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{spec.name}={value!r}"
            for spec, value in zip(SPECS, _GET_ALL(self), strict=True)
            if value is not None and value != ()
        )
        return f"Properties({shown})"


NO_PROPERTIES: Final = Properties()

_T = PropertyType
_ACKS = frozenset({_PUBACK, _PUBREC, _PUBREL, _PUBCOMP})
_MESSAGE = frozenset({_PUBLISH, WILL_PROPERTIES})
_EVERYWHERE = frozenset(CONTEXT_NAMES) - {12, 13}  # not in PINGREQ / PINGRESP
#: Table 2-4, in identifier order (the order the encoder writes them in).
SPECS: Final[tuple[PropertySpec, ...]] = tuple(
    PropertySpec(PropertyId[name], kind, frozenset(contexts), frozenset(repeat))
    for name, kind, contexts, repeat in (
        ("PAYLOAD_FORMAT_INDICATOR", _T.BYTE, _MESSAGE, ()),
        ("MESSAGE_EXPIRY_INTERVAL", _T.FOUR_BYTE_INTEGER, _MESSAGE, ()),
        ("CONTENT_TYPE", _T.UTF8_STRING, _MESSAGE, ()),
        ("RESPONSE_TOPIC", _T.UTF8_STRING, _MESSAGE, ()),
        ("CORRELATION_DATA", _T.BINARY_DATA, _MESSAGE, ()),
        ("SUBSCRIPTION_IDENTIFIER", _T.VARIABLE_BYTE_INTEGER,
         (_PUBLISH, _SUBSCRIBE), (_PUBLISH,)),
        ("SESSION_EXPIRY_INTERVAL", _T.FOUR_BYTE_INTEGER,
         (_CONNECT, _CONNACK, _DISCONNECT), ()),
        ("ASSIGNED_CLIENT_IDENTIFIER", _T.UTF8_STRING, (_CONNACK,), ()),
        ("SERVER_KEEP_ALIVE", _T.TWO_BYTE_INTEGER, (_CONNACK,), ()),
        ("AUTHENTICATION_METHOD", _T.UTF8_STRING, (_CONNECT, _CONNACK, _AUTH), ()),
        ("AUTHENTICATION_DATA", _T.BINARY_DATA, (_CONNECT, _CONNACK, _AUTH), ()),
        ("REQUEST_PROBLEM_INFORMATION", _T.BYTE, (_CONNECT,), ()),
        ("WILL_DELAY_INTERVAL", _T.FOUR_BYTE_INTEGER, (WILL_PROPERTIES,), ()),
        ("REQUEST_RESPONSE_INFORMATION", _T.BYTE, (_CONNECT,), ()),
        ("RESPONSE_INFORMATION", _T.UTF8_STRING, (_CONNACK,), ()),
        ("SERVER_REFERENCE", _T.UTF8_STRING, (_CONNACK, _DISCONNECT), ()),
        ("REASON_STRING", _T.UTF8_STRING,
         (_CONNACK, *_ACKS, _SUBACK, _UNSUBACK, _DISCONNECT, _AUTH), ()),
        ("RECEIVE_MAXIMUM", _T.TWO_BYTE_INTEGER, (_CONNECT, _CONNACK), ()),
        ("TOPIC_ALIAS_MAXIMUM", _T.TWO_BYTE_INTEGER, (_CONNECT, _CONNACK), ()),
        ("TOPIC_ALIAS", _T.TWO_BYTE_INTEGER, (_PUBLISH,), ()),
        ("MAXIMUM_QOS", _T.BYTE, (_CONNACK,), ()),
        ("RETAIN_AVAILABLE", _T.BYTE, (_CONNACK,), ()),
        ("USER_PROPERTY", _T.UTF8_STRING_PAIR, _EVERYWHERE, _EVERYWHERE),
        ("MAXIMUM_PACKET_SIZE", _T.FOUR_BYTE_INTEGER, (_CONNECT, _CONNACK), ()),
        ("WILDCARD_SUBSCRIPTION_AVAILABLE", _T.BYTE, (_CONNACK,), ()),
        ("SUBSCRIPTION_IDENTIFIER_AVAILABLE", _T.BYTE, (_CONNACK,), ()),
        ("SHARED_SUBSCRIPTION_AVAILABLE", _T.BYTE, (_CONNACK,), ()),
    )
)
assert [s.name for s in SPECS] == [f.name for f in dataclasses.fields(Properties)]
_GET_ALL = attrgetter(*(s.name for s in SPECS))

