"""Pipeline layer: the two tables the data source reads (messages, session events) and their Arrow batches. Imports pyspark.sql.types, pyarrow, numpy and actorbroker.persistence only.

``spark.read.format("actorbroker").load(DATA_DIR)`` gives one row per
accepted PUBLISH (:data:`MESSAGES`); with ``.option("records", "sessions")``
one row per session event (:data:`SESSIONS`). The column tables of
docs/pipeline.md are rendered from these declarations
(:func:`render_schema_tables`; a test fails when the page is stale).

Records restated by a checkpoint are left out (they repeat state, they are
not events) unless the option ``includeRestated`` is true.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    DataType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from actorbroker.persistence.records import (
    DisconnectCause,
    PublishAccepted,
    Record,
    SessionConnected,
    SessionDisconnected,
    SessionExpired,
    SessionQueued,
    Subscribed,
    Unsubscribed,
    WillCleared,
    WillSent,
    WillSet,
)

from .columnar import Decoded, Envelopes, decode
from .logscan import Chunk

__all__ = ["ALL", "MESSAGES", "RECORD_KINDS", "SESSIONS", "SESSION_EVENTS", "Column", "arrow_schema",
           "batches", "check_columns", "render_schema_tables", "spark_schema"]


@dataclass(frozen=True, slots=True)
class Column:
    """One column of a table the data source reads."""

    name: str
    type: DataType
    doc: str


_LONG, _INT, _BOOL, _TEXT = LongType(), IntegerType(), BooleanType(), StringType()

MESSAGES: tuple[Column, ...] = (
    Column("offset", _LONG, "log offset of the record: unique, increasing, the order of the log"),
    Column("timestamp", TimestampType(), "when the broker accepted the PUBLISH (UTC)"),
    Column("topic", _TEXT, "topic name"),
    Column("client_id", _TEXT, "publisher's client identifier; empty for the broker (wills "
                              "are logged with the client's id)"),
    Column("qos", _INT, "QoS 0, 1 or 2 as published"),
    Column("retain", _BOOL, "RETAIN flag as published"),
    Column("packet_id", _INT, "publisher's packet identifier; 0 for QoS 0"),
    Column("payload", BinaryType(), "application payload"),
    Column("payload_size", _INT, "payload length in bytes"),
    Column("properties", BinaryType(), "MQTT 5 properties in their wire encoding; empty for none"),
)

SESSIONS: tuple[Column, ...] = (
    Column("offset", _LONG, "log offset of the record"),
    Column("timestamp", TimestampType(), "when it happened (UTC)"),
    Column("event", _TEXT, "connected, disconnected, subscribed, unsubscribed, will_set, "
                          "will_cleared, will_sent, expired or queued"),
    Column("client_id", _TEXT, "client identifier of the session"),
    Column("protocol_level", _INT, "connected: 3 (MQTT 3.1), 4 (3.1.1) or 5"),
    Column("clean_start", _BOOL, "connected: Clean Start / Clean Session flag"),
    Column("session_present", _BOOL, "connected: Session Present sent in CONNACK"),
    Column("expiry_interval", _LONG, "connected, disconnected: session expiry interval, seconds"),
    Column("keep_alive", _INT, "connected: keep alive granted, seconds"),
    Column("username", _TEXT, "connected: user name; empty for none"),
    Column("peer", _TEXT, "connected: peer address"),
    Column("cause", _TEXT, "disconnected: client_disconnect, connection_lost, "
                          "keepalive_timeout, protocol_error, taken_over, server_shutdown, "
                          "administrative, not_authorized or unknown"),
    Column("reason_code", _INT, "disconnected: MQTT reason code; 0 = normal"),
    Column("reason", _TEXT, "disconnected: human-readable reason"),
    Column("topic_filter", _TEXT, "subscribed, unsubscribed: topic filter"),
    Column("subscription_id", _LONG, "subscribed: MQTT 5 subscription identifier; 0 for none"),
    Column("topic", _TEXT, "will_set, will_sent: will topic"),
    Column("qos", _INT, "subscribed: maximum QoS; will_set: will QoS; queued: delivery QoS"),
    Column("retain", _BOOL, "will_set: will RETAIN flag; queued: RETAIN flag to send"),
    Column("message_offset", _LONG, "queued: log offset of the queued message"),
)

#: Session event records and their ``event`` names.
SESSION_EVENTS: dict[type[Record], str] = {
    SessionConnected: "connected", SessionDisconnected: "disconnected",
    Subscribed: "subscribed", Unsubscribed: "unsubscribed", WillSet: "will_set",
    WillCleared: "will_cleared", WillSent: "will_sent", SessionExpired: "expired",
    SessionQueued: "queued",
}
#: Record field name -> column name, where they differ.
_RENAMED = {"offset": "message_offset"}
#: ``records=all``: messages (``event`` = "publish") and session events in one table.
_SHARED = {"topic": "publish: topic name; will_set, will_sent: will topic",
           "qos": "publish: QoS as published; others as in sessions",
           "retain": "publish: RETAIN flag as published; others as in sessions",
           "timestamp": "when it happened (UTC)", "offset": MESSAGES[0].doc,
           "client_id": "publisher's, or the session's, client identifier"}
ALL: tuple[Column, ...] = (
    *(Column(c.name, c.type, _SHARED[c.name]) for c in MESSAGES[:2]),
    Column("event", _TEXT, "publish for a message, else the session event (as in sessions)"),
    *(Column(c.name, c.type, _SHARED.get(c.name, c.doc)) for c in MESSAGES[2:]),
    *(c for c in SESSIONS if c.name not in {m.name for m in MESSAGES} | {"event"}),
)
#: Values of the ``records`` option -> columns.
RECORD_KINDS: dict[str, tuple[Column, ...]] = {"messages": MESSAGES, "sessions": SESSIONS,
                                                "all": ALL}
_CAUSES = np.array(["unknown"] + [f"cause_{n}" for n in range(1, 256)], dtype=object)
for _cause in DisconnectCause:
    _CAUSES[_cause.value] = _cause.name.lower()


def check_columns(kind: str, names: tuple[str, ...]) -> tuple[str, ...]:
    """``names`` if they are columns of ``kind`` (the ``columns`` option); ValueError if not."""
    known = [c.name for c in RECORD_KINDS[kind]]
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise ValueError(f"columns {unknown or '(none)'} are not columns of records={kind} "
                         f"({', '.join(known)})")
    return names


def _columns(kind: str, names: tuple[str, ...] | None) -> list[Column]:
    columns = RECORD_KINDS[kind]
    if names is None:
        return list(columns)
    by_name = {c.name: c for c in columns}
    return [by_name[n] for n in names]


def spark_schema(kind: str, names: tuple[str, ...] | None = None) -> StructType:
    """The Spark schema of the ``records`` kind (``messages``, ``sessions`` or ``all``),
    or of its columns ``names`` (the ``columns`` option), in that order."""
    return StructType([StructField(c.name, c.type, True) for c in _columns(kind, names)])


@functools.lru_cache(maxsize=64)
def arrow_schema(kind: str, names: tuple[str, ...] | None = None) -> pa.Schema:
    """The Arrow schema Spark expects for ``spark_schema(kind, names)`` (timestamps in UTC)."""
    arrow = {LongType: pa.int64(), IntegerType: pa.int32(), BooleanType: pa.bool_(),
             StringType: pa.string(), BinaryType: pa.binary(),
             TimestampType: pa.timestamp("us", tz="UTC")}
    return pa.schema([pa.field(c.name, arrow[type(c.type)]) for c in _columns(kind, names)])


def batches(kind: str, chunk: Chunk, *, include_restated: bool = False,
            columns: tuple[str, ...] | None = None) -> Iterator[pa.RecordBatch]:
    """The rows of ``chunk`` for the ``records`` kind (only ``columns``, if given), as Arrow
    batches; none when there are no rows."""
    schema = arrow_schema(kind, columns)
    envelopes = Envelopes.of(chunk)
    if kind in ("messages", "all"):
        decoded = decode(chunk, PublishAccepted, envelopes=envelopes, include_restated=include_restated)
        if len(decoded):
            yield _message_batch(schema, decoded)
    if kind in ("sessions", "all"):
        for cls, event in SESSION_EVENTS.items():
            decoded = decode(chunk, cls, envelopes=envelopes, include_restated=include_restated)
            if len(decoded):
                yield _session_batch(schema, cls, event, decoded)


def _common(decoded: Decoded) -> dict[str, pa.Array]:
    return {"offset": pa.array(decoded.offset, pa.int64()),
            "timestamp": pa.array(decoded.timestamp_us, pa.timestamp("us", tz="UTC"))}


def _assemble(schema: pa.Schema, values: dict[str, pa.Array], rows: int) -> pa.RecordBatch:
    arrays = []
    for field in schema:
        value = values.get(field.name)
        if isinstance(value, np.ndarray):
            value = pa.array(value)
        arrays.append(pa.nulls(rows, field.type) if value is None else value.cast(field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _message_batch(schema: pa.Schema, decoded: Decoded) -> pa.RecordBatch:
    values = {**_common(decoded), **decoded.columns}
    values["payload_size"] = pc.binary_length(decoded.columns["payload"])
    values["event"] = pa.array(["publish"] * len(decoded), pa.string())
    return _assemble(schema, values, len(decoded))


def _session_batch(schema: pa.Schema, cls: type[Record], event: str,
                   decoded: Decoded) -> pa.RecordBatch:
    values = _common(decoded)
    values["event"] = pa.array([event] * len(decoded), pa.string())
    for name, column in decoded.columns.items():
        values[_RENAMED.get(name, name)] = column
    if cls is SessionDisconnected:
        codes = np.asarray(decoded.columns["cause"], dtype=np.int64)
        values["cause"] = pa.array(_CAUSES[codes].tolist(), pa.string())
    if cls is Subscribed:
        values["qos"] = pa.array(np.asarray(decoded.columns["options"], dtype=np.int64) & 3)
    known = {c.name for c in SESSIONS}
    return _assemble(schema, {k: v for k, v in values.items() if k in known}, len(decoded))


def render_schema_tables() -> str:
    """The column tables of docs/pipeline.md (Markdown)."""
    out = []
    for kind, columns in RECORD_KINDS.items():
        out += [f"#### `records={kind}`", "", "| column | type | meaning |", "| --- | --- | --- |"]
        out += [f"| `{c.name}` | {c.type.simpleString()} | {c.doc} |" for c in columns]
        out.append("")
    return "\n".join(out).rstrip() + "\n"
