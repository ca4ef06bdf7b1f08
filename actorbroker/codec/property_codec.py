"""Codec layer: MQTT 5 properties on the wire (section 2.2.2). Stdlib and codec only.

Decoding enforces the rules of section 2.2.2 and of each property's own
section: unknown identifier (malformed, 0x81), a property in a packet that
does not allow it, duplicates (except User Property, and Subscription
Identifier in PUBLISH), and values the spec forbids (protocol errors, 0x82).
Encoding writes properties in identifier order and refuses (``ValueError``)
a property the packet does not allow.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from operator import attrgetter
from typing import Any

from .errors import MalformedPacketError, ProtocolError
from .primitives import (
    encode_varint,
    read_binary,
    read_string,
    read_varint,
    truncated,
    write_binary,
    write_string,
    write_u16,
    write_u32,
)
from .frozen import mutable_twin
from .properties import (
    CONTEXT_NAMES,
    NO_PROPERTIES,
    SPECS,
    Properties,
    PropertySpec,
    PropertyType,
)

__all__ = ["decode_properties", "encode_properties"]

_T = PropertyType
_GET_ALL = attrgetter(*(s.name for s in SPECS))
_Builder = mutable_twin(Properties)

#: Values that must be 0 or 1, and values that must not be 0 (a protocol error).
_ZERO_OR_ONE = frozenset({
    "payload_format_indicator", "request_problem_information",
    "request_response_information", "maximum_qos", "retain_available",
    "wildcard_subscription_available", "subscription_identifier_available",
    "shared_subscription_available",
})
_NOT_ZERO = frozenset({"receive_maximum", "maximum_packet_size", "topic_alias"})
# Value checks: 1 = must be 0 or 1, 2 = must not be 0, 3 = kept as a tuple.
_CHECK = {
    **dict.fromkeys(_ZERO_OR_ONE, 1), **dict.fromkeys(_NOT_ZERO, 2),
    "user_property": 3, "subscription_identifier": 3,
}


def _read_pair(buf: bytes, pos: int, end: int) -> tuple[tuple[str, str], int]:
    key, pos = read_string(buf, pos, end)
    value, pos = read_string(buf, pos, end)
    return (key, value), pos


_READERS: dict[PropertyType, Callable[[bytes, int, int], tuple[Any, int]]] = {
    _T.VARIABLE_BYTE_INTEGER: read_varint,
    _T.UTF8_STRING: read_string,
    _T.BINARY_DATA: read_binary,
    _T.UTF8_STRING_PAIR: _read_pair,
}
# Decoding table indexed by identifier: (spec, field name, contexts, fixed
# width of an integer value or 0, reader for the other types, value check).
_Row = tuple[PropertySpec, str, frozenset[int], int, Any, int]
_ROWS: list[_Row | None] = [None] * 0x100
for _s in SPECS:
    _ROWS[_s.id] = (
        _s, _s.name, _s.contexts,
        {_T.BYTE: 1, _T.TWO_BYTE_INTEGER: 2, _T.FOUR_BYTE_INTEGER: 4}.get(_s.type, 0),
        _READERS.get(_s.type), _CHECK.get(_s.name, 0),
    )


def decode_properties(buf: bytes, pos: int, end: int, context: int) -> tuple[Properties, int]:
    """Read a property length and the properties that follow it."""
    if pos >= end:
        raise truncated("property length")
    length = buf[pos]
    if length < 0x80:
        pos += 1
    else:
        length, pos = read_varint(buf, pos, end)
    if length == 0:
        return NO_PROPERTIES, pos
    stop = pos + length
    if stop > end:
        raise truncated("properties")
    obj = _Builder()
    seen = 0  # bit per property identifier already read
    users: list[tuple[str, str]] | None = None
    sub_ids: list[int] | None = None
    rows = _ROWS
    while pos < stop:
        pid = buf[pos]
        row = rows[pid]
        if row is None:
            raise MalformedPacketError(
                f"unknown property identifier 0x{pid:02X} (section 2.2.2.2)"
            )
        spec, name, contexts, width, reader, check = row
        if context not in contexts:
            raise ProtocolError(
                f"property {spec.id.name} is not allowed in"
                f" {CONTEXT_NAMES[context]} (section 2.2.2.2)"
            )
        pos += 1
        if width:
            if pos + width > stop:
                raise truncated(spec.id.name)
            value: Any = buf[pos] if width == 1 else int.from_bytes(buf[pos:pos + width], "big")
            pos += width
        else:
            value, pos = reader(buf, pos, stop)
        bit = 1 << pid
        if check:
            if check == 3:  # User Property (repeats) or Subscription Identifier
                if pid == 0x26:
                    if users is None:
                        users = [value]
                    else:
                        users.append(value)
                    continue
                if value == 0:
                    raise ProtocolError("Subscription Identifier is 0 (section 3.8.2.1.2)")
                if sub_ids is None:
                    sub_ids = [value]
                elif context in spec.repeatable_in:
                    sub_ids.append(value)
                else:
                    raise _duplicate(spec, context)
                continue
            if check == 1 and value > 1:
                raise ProtocolError(
                    f"{spec.id.name} must be 0 or 1, got {value} (section 2.2.2.2)"
                )
            if check == 2 and value == 0:
                raise ProtocolError(f"{spec.id.name} must not be 0 (section 2.2.2.2)")
        if seen & bit:
            raise _duplicate(spec, context)
        seen |= bit
        setattr(obj, name, value)
    if users is not None:
        obj.user_property = tuple(users)
    if sub_ids is not None:
        obj.subscription_identifier = tuple(sub_ids)
    obj.__class__ = Properties
    return obj, stop


def _duplicate(spec: PropertySpec, context: int) -> ProtocolError:
    return ProtocolError(
        f"It is a Protocol Error to include {spec.id.name} more than once"
        f" ({CONTEXT_NAMES[context]}, section 2.2.2.2)"
    )


def _write_byte(value: int) -> bytes:
    return bytes((value,))


def _write_pair(pair: tuple[str, str]) -> bytes:
    return write_string(pair[0]) + write_string(pair[1])


_WRITERS: dict[PropertyType, Callable[[Any], bytes]] = {
    _T.BYTE: _write_byte,
    _T.TWO_BYTE_INTEGER: write_u16,
    _T.FOUR_BYTE_INTEGER: write_u32,
    _T.VARIABLE_BYTE_INTEGER: encode_varint,
    _T.UTF8_STRING: write_string,
    _T.BINARY_DATA: write_binary,
    _T.UTF8_STRING_PAIR: _write_pair,
}
# Encoding table in identifier order: (spec, identifier byte, writer, repeats).
_ENCODE_ROWS = tuple(
    (s, bytes((s.id,)), _WRITERS[s.type], s.name in ("user_property", "subscription_identifier"))
    for s in SPECS
)


def _getter(names: list[str]) -> Callable[[Properties], tuple[Any, ...]]:
    get = attrgetter(*names)
    return (lambda p: (get(p),)) if len(names) == 1 else get


# Per context: the rows it allows, a getter of their values, and a getter of
# all the other values with what they must equal (absent). Encoding then
# looks at a handful of fields in Python and at the rest in one C call.
_BY_CONTEXT = {
    context: (
        tuple(row for row in _ENCODE_ROWS if context in row[0].contexts),
        _getter([s.name for s in SPECS if context in s.contexts]),
        _getter([s.name for s in SPECS if context not in s.contexts]),
        tuple(f.default for s, f in zip(SPECS, dataclasses.fields(Properties), strict=True)
              if context not in s.contexts),
    )
    for context in CONTEXT_NAMES
}


def encode_properties(props: Properties, context: int) -> bytes:
    """Property length and properties, in identifier order."""
    if props is NO_PROPERTIES:
        return b"\x00"
    rows, get_allowed, get_others, absent = _BY_CONTEXT[context]
    if get_others(props) != absent:
        names = [s.id.name for s, v in zip(SPECS, _GET_ALL(props), strict=True)
                 if v is not None and v != () and context not in s.contexts]
        raise ValueError(f"properties {names} are not allowed in {CONTEXT_NAMES[context]}")
    parts: list[bytes] = []
    for (spec, pid, write, multi), value in zip(rows, get_allowed(props), strict=True):
        if value is None:
            continue
        if not multi:
            parts.append(pid + write(value))
        elif value:
            if len(value) > 1 and context not in spec.repeatable_in:
                raise ValueError(f"{spec.id.name} may appear once in {CONTEXT_NAMES[context]}")
            for item in value:
                parts.append(pid + write(item))
    body = b"".join(parts)
    return encode_varint(len(body)) + body
