"""Codec layer: MQTT data representation (section 1.5). Imports the stdlib and errors only.

Readers take the whole input buffer, a position and the end of the current
packet, and return ``(value, new_position)``; they never read past ``end``
and raise :class:`MalformedPacketError` when a field does not fit (the
remaining length is shorter than the content) or breaks a data rule.
Writers return ``bytes`` and raise ``ValueError`` for values the wire format
cannot carry (our bug, not the peer's).
"""

from __future__ import annotations

import struct

from .errors import MalformedPacketError

__all__ = [
    "MAX_VARINT",
    "encode_varint",
    "read_binary",
    "read_string",
    "read_u8",
    "read_u16",
    "read_u32",
    "read_varint",
    "truncated",
    "write_binary",
    "write_string",
    "write_u16",
    "write_u32",
]

#: Largest Variable Byte Integer: four bytes of seven bits (section 1.5.5).
MAX_VARINT = 268_435_455

_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")
write_u16 = _U16.pack
write_u32 = _U32.pack

UTF8_ILL_FORMED = (
    "[MQTT-1.5.4-1] (3.1.1: [MQTT-1.5.3-1]) UTF-8 string is ill-formed"
    " or encodes a surrogate"
)
UTF8_NULL = "[MQTT-1.5.4-2] (3.1.1: [MQTT-1.5.3-2]) UTF-8 string contains U+0000"


def truncated(what: str) -> MalformedPacketError:
    """The remaining length ends inside a field (v5 section 2.1.4)."""
    return MalformedPacketError(
        f"remaining length ends inside the {what} (section 2.1.4: the remaining"
        " length must cover the variable header and payload exactly)"
    )


def read_u8(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    if pos >= end:
        raise truncated("one-byte field")
    return buf[pos], pos + 1


def read_u16(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    if pos + 2 > end:
        raise truncated("two-byte integer")
    return (buf[pos] << 8) | buf[pos + 1], pos + 2


def read_u32(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    if pos + 4 > end:
        raise truncated("four-byte integer")
    return int.from_bytes(buf[pos:pos + 4], "big"), pos + 4


def read_varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """A Variable Byte Integer of one to four bytes, minimally encoded."""
    value = 0
    for shift in (0, 7, 14, 21):
        if pos >= end:
            raise truncated("variable byte integer")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            if byte == 0 and shift:
                raise MalformedPacketError(
                    "[MQTT-1.5.5-1] variable byte integer is not minimally encoded"
                )
            return value, pos
    raise MalformedPacketError(
        "variable byte integer is longer than four bytes (v5 section 1.5.5,"
        " 3.1.1 section 2.2.3)"
    )


def read_string(buf: bytes, pos: int, end: int) -> tuple[str, int]:
    """A UTF-8 Encoded String: well-formed, no surrogates, no U+0000."""
    if pos + 2 > end:
        raise truncated("string length")
    stop = pos + 2 + ((buf[pos] << 8) | buf[pos + 1])
    if stop > end:
        raise truncated("UTF-8 string")
    try:
        # Python's strict UTF-8 codec rejects overlong forms, encoded
        # surrogates and code points above U+10FFFF, as RFC 3629 does.
        text = buf[pos + 2:stop].decode("utf-8")
    except UnicodeDecodeError:
        raise MalformedPacketError(UTF8_ILL_FORMED) from None
    if "\x00" in text:
        raise MalformedPacketError(UTF8_NULL)
    return text, stop


def read_binary(buf: bytes, pos: int, end: int) -> tuple[bytes, int]:
    """Binary Data: a two-byte length and that many bytes."""
    if pos + 2 > end:
        raise truncated("binary data length")
    stop = pos + 2 + ((buf[pos] << 8) | buf[pos + 1])
    if stop > end:
        raise truncated("binary data")
    return buf[pos + 2:stop], stop


def encode_varint(value: int) -> bytes:
    """Minimal Variable Byte Integer encoding of 0..268,435,455."""
    if value < 0x80:
        if value < 0:
            raise ValueError(f"variable byte integer must be >= 0, got {value}")
        return bytes((value,))
    if value > MAX_VARINT:
        raise ValueError(f"variable byte integer too large: {value}")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def write_string(text: str) -> bytes:
    data = text.encode("utf-8")
    if len(data) > 0xFFFF:
        raise ValueError(f"UTF-8 string longer than 65535 bytes ({len(data)})")
    return _U16.pack(len(data)) + data


def write_binary(data: bytes) -> bytes:
    if len(data) > 0xFFFF:
        raise ValueError(f"binary data longer than 65535 bytes ({len(data)})")
    return _U16.pack(len(data)) + bytes(data)
