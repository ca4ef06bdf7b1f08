"""The record format: a byte-exact vector per envelope rule, forward compatibility, refusals."""

from __future__ import annotations

import dataclasses
import struct
from pathlib import Path
from typing import ClassVar

import pytest
from mypy import api as mypy_api

from actorbroker.errors import CorruptRecordError
from actorbroker.persistence import records as r
from actorbroker.persistence.record_base import record as record_class
from actorbroker.persistence.records import (
    ENVELOPE,
    RECORD_TYPES,
    OutboundSent,
    PublishAccepted,
    Record,
    SessionDisconnected,
    UnknownRecord,
    decode_record,
    encode_record,
    peek,
)
from actorbroker.persistence.wire import BodyCodec, Kind, wire

# PublishAccepted("a/b", b"hi", qos=1, retain=True, properties=b"\x00", client_id="c1",
# packet_id=7, timestamp_us=5), written out by hand from docs/storage.md.
PUBLISH_BYTES = bytes.fromhex(
    "01" "01" "0000" "0000000000000005"  # type 1, version 1, flags 0, timestamp 5
    "01" "01" "0007"                      # fixed fields: qos 1, retain true, packet_id 7
    "0003" "612f62"                       # topic "a/b"
    "00000002" "6869"                     # payload b"hi"
    "00000001" "00"                       # properties: one byte, 0 (empty property list)
    "0002" "6331"                         # client_id "c1"
)
PUBLISH = PublishAccepted("a/b", b"hi", 1, True, b"\x00", "c1", 7, timestamp_us=5)


def test_publish_is_encoded_byte_for_byte_as_documented() -> None:
    assert encode_record(PUBLISH) == PUBLISH_BYTES
    assert decode_record(PUBLISH_BYTES) == PUBLISH


def test_envelope_carries_type_version_flags_and_timestamp() -> None:
    data = encode_record(dataclasses.replace(PUBLISH, restated=True, timestamp_us=-1))
    assert peek(data) == (1, 1, r.FLAG_RESTATED, -1)
    assert decode_record(data).restated is True


def test_u32_list_field() -> None:
    sent = OutboundSent("c", 65535, 2**64 - 1, 2, True, (1, 268_435_455), timestamp_us=0)
    data = encode_record(sent)
    assert data.endswith(bytes.fromhex("0002" "00000001" "0fffffff"))
    assert decode_record(data) == sent


def test_every_type_has_its_own_code_and_round_trips_with_defaults() -> None:
    assert len({cls.TYPE for cls in RECORD_TYPES.values()}) == len(RECORD_TYPES)
    assert all(code == cls.TYPE and cls.VERSION == 1 for code, cls in RECORD_TYPES.items())
    for cls in RECORD_TYPES.values():
        required = {
            f.name: (b"x" if f.type == "bytes" else "x" if f.type == "str" else 1)
            for f in dataclasses.fields(cls)
            if f.default is dataclasses.MISSING and f.name != "timestamp_us"
        }
        record = cls(**required, timestamp_us=42)
        assert decode_record(encode_record(record)) == record, cls.__name__


def test_unknown_type_and_unknown_version_are_kept_not_refused() -> None:
    future = ENVELOPE.pack(200, 1, 0, 9) + b"\x01\x02"
    assert decode_record(future) == UnknownRecord(200, 1, b"\x01\x02", timestamp_us=9)
    newer_publish = ENVELOPE.pack(PublishAccepted.TYPE, 2, 1, 9) + b"anything"
    found = decode_record(newer_publish)
    assert found == UnknownRecord(1, 2, b"anything", timestamp_us=9, restated=True)
    assert encode_record(found) == newer_publish  # copied byte for byte


def test_bytes_after_the_known_fields_are_ignored() -> None:
    """A later minor revision may append fields to a body without a new version."""
    assert decode_record(PUBLISH_BYTES + b"\x00\x01more") == PUBLISH


def test_reserved_flag_bits_are_ignored() -> None:
    data = bytearray(PUBLISH_BYTES)
    data[2:4] = b"\x80\x00"
    assert decode_record(bytes(data)) == PUBLISH


def test_unknown_disconnect_cause_values_are_kept() -> None:
    record = SessionDisconnected("c", cause=250, reason_code=0x8E, timestamp_us=1)
    assert decode_record(encode_record(record)).cause == 250  # type: ignore[attr-defined]


