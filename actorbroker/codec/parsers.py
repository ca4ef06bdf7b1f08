"""Codec layer: parsers of packet bodies (variable header and payload). Stdlib and codec only.

Each ``parse_*(data, pos, end, flags, level)`` reads one packet body lying in
``data[pos:end]`` (``end`` is where the remaining length says the packet
stops), checks the rules of its section of the spec and returns the packet.
The fixed header was validated by the decoder. Fields never reach past
``end``; bytes left before ``end`` are malformed.
"""

from __future__ import annotations

from typing import Any

from . import reason_codes as rc
from .errors import MalformedPacketError, ProtocolError
from .packets import (
    Auth,
    ConnAck,
    Connect,
    Disconnect,
    PingReq,
    PingResp,
    PubAck,
    PubComp,
    Publish,
    PubRec,
    PubRel,
    SubAck,
    Subscribe,
    Subscription,
    UnsubAck,
    Unsubscribe,
    Will,
)
from .primitives import (
    UTF8_ILL_FORMED,
    UTF8_NULL,
    read_binary,
    read_string,
    read_u8,
    read_u16,
    truncated,
)
from .frozen import mutable_twin
from .properties import NO_PROPERTIES, WILL_PROPERTIES, Properties
from .property_codec import decode_properties
from .reason_codes import ConnectReturnCode, ReasonCode
from .topics import SHARED_PREFIX, validate_topic_filter, validate_topic_name

__all__ = ["PARSERS", "parse_connect", "parse_publish"]

#: ReasonCode member by byte value (None where the spec defines no code).
_RC: tuple[ReasonCode | None, ...] = tuple(
    ReasonCode(v) if v in ReasonCode._value2member_map_ else None for v in range(256)
)
PACKET_ID_ZERO = "[MQTT-2.2.1-3] (3.1.1: [MQTT-2.3.1-1]) packet identifier must not be 0"


def _trailing(pos: int, end: int, name: str) -> MalformedPacketError:
    return MalformedPacketError(
        f"{name} has {end - pos} bytes after its last field (section 2.1.4: the"
        " remaining length must match the content)"
    )


def _packet_id(data: bytes, pos: int, end: int) -> tuple[int, int]:
    if pos + 2 > end:
        raise truncated("packet identifier")
    packet_id = (data[pos] << 8) | data[pos + 1]
    if not packet_id:
        raise MalformedPacketError(PACKET_ID_ZERO)
    return packet_id, pos + 2


def _reason(code: int, allowed: frozenset[ReasonCode], rule: str, name: str) -> ReasonCode:
    member = _RC[code]
    if member is None or member not in allowed:
        raise ProtocolError(f"{rule} 0x{code:02X} is not a {name} reason code")
    return member


