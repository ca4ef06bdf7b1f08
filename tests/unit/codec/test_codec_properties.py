"""MQTT 5 properties: the table against the spec, and each property through each context."""

from __future__ import annotations

from typing import Any

import pytest

from actorbroker.codec import (
    NO_PROPERTIES,
    MalformedPacketError,
    Properties,
    PropertyId,
    ProtocolError,
)
from actorbroker.codec.properties import SPECS, WILL_PROPERTIES, PropertyType
from actorbroker.codec.property_codec import decode_properties, encode_properties

# Table 2-4 of MQTT 5.0, copied independently of the implementation:
# identifier -> (type, packets). W = Will Properties.
B, U16, U32, VBI, STR, BIN, PAIR = "B", "U16", "U32", "VBI", "STR", "BIN", "PAIR"
SPEC_TABLE: dict[int, tuple[str, set[str]]] = {
    0x01: (B, {"PUBLISH", "W"}),
    0x02: (U32, {"PUBLISH", "W"}),
    0x03: (STR, {"PUBLISH", "W"}),
    0x08: (STR, {"PUBLISH", "W"}),
    0x09: (BIN, {"PUBLISH", "W"}),
    0x0B: (VBI, {"PUBLISH", "SUBSCRIBE"}),
    0x11: (U32, {"CONNECT", "CONNACK", "DISCONNECT"}),
    0x12: (STR, {"CONNACK"}),
    0x13: (U16, {"CONNACK"}),
    0x15: (STR, {"CONNECT", "CONNACK", "AUTH"}),
    0x16: (BIN, {"CONNECT", "CONNACK", "AUTH"}),
    0x17: (B, {"CONNECT"}),
    0x18: (U32, {"W"}),
    0x19: (B, {"CONNECT"}),
    0x1A: (STR, {"CONNACK"}),
    0x1C: (STR, {"CONNACK", "DISCONNECT"}),
    0x1F: (STR, {"CONNACK", "PUBACK", "PUBREC", "PUBREL", "PUBCOMP", "SUBACK", "UNSUBACK",
                 "DISCONNECT", "AUTH"}),
    0x21: (U16, {"CONNECT", "CONNACK"}),
    0x22: (U16, {"CONNECT", "CONNACK"}),
    0x23: (U16, {"PUBLISH"}),
    0x24: (B, {"CONNACK"}),
    0x25: (B, {"CONNACK"}),
    0x26: (PAIR, {"CONNECT", "CONNACK", "PUBLISH", "W", "PUBACK", "PUBREC", "PUBREL", "PUBCOMP",
                  "SUBSCRIBE", "SUBACK", "UNSUBSCRIBE", "UNSUBACK", "DISCONNECT", "AUTH"}),
    0x27: (U32, {"CONNECT", "CONNACK"}),
    0x28: (B, {"CONNACK"}),
    0x29: (B, {"CONNACK"}),
    0x2A: (B, {"CONNACK"}),
}
CONTEXTS = {"W": 0, "CONNECT": 1, "CONNACK": 2, "PUBLISH": 3, "PUBACK": 4, "PUBREC": 5,
            "PUBREL": 6, "PUBCOMP": 7, "SUBSCRIBE": 8, "SUBACK": 9, "UNSUBSCRIBE": 10,
            "UNSUBACK": 11, "DISCONNECT": 14, "AUTH": 15}
TYPE_NAMES = {B: PropertyType.BYTE, U16: PropertyType.TWO_BYTE_INTEGER,
              U32: PropertyType.FOUR_BYTE_INTEGER, VBI: PropertyType.VARIABLE_BYTE_INTEGER,
              STR: PropertyType.UTF8_STRING, BIN: PropertyType.BINARY_DATA,
              PAIR: PropertyType.UTF8_STRING_PAIR}
SAMPLE: dict[str, Any] = {B: 1, U16: 513, U32: 70000, VBI: 200, STR: "s/é", BIN: b"\x00\xff", PAIR: ("k", "v")}
WIRE: dict[str, bytes] = {B: b"\x01", U16: b"\x02\x01", U32: b"\x00\x01\x11\x70", VBI: b"\xc8\x01",
                          STR: b"\x00\x04s/\xc3\xa9", BIN: b"\x00\x02\x00\xff",
                          PAIR: b"\x00\x01k\x00\x01v"}


def test_table_matches_the_spec() -> None:
    assert {int(s.id) for s in SPECS} == set(SPEC_TABLE)
    for spec in SPECS:
        kind, packets = SPEC_TABLE[spec.id]
        assert spec.type is TYPE_NAMES[kind], spec.id
        assert spec.contexts == {CONTEXTS[p] for p in packets}, spec.id
    assert {s.id for s in SPECS if s.repeatable_in} == {
        PropertyId.USER_PROPERTY, PropertyId.SUBSCRIPTION_IDENTIFIER}


CASES = [(pid, ctx) for pid, (_, packets) in SPEC_TABLE.items() for ctx in sorted(CONTEXTS)]


