"""The journal's mapping: session events to records and back, the wire form of MQTT 5 properties."""

from __future__ import annotations

from actorbroker.codec import (
    NO_PROPERTIES,
    Connect,
    Properties,
    PubAck,
    PubComp,
    Publish,
    PubRec,
    PubRel,
    Subscription,
    Will,
)
from actorbroker.durable.journal import (
    ack_records,
    connected_record,
    message_of,
    publish_record,
    sent_records,
    subscription_of,
    options_of,
    will_of,
    will_record,
)
from actorbroker.persistence.records import (
    OutboundSent,
    PubAckReceived,
    PubCompReceived,
    PubRecReceived,
    PubRelReceived,
    RetainedSet,
    decode_record,
    encode_record,
)
from actorbroker.session import AppMessage, Delivery

TS = 1_700_000_000_000_000


def roundtrip(record: object) -> object:
    return decode_record(encode_record(record))  # type: ignore[arg-type]


def test_a_message_survives_the_log_with_its_properties_and_expiry_clock() -> None:
    props = Properties(message_expiry_interval=60, content_type="text/plain",
                       user_property=(("k", "v"),), correlation_data=b"\x01")
    message = AppMessage("t/x", b"payload", 2, True, props, "pub", 100.0)
    record = roundtrip(publish_record(message, 9, TS))
    back = message_of(record, 4242, now=1000.0, wall=TS / 1e6 + 10)  # type: ignore[arg-type]
    assert back is not None
    assert (back.topic, back.payload, back.qos, back.retain, back.properties, back.publisher,
            back.log_offset) == ("t/x", b"payload", 2, True, props, "pub", 4242)
    assert back.received_at == 990.0, "10 s of wall-clock age, on the monotonic clock"
    assert record.packet_id == 9  # type: ignore[attr-defined]


def test_a_v3_message_stores_no_properties_and_a_retained_copy_reads_back_retained() -> None:
    record = publish_record(AppMessage("a", b"", 1, publisher=None), None, TS)
    assert record.properties == b"" and record.client_id == "" and record.packet_id == 0
    copy = RetainedSet("r", b"v", 1, b"", "p", timestamp_us=TS)
    message = message_of(copy, 8, now=5.0, wall=TS / 1e6)
    assert message is not None and message.retain and message.properties is NO_PROPERTIES


def test_subscription_options_byte() -> None:
    sub = Subscription("f", 2, no_local=True, retain_as_published=True, retain_handling=2)
    assert options_of(sub) == 0x2E and subscription_of("f", 0x2E) == sub
    assert options_of(Subscription("g", 1)) == 1


def test_connect_and_will_records() -> None:
    will = Will("w/t", b"bye", 1, True, Properties(will_delay_interval=5))
    connect = Connect("MQTT", 5, "c", False, 30, "user", will=will)
    record = roundtrip(connected_record("c", connect, expiry=300, present=True, peer="h:1", ts=TS))
    assert (record.client_id, record.protocol_level, record.clean_start,  # type: ignore[attr-defined]
            record.session_present, record.expiry_interval, record.keep_alive,  # type: ignore[attr-defined]
            record.username, record.peer) == ("c", 5, False, True, 300, 30, "user", "h:1")  # type: ignore[attr-defined]
    set_ = roundtrip(will_record("c", will, 5, TS))
    assert will_of(set_) == will and set_.delay_interval == 5  # type: ignore[arg-type,attr-defined]


def test_acks_from_the_client() -> None:
    assert ack_records("c", PubAck(3), TS) == PubAckReceived("c", 3, timestamp_us=TS)
    assert ack_records("c", PubRec(4), TS) == PubRecReceived("c", 4, timestamp_us=TS)
    assert ack_records("c", PubRec(4, 0x80), TS) == PubCompReceived("c", 4, timestamp_us=TS)
    assert ack_records("c", PubComp(5), TS) == PubCompReceived("c", 5, timestamp_us=TS)
    assert ack_records("c", PubRel(6), TS) == PubRelReceived("c", 6, timestamp_us=TS)
    assert ack_records("c", Publish("t", b""), TS) is None


def test_first_sends_of_logged_messages_are_journaled_resends_are_not() -> None:
    logged = Delivery(AppMessage("t", b"1", 1, log_offset=700), 1)
    unlogged = Delivery(AppMessage("t", b"2", 1), 1)
    flights = {1: (logged, None), 2: (unlogged, None), 3: (logged, None)}
    packets = [Publish("t", b"1", 1, False, False, 1), Publish("t", b"2", 1, False, False, 2),
               Publish("t", b"1", 1, False, True, 3), Publish("t", b"q0", 0), PubRel(9)]
    assert sent_records("c", packets, lambda: flights, TS) == [
        OutboundSent("c", 1, 700, 1, False, (), timestamp_us=TS)]