def parse_connect(data: bytes, pos: int, end: int, flags: int, level: int | None) -> Connect:
    """CONNECT, at the protocol level it announces itself (``level`` is ignored)."""
    name, pos = read_string(data, pos, end)
    level, pos = read_u8(data, pos, end)
    if name not in ("MQTT", "MQIsdp"):
        raise ProtocolError(
            f"[MQTT-3.1.2-1] protocol name {name!r} is neither MQTT nor MQIsdp",
            ReasonCode.UNSUPPORTED_PROTOCOL_VERSION,
        )
    if (name, level) not in (("MQIsdp", 3), ("MQTT", 4), ("MQTT", 5)):
        raise ProtocolError(
            f"[MQTT-3.1.2-2] unsupported protocol level {level} for {name!r}",
            ReasonCode.UNSUPPORTED_PROTOCOL_VERSION,
        )
    v5 = level == 5
    cflags, pos = read_u8(data, pos, end)
    if cflags & 0x01:
        raise MalformedPacketError("[MQTT-3.1.2-3] CONNECT reserved flag is not 0")
    will_flag, will_qos, will_retain = cflags & 0x04, (cflags >> 3) & 3, bool(cflags & 0x20)
    if not will_flag:
        if will_qos:
            raise MalformedPacketError(
                ("[MQTT-3.1.2-11]" if v5 else "[MQTT-3.1.2-13]")
                + " Will QoS must be 0 when the Will Flag is 0"
            )
        if will_retain:
            raise MalformedPacketError(
                ("[MQTT-3.1.2-13]" if v5 else "[MQTT-3.1.2-15]")
                + " Will Retain must be 0 when the Will Flag is 0"
            )
    elif will_qos == 3:
        raise MalformedPacketError(
            ("[MQTT-3.1.2-12]" if v5 else "[MQTT-3.1.2-14]") + " Will QoS is 3"
        )
    if not v5 and cflags & 0x40 and not cflags & 0x80:
        raise MalformedPacketError(
            "[MQTT-3.1.2-22] Password Flag set without the User Name Flag (MQTT 3.x)"
        )
    keepalive, pos = read_u16(data, pos, end)
    props = NO_PROPERTIES
    if v5:
        props, pos = decode_properties(data, pos, end, 1)
        if props.authentication_data is not None and props.authentication_method is None:
            raise ProtocolError(
                "Authentication Data without Authentication Method (section 3.1.2.11.10)"
            )
    client_id, pos = read_string(data, pos, end)
    will = None
    if will_flag:
        will_props = NO_PROPERTIES
        if v5:
            will_props, pos = decode_properties(data, pos, end, WILL_PROPERTIES)
            _check_response_topic(will_props)
        will_topic, pos = read_string(data, pos, end)
        validate_topic_name(will_topic)
        will_payload, pos = read_binary(data, pos, end)
        will = Will(will_topic, will_payload, will_qos, will_retain, will_props)
    username = password = None
    if cflags & 0x80:
        username, pos = read_string(data, pos, end)
    if cflags & 0x40:
        password, pos = read_binary(data, pos, end)
    if pos != end:
        raise _trailing(pos, end, "CONNECT")
    return Connect(name, level, client_id, bool(cflags & 0x02), keepalive,
                   username, password, will, props)


def _check_response_topic(props: Properties) -> None:
    if props.response_topic is not None:
        try:
            validate_topic_name(props.response_topic)
        except ProtocolError as exc:
            raise ProtocolError(f"Response Topic: {exc} (section 3.3.2.3.5)") from None


def parse_connack(data: bytes, pos: int, end: int, flags: int, level: int) -> ConnAck:
    ack_flags, pos = read_u8(data, pos, end)
    code, pos = read_u8(data, pos, end)
    if ack_flags & 0xFE:
        raise MalformedPacketError("[MQTT-3.2.2-1] CONNACK acknowledge flags bits 7-1 must be 0")
    reason: int
    props = NO_PROPERTIES
    if level == 5:
        reason = _reason(code, rc.CONNACK_CODES, "[MQTT-3.2.2-8]", "CONNACK")
        props, pos = decode_properties(data, pos, end, 2)
    elif code > 5:
        raise MalformedPacketError(
            f"CONNACK return code {code} is reserved (3.1.1 section 3.2.2.3)"
        )
    else:
        reason = ConnectReturnCode(code)
    if ack_flags and code:
        raise ProtocolError(
            ("[MQTT-3.2.2-6]" if level == 5 else "[MQTT-3.2.2-4]")
            + " Session Present must be 0 with a non-zero reason code"
        )
    if pos != end:
        raise _trailing(pos, end, "CONNACK")
    return ConnAck(bool(ack_flags), reason, props)


PublishBuilder: Any = mutable_twin(Publish)


