"""Persistence layer: the record format of the commit log. Imports the stdlib and actorbroker.errors only.

This is the module the data pipeline imports to read the broker's history
(with :mod:`.segment` for the frames and :mod:`.reader` for a directory).
docs/storage.md describes the format byte by byte; its tables are generated
from the declarations below (``python -m actorbroker.persistence --write``).

A record is the payload of one frame: a 12-byte envelope, then the body.

    u8 type | u8 version | u16 flags | i64 timestamp_us | body

* ``type`` names the record class (:data:`RECORD_TYPES`); ``version`` is the
  version of that type's body layout, 1 for every type so far. A reader
  returns :class:`UnknownRecord` for a type or version it does not know, and
  log readers skip those: new record types never break old readers.
* A body may grow new fields at its end without a new version (readers
  ignore bytes after the fields they know); any other change to a layout
  takes a new version number.
* ``flags`` bit 0 (:data:`FLAG_RESTATED`): the record restates state at a
  checkpoint instead of reporting a new event; the pipeline skips those when
  it counts events. Other bits are reserved: written 0, ignored on reading.
* ``timestamp_us``: wall-clock time of the event, microseconds since the Unix
  epoch (UTC).

MQTT 5 properties are stored as a BLOB holding their wire encoding (see
docs/storage.md); an empty BLOB means none (MQTT 3.x).
"""

from __future__ import annotations

import struct
from enum import IntEnum
from typing import ClassVar

from actorbroker.errors import CorruptRecordError

from .delivery_records import (
    OutboundSent,
    OutboundUnsent,
    PubAckReceived,
    PubCompReceived,
    PubRecReceived,
    PubRelReceived,
    SessionCursor,
    SessionDropped,
    SessionQueued,
    SharedPending,
    SharedRouted,
)
from .record_base import CLIENT as _CLIENT
from .record_base import ENVELOPE, FLAG_RESTATED, Record, UnknownRecord, record
from .record_base import PROPS as _PROPS
from .record_base import QOS as _QOS
from .record_base import TOPIC as _TOPIC
from .wire import BodyCodec, Kind, wire

__all__ = [
    "ENVELOPE", "FLAG_RESTATED", "RECORD_TYPES", "CheckpointCompleted", "CheckpointStarted",
    "DisconnectCause", "OutboundSent", "OutboundUnsent", "PubAckReceived", "PubCompReceived",
    "PubRecReceived",
    "PubRelReceived", "PublishAccepted", "Record", "RetainedCleared", "RetainedSet", "SessionConnected",
    "SessionCursor", "SessionDisconnected", "SessionDropped", "SessionExpired", "SessionQueued",
    "SharedPending", "SharedRouted", "Subscribed",
    "UnknownRecord", "Unsubscribed", "WillCleared", "WillSent", "WillSet", "decode_record",
    "encode_record", "peek",
]


@record
class PublishAccepted(Record):
    """An accepted PUBLISH (every QoS 1/2 one; QoS 0 ones when the broker keeps them).

    ``client_id`` is the publisher ("" for a message the broker makes).
    ``packet_id`` is the publisher's packet identifier (0 when none): a QoS 2
    PublishAccepted opens the inbound flow (client_id, packet_id), closed by
    :class:`PubRelReceived`; until then a PUBLISH with that id is a duplicate.
    """

    TYPE: ClassVar[int] = 1
    topic: str = wire(Kind.TEXT, _TOPIC)
    payload: bytes = wire(Kind.BLOB, "application payload")
    qos: int = wire(Kind.U8, _QOS, default=0, maximum=2)
    retain: bool = wire(Kind.BOOL, "RETAIN flag as published", default=False)
    properties: bytes = wire(Kind.BLOB, _PROPS, default=b"")
    client_id: str = wire(Kind.TEXT, "publisher's client identifier; empty for the broker", default="")
    packet_id: int = wire(Kind.U16, "publisher's packet identifier; 0 for none", default=0)


@record
class RetainedSet(Record):
    """The retained message of ``topic`` is now this one (self-contained copy)."""

    TYPE: ClassVar[int] = 2
    topic: str = wire(Kind.TEXT, _TOPIC)
    payload: bytes = wire(Kind.BLOB, "application payload, not empty")
    qos: int = wire(Kind.U8, _QOS, default=0, maximum=2)
    properties: bytes = wire(Kind.BLOB, _PROPS, default=b"")
    client_id: str = wire(Kind.TEXT, "publisher's client identifier; empty for the broker", default="")