def _props(pid: int, value: Any) -> Properties:
    name = PropertyId(pid).name.lower()
    if pid in (0x26, 0x0B):
        value = (value,)
    return Properties(**{name: value})


@pytest.mark.parametrize(("pid", "context"), CASES, ids=[f"{p:#04x}-{c}" for p, c in CASES])
def test_property_in_context(pid: int, context: str) -> None:
    kind, packets = SPEC_TABLE[pid]
    wire = bytes((pid,)) + WIRE[kind]
    framed = bytes((len(wire),)) + wire
    ctx = CONTEXTS[context]
    if context in packets:
        props = _props(pid, SAMPLE[kind])
        assert decode_properties(framed, 0, len(framed), ctx) == (props, len(framed))
        assert encode_properties(props, ctx) == framed
    else:
        with pytest.raises(ProtocolError, match="not allowed in"):
            decode_properties(framed, 0, len(framed), ctx)
        with pytest.raises(ValueError):
            encode_properties(_props(pid, SAMPLE[kind]), ctx)


@pytest.mark.parametrize("pid", [p for p in SPEC_TABLE if p not in (0x26, 0x0B)])
def test_duplicate_is_a_protocol_error(pid: int) -> None:
    kind, packets = SPEC_TABLE[pid]
    ctx = CONTEXTS[sorted(packets)[0]]
    wire = (bytes((pid,)) + WIRE[kind]) * 2
    framed = bytes((len(wire),)) + wire
    with pytest.raises(ProtocolError, match="more than once") as info:
        decode_properties(framed, 0, len(framed), ctx)
    assert type(info.value) is ProtocolError and info.value.reason_code == 0x82


def test_user_property_repeats_in_order_with_duplicates() -> None:
    pairs = (("a", "1"), ("b", "2"), ("a", "1"))
    props = Properties(user_property=pairs)
    wire = encode_properties(props, 3)
    assert decode_properties(wire, 0, len(wire), 3)[0].user_property == pairs


def test_subscription_identifier_repeats_in_publish_only() -> None:
    wire = b"\x04\x0b\x01\x0b\x02"
    assert decode_properties(wire, 0, 5, 3)[0].subscription_identifier == (1, 2)
    with pytest.raises(ProtocolError, match="more than once"):
        decode_properties(wire, 0, 5, 8)


@pytest.mark.parametrize("pid", [0x01, 0x17, 0x19, 0x24, 0x25, 0x28, 0x29, 0x2A])
def test_byte_flags_must_be_zero_or_one(pid: int) -> None:
    ctx = CONTEXTS[sorted(SPEC_TABLE[pid][1])[0]]
    wire = bytes((2, pid, 2))
    with pytest.raises(ProtocolError, match="must be 0 or 1"):
        decode_properties(wire, 0, 3, ctx)
    wire = bytes((2, pid, 0))
    assert getattr(decode_properties(wire, 0, 3, ctx)[0], PropertyId(pid).name.lower()) == 0


@pytest.mark.parametrize("pid", [0x21, 0x23, 0x27])
def test_values_that_must_not_be_zero(pid: int) -> None:
    ctx = CONTEXTS[sorted(SPEC_TABLE[pid][1])[0]]
    width = 4 if pid == 0x27 else 2
    wire = bytes((1 + width, pid)) + bytes(width)
    with pytest.raises(ProtocolError, match="must not be 0"):
        decode_properties(wire, 0, len(wire), ctx)


def test_zero_values_are_kept_and_encoded() -> None:
    props = Properties(message_expiry_interval=0, content_type="", correlation_data=b"",
                       payload_format_indicator=0)
    wire = encode_properties(props, 3)
    assert decode_properties(wire, 0, len(wire), 3)[0] == props


def test_empty_properties_decode_to_the_shared_instance() -> None:
    assert decode_properties(b"\x00", 0, 1, 3) == (NO_PROPERTIES, 1)
    assert encode_properties(Properties(), 3) == b"\x00"


def test_unknown_and_multibyte_identifiers_are_malformed() -> None:
    for wire in (b"\x02\x00\x00", b"\x02\x2b\x00", b"\x03\x81\x00\x00"):
        with pytest.raises(MalformedPacketError, match="unknown property identifier"):
            decode_properties(wire, 0, len(wire), 3)


def test_decoded_properties_are_frozen() -> None:
    wire = b"\x03\x23\x00\x01"
    props = decode_properties(wire, 0, 4, 3)[0]
    assert type(props) is Properties
    with pytest.raises(AttributeError):
        props.topic_alias = 2  # type: ignore[misc]
    assert hash(props) == hash(Properties(topic_alias=1))


def test_repr_shows_only_present_properties() -> None:
    assert repr(Properties(topic_alias=3)) == "Properties(topic_alias=3)"
    assert repr(NO_PROPERTIES) == "Properties()"


def test_will_properties_context_is_zero() -> None:
    assert WILL_PROPERTIES == 0