def parse_publish(data: bytes, pos: int, end: int, flags: int, level: int) -> Publish:
    qos = (flags >> 1) & 3
    if qos == 3:
        raise MalformedPacketError("[MQTT-3.3.1-4] PUBLISH has both QoS bits set")
    if flags & 0x08 and not qos:
        raise MalformedPacketError("[MQTT-3.3.1-2] DUP flag set on a QoS 0 PUBLISH")
    if pos + 2 > end:
        raise truncated("topic name length")
    stop = pos + 2 + ((data[pos] << 8) | data[pos + 1])
    if stop > end:
        raise truncated("topic name")
    try:
        topic = data[pos + 2:stop].decode()
    except UnicodeDecodeError:
        raise MalformedPacketError(UTF8_ILL_FORMED) from None
    pos = stop
    if "+" in topic or "#" in topic or "\x00" in topic:
        if "\x00" in topic:
            raise MalformedPacketError(UTF8_NULL)
        validate_topic_name(topic)
    packet_id = None
    if qos:
        if pos + 2 > end:
            raise truncated("packet identifier")
        packet_id = (data[pos] << 8) | data[pos + 1]
        if not packet_id:
            raise MalformedPacketError(PACKET_ID_ZERO)
        pos += 2
    if level == 5:
        props, pos = decode_properties(data, pos, end, 3)
        if not topic and props.topic_alias is None:
            raise ProtocolError(
                "[MQTT-4.7.3-1] empty topic name without a Topic Alias (section 3.3.2.1)",
                ReasonCode.TOPIC_NAME_INVALID,
            )
        if props.response_topic is not None:
            _check_response_topic(props)
    else:
        props = NO_PROPERTIES
        if not topic:
            validate_topic_name(topic)
    obj = PublishBuilder(
        topic, data[pos:end], qos, bool(flags & 1), bool(flags & 8), packet_id, props
    )
    obj.__class__ = Publish
    return obj  # type: ignore[no-any-return]


def _ack_parser(cls: Any, allowed: frozenset[ReasonCode], rule: str) -> Any:
    name = cls.__name__.upper()
    context = int(cls.packet_type)

    def parse(data: bytes, pos: int, end: int, flags: int, level: int) -> Any:
        packet_id, pos = _packet_id(data, pos, end)
        if level != 5 or pos == end:  # v5 short form: Success, no properties
            if pos != end:
                raise _trailing(pos, end, name)
            return cls(packet_id)
        reason = _reason(data[pos], allowed, rule, name)
        props = NO_PROPERTIES
        if pos + 1 < end:
            props, pos = decode_properties(data, pos + 1, end, context)
            if pos != end:
                raise _trailing(pos, end, name)
        return cls(packet_id, reason, props)

    parse.__name__ = f"parse_{name.lower()}"
    return parse


def parse_subscribe(data: bytes, pos: int, end: int, flags: int, level: int) -> Subscribe:
    packet_id, pos = _packet_id(data, pos, end)
    props = NO_PROPERTIES
    if level == 5:
        props, pos = decode_properties(data, pos, end, 8)
    subscriptions = []
    while pos < end:
        topic_filter, pos = read_string(data, pos, end)
        options, pos = read_u8(data, pos, end)
        qos = options & 3
        if level != 5:
            if options & 0xFC or qos == 3:
                raise MalformedPacketError(
                    "[MQTT-3.8.3-4] Requested QoS byte has reserved bits set or QoS 3"
                )
            validate_topic_filter(topic_filter, shared=False)
            subscriptions.append(Subscription(topic_filter, qos))
            continue
        if options & 0xC0:
            raise MalformedPacketError("[MQTT-3.8.3-5] Subscription Options reserved bits set")
        if qos == 3:
            raise ProtocolError("Subscription Options Maximum QoS is 3 (section 3.8.3.1)")
        retain_handling = (options >> 4) & 3
        if retain_handling == 3:
            raise ProtocolError("Subscription Options Retain Handling is 3 (section 3.8.3.1)")
        validate_topic_filter(topic_filter, shared=True)
        no_local = bool(options & 4)
        if no_local and topic_filter.startswith(SHARED_PREFIX):
            raise ProtocolError("[MQTT-3.8.3-4] No Local set on a Shared Subscription")
        subscriptions.append(
            Subscription(topic_filter, qos, no_local, bool(options & 8), retain_handling)
        )
    if not subscriptions:
        raise ProtocolError(
            "[MQTT-3.8.3-2] (3.1.1: [MQTT-3.8.3-3]) SUBSCRIBE has no topic filter"
        )
    return Subscribe(packet_id, tuple(subscriptions), props)


def parse_suback(data: bytes, pos: int, end: int, flags: int, level: int) -> SubAck:
    packet_id, pos = _packet_id(data, pos, end)
    props = NO_PROPERTIES
    if level == 5:
        props, pos = decode_properties(data, pos, end, 9)
        codes = tuple(
            _reason(c, rc.SUBACK_CODES, "[MQTT-3.9.3-2]", "SUBACK") for c in data[pos:end]
        )
    else:
        for code in data[pos:end]:
            if code not in rc.SUBACK_CODES_V3:
                raise MalformedPacketError(
                    f"[MQTT-3.9.3-2] SUBACK return code 0x{code:02X} is reserved"
                )
        codes = tuple(_RC[c] for c in data[pos:end])  # type: ignore[misc]
    if not codes:
        raise ProtocolError("SUBACK has no reason code (section 3.9.3: one per topic filter)")
    return SubAck(packet_id, codes, props)