@record
class RetainedCleared(Record):
    """``topic`` has no retained message any more (empty retained PUBLISH)."""

    TYPE: ClassVar[int] = 3
    topic: str = wire(Kind.TEXT, _TOPIC)



class DisconnectCause(IntEnum):
    """Why a connection ended (:attr:`SessionDisconnected.cause`); readers keep unknown values."""

    UNKNOWN = 0
    CLIENT_DISCONNECT = 1  # the client sent DISCONNECT
    CONNECTION_LOST = 2  # socket closed or failed without DISCONNECT
    KEEPALIVE_TIMEOUT = 3
    PROTOCOL_ERROR = 4
    TAKEN_OVER = 5  # the same client id connected again
    SERVER_SHUTDOWN = 6
    ADMINISTRATIVE = 7
    NOT_AUTHORIZED = 8


@record
class SessionConnected(Record):
    """A client connected (CONNACK accepted)."""

    TYPE: ClassVar[int] = 10
    client_id: str = wire(Kind.TEXT, _CLIENT)
    protocol_level: int = wire(Kind.U8, "3 (MQTT 3.1), 4 (3.1.1) or 5", default=4)
    clean_start: bool = wire(Kind.BOOL, "Clean Start / Clean Session flag", default=True)
    session_present: bool = wire(Kind.BOOL, "Session Present sent in CONNACK", default=False)
    expiry_interval: int = wire(
        Kind.U32, "session expiry interval, seconds (0xFFFFFFFF: never)", default=0
    )
    keep_alive: int = wire(Kind.U16, "keep alive granted, seconds", default=0)
    username: str = wire(Kind.TEXT, "user name; empty for none", default="")
    peer: str = wire(Kind.TEXT, "peer address, e.g. 192.0.2.7:51234", default="")


@record
class SessionDisconnected(Record):
    """A client's connection ended; the session lives on if ``expiry_interval`` > 0."""

    TYPE: ClassVar[int] = 11
    client_id: str = wire(Kind.TEXT, _CLIENT)
    cause: int = wire(Kind.U8, "DisconnectCause", default=DisconnectCause.UNKNOWN)
    reason_code: int = wire(Kind.U8, "MQTT reason code received or sent; 0 = normal", default=0)
    expiry_interval: int = wire(Kind.U32, "session expiry interval in force, seconds", default=0)
    reason: str = wire(Kind.TEXT, "human-readable reason", default="")


@record
class Subscribed(Record):
    """A subscription was made or replaced."""

    TYPE: ClassVar[int] = 12
    client_id: str = wire(Kind.TEXT, _CLIENT)
    topic_filter: str = wire(Kind.TEXT, "topic filter, $share/... included")
    options: int = wire(
        Kind.U8,
        "subscription options byte of MQTT 5: bits 0-1 QoS, 2 No Local, 3 Retain As Published, "
        "4-5 Retain Handling",
        default=0,
    )
    subscription_id: int = wire(Kind.U32, "MQTT 5 subscription identifier; 0 for none", default=0)


@record
class Unsubscribed(Record):
    """A subscription was removed."""

    TYPE: ClassVar[int] = 13
    client_id: str = wire(Kind.TEXT, _CLIENT)
    topic_filter: str = wire(Kind.TEXT, "topic filter")


@record
class WillSet(Record):
    """The session has this Will (from CONNECT); replaces any earlier one."""

    TYPE: ClassVar[int] = 14
    client_id: str = wire(Kind.TEXT, _CLIENT)
    topic: str = wire(Kind.TEXT, "will topic")
    payload: bytes = wire(Kind.BLOB, "will payload")
    qos: int = wire(Kind.U8, _QOS, default=0, maximum=2)
    retain: bool = wire(Kind.BOOL, "will RETAIN flag", default=False)
    properties: bytes = wire(Kind.BLOB, "MQTT 5 will properties in their wire encoding", default=b"")
    delay_interval: int = wire(Kind.U32, "will delay interval, seconds", default=0)