@pytest.mark.parametrize("cut", range(ENVELOPE.size, len(PUBLISH_BYTES) - 2))
def test_a_short_body_is_a_corrupt_record(cut: int) -> None:
    """Every cut inside the body (the last field is 2+2 bytes) is caught."""
    with pytest.raises(CorruptRecordError):
        decode_record(PUBLISH_BYTES[:cut])


def test_short_envelope_bad_utf8_and_qos_above_2_are_corrupt() -> None:
    with pytest.raises(CorruptRecordError, match="envelope"):
        decode_record(PUBLISH_BYTES[:ENVELOPE.size - 1])
    bad_text = PUBLISH_BYTES.replace(b"a/b", b"a\xffb")
    with pytest.raises(CorruptRecordError, match="UTF-8"):
        decode_record(bad_text)
    bad_qos = bytearray(PUBLISH_BYTES)
    bad_qos[ENVELOPE.size] = 3
    with pytest.raises(CorruptRecordError, match="qos"):
        decode_record(bytes(bad_qos))


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (PublishAccepted("t", b"", qos=3, timestamp_us=0), "qos must be 0..2"),
        (PublishAccepted("t", b"", packet_id=65536, timestamp_us=0), "PublishAccepted"),
        (PublishAccepted("t" * 65536, b"", timestamp_us=0), "longer than 65535"),
        (PublishAccepted("t", b"", timestamp_us=2**63), "envelope"),
        (OutboundSent("c", 1, -1, timestamp_us=0), "OutboundSent"),
        (OutboundSent("c", 1, 0, subscription_ids=(2**32,), timestamp_us=0), "subscription_ids"),
    ],
)
def test_values_that_do_not_fit_are_refused_on_encoding(record: Record, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        encode_record(record)


def test_records_are_slotted_hashable_and_frozen_to_the_type_checker(tmp_path: Path) -> None:
    """Frozen statically (``record``: mypy rejects assigning a field), not at run time."""
    for cls in (*RECORD_TYPES.values(), UnknownRecord):
        assert "__slots__" in cls.__dict__
    assert hash(PUBLISH) == hash(dataclasses.replace(PUBLISH)) and {PUBLISH: 1}[PUBLISH] == 1
    source = tmp_path / "assigns.py"
    source.write_text("from actorbroker.persistence.records import PublishAccepted, SessionQueued\n"
                      "def f(p: PublishAccepted, q: SessionQueued) -> None:\n"
                      "    p.qos = 2\n"
                      "    q.timestamp_us = 0\n")
    out, _, status = mypy_api.run(["--no-incremental", "--follow-imports=silent", str(source)])
    assert status == 1
    assert out.count("is read-only") == 2, out


def test_a_non_record_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        encode_record(Record(timestamp_us=0))


def test_envelope_layout() -> None:
    assert ENVELOPE.size == 12 and ENVELOPE.format == ">BBHq"
    assert struct.calcsize(ENVELOPE.format) == 12


# -- the version rule: a field appended to a released layout --------------------


@record_class
class _Before(Record):
    TYPE: ClassVar[int] = 250
    client_id: str = wire(Kind.TEXT, "id")
    count: int = wire(Kind.U32, "count", default=0)


@record_class
class _After(Record):
    TYPE: ClassVar[int] = 250
    client_id: str = wire(Kind.TEXT, "id")
    count: int = wire(Kind.U32, "count", default=0)
    level: int = wire(Kind.U8, "added later", default=3, maximum=5, appended=True)
    note: str = wire(Kind.TEXT, "added later", default="none", appended=True)


def test_an_appended_field_keeps_old_and_new_records_readable_both_ways() -> None:
    before, after = BodyCodec(_Before), BodyCodec(_After)
    old, new = bytearray(), bytearray()
    before.encode(_Before("c", 7, timestamp_us=0), old)
    after.encode(_After("c", 7, 4, "hi", timestamp_us=0), new)
    assert new.startswith(old)  # the new fields go after every old one
    assert after.decode(bytes(old), 0, 1, False) == _After("c", 7, timestamp_us=1)  # defaults
    assert before.decode(bytes(new), 0, 1, False) == _Before("c", 7, timestamp_us=1)  # ignored
    assert after.decode(bytes(new), 0, 1, False) == _After("c", 7, 4, "hi", timestamp_us=1)
    with pytest.raises(CorruptRecordError):
        after.decode(bytes(new[:-1]), 0, 1, False)  # present but cut: still an error
    with pytest.raises(ValueError, match="level"):
        after.encode(_After("c", level=9, timestamp_us=0), bytearray())


def test_an_appended_field_needs_a_default() -> None:
    with pytest.raises(TypeError):
        wire(Kind.U8, "x", appended=True)