def parse_unsubscribe(data: bytes, pos: int, end: int, flags: int, level: int) -> Unsubscribe:
    packet_id, pos = _packet_id(data, pos, end)
    props = NO_PROPERTIES
    if level == 5:
        props, pos = decode_properties(data, pos, end, 10)
    topic_filters = []
    while pos < end:
        topic_filter, pos = read_string(data, pos, end)
        validate_topic_filter(topic_filter, shared=level == 5)
        topic_filters.append(topic_filter)
    if not topic_filters:
        raise ProtocolError("[MQTT-3.10.3-2] UNSUBSCRIBE has no topic filter")
    return Unsubscribe(packet_id, tuple(topic_filters), props)


def parse_unsuback(data: bytes, pos: int, end: int, flags: int, level: int) -> UnsubAck:
    packet_id, pos = _packet_id(data, pos, end)
    if level != 5:
        if pos != end:
            raise _trailing(pos, end, "UNSUBACK")
        return UnsubAck(packet_id)
    props, pos = decode_properties(data, pos, end, 11)
    codes = tuple(
        _reason(c, rc.UNSUBACK_CODES, "[MQTT-3.11.3-2]", "UNSUBACK") for c in data[pos:end]
    )
    if not codes:
        raise ProtocolError("UNSUBACK has no reason code (section 3.11.3: one per topic filter)")
    return UnsubAck(packet_id, codes, props)


_PINGREQ, _PINGRESP, _DISCONNECT, _AUTH = PingReq(), PingResp(), Disconnect(), Auth()


def parse_pingreq(data: bytes, pos: int, end: int, flags: int, level: int) -> PingReq:
    if pos != end:
        raise _trailing(pos, end, "PINGREQ")
    return _PINGREQ


def parse_pingresp(data: bytes, pos: int, end: int, flags: int, level: int) -> PingResp:
    if pos != end:
        raise _trailing(pos, end, "PINGRESP")
    return _PINGRESP


def _reason_and_properties(
    data: bytes, pos: int, end: int, context: int,
    allowed: frozenset[ReasonCode], rule: str, name: str,
) -> tuple[ReasonCode, Properties]:
    reason = _reason(data[pos], allowed, rule, name)
    props = NO_PROPERTIES
    if pos + 1 < end:
        props, pos = decode_properties(data, pos + 1, end, context)
        if pos != end:
            raise _trailing(pos, end, name)
    return reason, props


def parse_disconnect(data: bytes, pos: int, end: int, flags: int, level: int) -> Disconnect:
    if pos == end:
        return _DISCONNECT
    if level != 5:
        raise _trailing(pos, end, "DISCONNECT")
    return Disconnect(*_reason_and_properties(
        data, pos, end, 14, rc.DISCONNECT_CODES, "[MQTT-3.14.2-1]", "DISCONNECT"))


def parse_auth(data: bytes, pos: int, end: int, flags: int, level: int) -> Auth:
    if pos == end:
        return _AUTH
    return Auth(*_reason_and_properties(
        data, pos, end, 15, rc.AUTH_CODES, "[MQTT-3.15.2-1]", "AUTH"))


#: Body parser by packet type number (index 0 unused).
PARSERS: tuple[Any, ...] = (
    None, parse_connect, parse_connack, parse_publish,
    _ack_parser(PubAck, rc.PUBACK_CODES, "[MQTT-3.4.2-1]"),
    _ack_parser(PubRec, rc.PUBACK_CODES, "[MQTT-3.5.2-1]"),
    _ack_parser(PubRel, rc.PUBREL_CODES, "[MQTT-3.6.2-1]"),
    _ack_parser(PubComp, rc.PUBREL_CODES, "[MQTT-3.7.2-1]"),
    parse_subscribe, parse_suback, parse_unsubscribe, parse_unsuback,
    parse_pingreq, parse_pingresp, parse_disconnect, parse_auth,
)