@record
class WillCleared(Record):
    """The Will was discarded without being sent (normal DISCONNECT)."""

    TYPE: ClassVar[int] = 15
    client_id: str = wire(Kind.TEXT, _CLIENT)


@record
class WillSent(Record):
    """The Will was published (the message itself is logged as a PublishAccepted record)."""

    TYPE: ClassVar[int] = 16
    client_id: str = wire(Kind.TEXT, _CLIENT)
    topic: str = wire(Kind.TEXT, "will topic")


@record
class SessionExpired(Record):
    """The session expired (or was discarded by a clean start) and its state is gone."""

    TYPE: ClassVar[int] = 17
    client_id: str = wire(Kind.TEXT, _CLIENT)



@record
class CheckpointStarted(Record):
    """Restated records (flags bit 0) follow, up to the matching CheckpointCompleted."""

    TYPE: ClassVar[int] = 30
    checkpoint_id: int = wire(Kind.U64, "number of the checkpoint, increasing")


@record
class CheckpointCompleted(Record):
    """The checkpoint begun at ``started_at`` restated the whole durable state."""

    TYPE: ClassVar[int] = 31
    checkpoint_id: int = wire(Kind.U64, "number of the checkpoint")
    started_at: int = wire(Kind.U64, "log offset of its CheckpointStarted")


#: type code -> record class, for every type this code writes and reads.
RECORD_TYPES: dict[int, type[Record]] = {
    cls.TYPE: cls
    for cls in (
        PublishAccepted, RetainedSet, RetainedCleared,
        SessionConnected, SessionDisconnected, Subscribed, Unsubscribed,
        WillSet, WillCleared, WillSent, SessionExpired,
        SessionQueued, SessionCursor, OutboundSent, OutboundUnsent, SessionDropped,
        PubAckReceived, PubRecReceived, PubCompReceived, PubRelReceived,
        SharedRouted, SharedPending,
        CheckpointStarted, CheckpointCompleted,
    )
}
_CODECS: dict[type[Record], BodyCodec] = {cls: BodyCodec(cls) for cls in RECORD_TYPES.values()}
_BY_CODE: dict[tuple[int, int], BodyCodec] = {
    (cls.TYPE, cls.VERSION): codec for cls, codec in _CODECS.items()
}


def encode_record(record: Record) -> bytes:
    """The frame payload of ``record``: envelope, then body. ValueError if a field does not fit."""
    flags = FLAG_RESTATED if record.restated else 0
    if isinstance(record, UnknownRecord):
        head = _pack_envelope(record.type_code, record.version, flags, record.timestamp_us)
        return head + record.body
    codec = _CODECS.get(type(record))
    if codec is None:
        raise TypeError(f"{type(record).__name__} is not a record type")
    out = bytearray(_pack_envelope(record.TYPE, record.VERSION, flags, record.timestamp_us))
    codec.encode(record, out)
    return bytes(out)


def _pack_envelope(type_code: int, version: int, flags: int, timestamp_us: int) -> bytes:
    try:
        return ENVELOPE.pack(type_code, version, flags, timestamp_us)
    except struct.error as exc:
        raise ValueError(f"record envelope: {exc}") from None


def peek(payload: bytes | memoryview) -> tuple[int, int, int, int]:
    """(type, version, flags, timestamp_us) of a frame payload, without decoding the body."""
    if len(payload) < ENVELOPE.size:
        raise CorruptRecordError(f"record shorter than its {ENVELOPE.size}-byte envelope")
    type_code, version, flags, timestamp_us = ENVELOPE.unpack_from(payload, 0)
    return type_code, version, flags, timestamp_us


def decode_record(payload: bytes | memoryview) -> Record:
    """The record in a frame payload; :class:`UnknownRecord` for an unknown type or version.

    Raises CorruptRecordError when a known record's body cannot be read.
    """
    type_code, version, flags, timestamp_us = peek(payload)
    restated = bool(flags & FLAG_RESTATED)
    codec = _BY_CODE.get((type_code, version))
    if codec is None:
        return UnknownRecord(
            type_code, version, bytes(payload[ENVELOPE.size:]),
            timestamp_us=timestamp_us, restated=restated,
        )
    record: Record = codec.decode(payload, ENVELOPE.size, timestamp_us, restated)
    return record
