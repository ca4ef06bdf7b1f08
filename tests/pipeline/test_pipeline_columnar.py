"""Records to Arrow columns, without Spark: the vectorised decoder agrees with decode_record."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from pipeline_testkit import SCENARIO_EVENTS, SCENARIO_MESSAGES, at, scenario

from actorbroker.persistence.records import (
    DisconnectCause,
    PublishAccepted,
    SessionDisconnected,
    Subscribed,
    WillSet,
    encode_record,
)
from actorbroker.persistence.segment import encode_frame
from actorbroker.pipeline.columnar import decode
from actorbroker.pipeline.logscan import Chunk
from actorbroker.pipeline.schema import arrow_schema, batches


def chunk_of(payloads: list[bytes], offset: int = 1000) -> Chunk:
    frames = [encode_frame(p) for p in payloads]
    starts = np.cumsum([0] + [len(f) for f in frames[:-1]]).astype(np.int64)
    lengths = np.array([len(p) for p in payloads], np.int64)
    return Chunk(b"".join(frames), offset, starts, lengths)


def rows(kind: str, chunk: Chunk, **options: bool) -> list[dict[str, object]]:
    found = list(batches(kind, chunk, **options))
    for batch in found:
        assert batch.schema.equals(arrow_schema(kind))
    return pa.Table.from_batches(found, arrow_schema(kind)).sort_by("offset").to_pylist()


def test_publish_columns_match_the_records() -> None:
    records = [r for r in scenario() if isinstance(r, PublishAccepted) and not r.restated]
    payloads = [encode_record(r) for r in records]
    got = rows("messages", chunk_of(payloads))
    assert len(got) == SCENARIO_MESSAGES == len(records)
    position = 1000
    for row, record, payload in zip(got, records, payloads, strict=True):
        assert row["offset"] == position
        position += 8 + len(payload)
        assert int(row["timestamp"].timestamp() * 1_000_000) == record.timestamp_us
        assert (row["topic"], row["client_id"], row["qos"], row["retain"], row["packet_id"]) == (
            record.topic, record.client_id, record.qos, record.retain, record.packet_id)
        assert (row["payload"], row["payload_size"], row["properties"]) == (
            record.payload, len(record.payload), record.properties)


def test_session_events_and_the_all_table() -> None:
    payloads = [encode_record(r) for r in scenario()]
    events = rows("sessions", chunk_of(payloads))
    assert len(events) == SCENARIO_EVENTS
    assert [e["event"] for e in events][:4] == ["connected", "connected", "disconnected", "queued"]
    gone = events[2]
    assert (gone["client_id"], gone["cause"], gone["expiry_interval"]) == (
        "dev-2", "connection_lost", 3600)
    subscribed = next(e for e in events if e["event"] == "subscribed")
    assert (subscribed["topic_filter"], subscribed["qos"]) == ("home/#", 1)
    assert all(e["client_id"] != "dev-9" for e in events)  # restated: left out
    everything = rows("all", chunk_of(payloads))
    assert len(everything) == SCENARIO_EVENTS + SCENARIO_MESSAGES
    assert sum(r["event"] == "publish" for r in everything) == SCENARIO_MESSAGES
    with_restated = rows("all", chunk_of(payloads), include_restated=True)
    assert len(with_restated) == len(everything) + 2


def test_unknown_causes_and_will_fields() -> None:
    payloads = [
        encode_record(SessionDisconnected("c", cause=200, reason="odd", timestamp_us=at(1))),
        encode_record(SessionDisconnected("c", cause=DisconnectCause.TAKEN_OVER, reason_code=0x8E,
                                          timestamp_us=at(2))),
        encode_record(WillSet("c", "last/will", b"bye", qos=2, retain=True, timestamp_us=at(3))),
    ]
    got = rows("sessions", chunk_of(payloads))
    assert [(r["cause"], r["reason_code"], r["reason"]) for r in got[:2]] == [
        ("cause_200", 0, "odd"), ("taken_over", 0x8E, "")]
    assert (got[2]["event"], got[2]["topic"], got[2]["qos"], got[2]["retain"]) == (
        "will_set", "last/will", 2, True)


def test_damaged_bodies_are_dropped_alone() -> None:
    good = [PublishAccepted(f"t/{i}", b"x" * i, qos=1, client_id="c", timestamp_us=at(i)) for i in range(5)]
    payloads = [encode_record(r) for r in good]
    bad_utf8 = bytearray(payloads[1])
    bad_utf8[bad_utf8.index(b"t/1")] = 0xFF  # the topic is no longer UTF-8
    short = payloads[3][:-4]  # the body ends inside the client id
    too_big = bytearray(encode_record(Subscribed("c", "f", options=1, timestamp_us=at(9))))
    payloads = [payloads[0], bytes(bad_utf8), payloads[2], short, payloads[4]]
    chunk = chunk_of(payloads)
    decoded = decode(chunk, PublishAccepted)
    assert decoded.bad == 2
    assert [r["topic"] for r in rows("messages", chunk)] == ["t/0", "t/2", "t/4"]
    too_big[12] = 0xFF  # not a QoS field: options byte is free-form, still decodes
    assert len(decode(chunk_of([bytes(too_big)]), Subscribed)) == 1


def test_a_qos_above_two_is_damage() -> None:
    payload = bytearray(encode_record(PublishAccepted("t", b"x", qos=1, timestamp_us=at(0))))
    payload[12] = 3  # qos is the first body byte
    assert decode(chunk_of([bytes(payload)]), PublishAccepted).bad == 1


@pytest.mark.parametrize("size", [0, 1, 70_000])
def test_payload_sizes(size: int) -> None:
    record = PublishAccepted("t", bytes(range(256)) * (size // 256) + b"z" * (size % 256), qos=0,
                     timestamp_us=at(0))
    got = rows("messages", chunk_of([encode_record(record)] * 3))
    assert [r["payload"] for r in got] == [record.payload] * 3
