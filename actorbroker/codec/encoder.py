"""Codec layer: packets to bytes. Stdlib and codec only; no I/O.

``encode(packet, protocol_level)`` writes the canonical form: minimal
variable byte integers, properties in identifier order, and the short forms
MQTT 5 allows (an acknowledgement or DISCONNECT/AUTH without reason code and
properties when the reason is Success and there are no properties). At
levels 3 and 4 the MQTT 5 fields (properties, reason codes of PUBACK and
friends, DISCONNECT's reason) are not written; SUBACK failure codes become
0x80, the only failure 3.1.1 knows.

The encoder trusts its input for content (strings, topic syntax): packets
the decoder produced, or built by the broker from validated data. Packets
that cannot be written at all (QoS 1 without packet identifier, AUTH below
MQTT 5, oversize fields) raise ``ValueError``: a bug on our side.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from .packets import (
    PROTOCOL_LEVELS,
    Auth,
    ConnAck,
    Connect,
    Disconnect,
    Packet,
    PingReq,
    PingResp,
    PubAck,
    PubComp,
    Publish,
    PubRec,
    PubRel,
    SubAck,
    Subscribe,
    UnsubAck,
    Unsubscribe,
)
from .primitives import MAX_VARINT, encode_varint, write_binary, write_string
from .properties import NO_PROPERTIES, WILL_PROPERTIES, Properties
from .property_codec import encode_properties

__all__ = ["encode"]

_BBH = struct.Struct(">BBH").pack
_H = struct.Struct(">H").pack
_HB = struct.Struct(">HB").pack


def _frame(first: int, body: bytes) -> bytes:
    """Fixed header (first byte, remaining length) followed by ``body``."""
    size = len(body)
    if size < 0x80:
        return bytes((first, size)) + body
    if size > MAX_VARINT:
        raise ValueError(f"packet body of {size} bytes exceeds the remaining length limit")
    return bytes((first,)) + encode_varint(size) + body


def _packet_id(packet_id: int | None) -> bytes:
    if packet_id is None or not 0 < packet_id < 0x10000:
        raise ValueError(f"packet identifier must be 1..65535, not {packet_id!r}")
    return _H(packet_id)


def _props(props: Properties, level: int, context: int) -> bytes:
    return encode_properties(props, context) if level == 5 else b""


def encode(packet: Packet, protocol_level: int) -> bytes:
    """The wire bytes of ``packet`` at ``protocol_level`` (3, 4 or 5)."""
    if type(packet) is Publish:
        return _encode_publish(packet, protocol_level)
    if protocol_level not in PROTOCOL_LEVELS:
        raise ValueError(f"protocol_level must be 3, 4 or 5, not {protocol_level!r}")
    try:
        encoder = _ENCODERS[type(packet)]
    except KeyError:
        raise TypeError(f"not an MQTT packet: {packet!r}") from None
    return encoder(packet, protocol_level)


def _encode_publish(packet: Publish, level: int) -> bytes:
    qos = packet.qos
    topic = packet.topic.encode()
    payload = packet.payload
    first = 0x30 | (qos << 1) | packet.retain | (packet.dup << 3)
    if qos or level == 5 or len(topic) > 0xFFFF:
        if level not in PROTOCOL_LEVELS or qos not in (0, 1, 2):
            raise ValueError(f"cannot encode QoS {qos!r} PUBLISH at level {level!r}")
        if len(topic) > 0xFFFF:
            raise ValueError("topic name longer than 65535 bytes")
        parts = [_H(len(topic)), topic]
        if qos:
            parts.append(_packet_id(packet.packet_id))
        if level == 5:
            parts.append(encode_properties(packet.properties, 3))
        parts.append(payload)
        return _frame(first, b"".join(parts))
    if level != 3 and level != 4:
        raise ValueError(f"protocol_level must be 3, 4 or 5, not {level!r}")
    size = 2 + len(topic) + len(payload)
    if size < 0x80:  # the common small message: one struct call and two joins
        return b"".join((_BBH(first, size, len(topic)), topic, payload))
    return b"".join((bytes((first,)), encode_varint(size), _H(len(topic)), topic, payload))


def _encode_connect(packet: Connect, level: int) -> bytes:
    if packet.protocol_level != level:
        raise ValueError(
            f"CONNECT of protocol level {packet.protocol_level} encoded at level {level}"
        )
    if level < 5 and packet.password is not None and packet.username is None:
        raise ValueError("MQTT 3.x CONNECT cannot carry a password without a user name")
    will = packet.will
    flags = (packet.clean_start << 1) | ((packet.username is not None) << 7) | (
        (packet.password is not None) << 6)
    if will is not None:
        flags |= 0x04 | (will.qos << 3) | (will.retain << 5)
    parts = [
        write_string(packet.protocol_name), bytes((level, flags)), _H(packet.keepalive),
        _props(packet.properties, level, 1), write_string(packet.client_id),
    ]
    if will is not None:
        parts += [_props(will.properties, level, WILL_PROPERTIES),
                  write_string(will.topic), write_binary(will.payload)]
    if packet.username is not None:
        parts.append(write_string(packet.username))
    if packet.password is not None:
        parts.append(write_binary(packet.password))
    return _frame(0x10, b"".join(parts))


def _encode_connack(packet: ConnAck, level: int) -> bytes:
    body = bytes((packet.session_present, packet.reason_code))
    return _frame(0x20, body + _props(packet.properties, level, 2))


def _reason_and_props(reason_code: int, props: Properties, context: int) -> bytes:
    """The v5 tail of an acknowledgement, in its shortest allowed form."""
    encoded = b"\x00" if props is NO_PROPERTIES else encode_properties(props, context)
    if encoded == b"\x00":
        return bytes((reason_code,)) if reason_code else b""
    return bytes((reason_code,)) + encoded


def _ack_encoder(first: int, context: int) -> Callable[[Any, int], bytes]:
    def encode_ack(packet: PubAck | PubRec | PubRel | PubComp, level: int) -> bytes:
        body = _packet_id(packet.packet_id)
        if level == 5 and (packet.reason_code or packet.properties is not NO_PROPERTIES):
            body += _reason_and_props(packet.reason_code, packet.properties, context)
        return bytes((first, len(body))) + body if len(body) < 0x80 else _frame(first, body)

    return encode_ack


def _encode_subscribe(packet: Subscribe, level: int) -> bytes:
    parts = [_packet_id(packet.packet_id), _props(packet.properties, level, 8)]
    if not packet.subscriptions:
        raise ValueError("SUBSCRIBE needs at least one subscription")
    for sub in packet.subscriptions:
        options = sub.qos
        if level == 5:
            options |= (sub.no_local << 2) | (sub.retain_as_published << 3) | (
                sub.retain_handling << 4)
        parts += [write_string(sub.topic_filter), bytes((options,))]
    return _frame(0x82, b"".join(parts))


def _encode_suback(packet: SubAck, level: int) -> bytes:
    codes = packet.reason_codes
    if level != 5:
        codes = tuple(0x80 if code >= 0x80 else code for code in codes)
    body = _packet_id(packet.packet_id) + _props(packet.properties, level, 9) + bytes(codes)
    return _frame(0x90, body)


def _encode_unsubscribe(packet: Unsubscribe, level: int) -> bytes:
    if not packet.topic_filters:
        raise ValueError("UNSUBSCRIBE needs at least one topic filter")
    parts = [_packet_id(packet.packet_id), _props(packet.properties, level, 10)]
    parts += [write_string(topic_filter) for topic_filter in packet.topic_filters]
    return _frame(0xA2, b"".join(parts))


def _encode_unsuback(packet: UnsubAck, level: int) -> bytes:
    body = _packet_id(packet.packet_id)
    if level == 5:
        body += encode_properties(packet.properties, 11) + bytes(packet.reason_codes)
    return _frame(0xB0, body)


def _encode_disconnect(packet: Disconnect, level: int) -> bytes:
    if level != 5:
        return b"\xe0\x00"
    return _frame(0xE0, _reason_and_props(packet.reason_code, packet.properties, 14))


def _encode_auth(packet: Auth, level: int) -> bytes:
    if level != 5:
        raise ValueError("AUTH exists in MQTT 5 only")
    return _frame(0xF0, _reason_and_props(packet.reason_code, packet.properties, 15))


_ENCODERS: dict[type[Any], Callable[[Any, int], bytes]] = {
    Connect: _encode_connect,
    ConnAck: _encode_connack,
    PubAck: _ack_encoder(0x40, 4),
    PubRec: _ack_encoder(0x50, 5),
    PubRel: _ack_encoder(0x62, 6),
    PubComp: _ack_encoder(0x70, 7),
    Subscribe: _encode_subscribe,
    SubAck: _encode_suback,
    Unsubscribe: _encode_unsubscribe,
    UnsubAck: _encode_unsuback,
    PingReq: lambda packet, level: b"\xc0\x00",
    PingResp: lambda packet, level: b"\xd0\x00",
    Disconnect: _encode_disconnect,
    Auth: _encode_auth,
}
