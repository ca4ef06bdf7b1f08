"""The stream decoder: splits, protocol level learning, poisoning, memory bounds."""

from __future__ import annotations

import pytest

from actorbroker.codec import (
    ConnAck,
    Connect,
    Decoder,
    Disconnect,
    MalformedPacketError,
    PacketTooLargeError,
    PingReq,
    Properties,
    ProtocolError,
    PubAck,
    Publish,
    ReasonCode,
    Subscribe,
    Subscription,
    encode,
)

from .test_codec_vectors import CANONICAL, h

STREAM_V5 = [
    Connect("MQTT", 5, "client", True, 30, properties=Properties(receive_maximum=10)),
    Publish("a/b", b"x" * 300, qos=1, packet_id=1, properties=Properties(topic_alias=1)),
    Publish("", b"short", properties=Properties(topic_alias=1)),
    Subscribe(2, (Subscription("a/#", 2, no_local=True),)),
    PubAck(7, ReasonCode.NO_MATCHING_SUBSCRIBERS),
    PingReq(),
    Disconnect(ReasonCode.DISCONNECT_WITH_WILL_MESSAGE),
]
WIRE_V5 = b"".join(encode(p, 5) for p in STREAM_V5)


def test_every_split_point_gives_the_same_packets() -> None:
    for cut in range(len(WIRE_V5) + 1):
        decoder = Decoder()
        got = decoder.feed(WIRE_V5[:cut]) + decoder.feed(WIRE_V5[cut:])
        assert got == STREAM_V5, cut
        assert decoder.buffered == 0


def test_byte_at_a_time() -> None:
    decoder = Decoder()
    got = []
    for i in range(len(WIRE_V5)):
        got += decoder.feed(WIRE_V5[i:i + 1])
    assert got == STREAM_V5


def test_all_canonical_vectors_concatenated_and_fed_in_three_byte_chunks() -> None:
    for level in (3, 4, 5):
        packets = [p for lv, _, p in (c.values for c in CANONICAL) if lv == level]
        wire = b"".join(w for lv, w, _ in (c.values for c in CANONICAL) if lv == level)
        decoder = Decoder(level)
        got = []
        for i in range(0, len(wire), 3):
            got += decoder.feed(wire[i:i + 3])
        assert got == packets


def test_empty_feed_is_harmless() -> None:
    decoder = Decoder(4)
    assert decoder.feed(b"") == []
    assert decoder.feed(h("c0")) == []
    assert decoder.feed(b"") == []
    assert decoder.feed(h("00")) == [PingReq()]


def test_accepts_bytearray_and_memoryview() -> None:
    wire = encode(Publish("t", b"p"), 4)
    assert Decoder(4).feed(bytearray(wire)) == [Publish("t", b"p")]
    assert Decoder(4).feed(memoryview(wire)) == [Publish("t", b"p")]  # type: ignore[arg-type]


@pytest.mark.parametrize(("name", "level"), [("MQIsdp", 3), ("MQTT", 4), ("MQTT", 5)])
def test_server_side_learns_the_level_from_connect(name: str, level: int) -> None:
    decoder = Decoder()
    assert decoder.protocol_level is None
    connect = Connect(name, level, "c", True, 0)
    # The CONNECT and a PUBLISH in one read: the PUBLISH is decoded at the learnt level.
    publish = Publish("t", b"p", qos=1, packet_id=3)
    assert decoder.feed(encode(connect, level) + encode(publish, level)) == [connect, publish]
    assert decoder.protocol_level == level


def test_server_side_refuses_anything_before_connect_from_its_first_byte() -> None:
    decoder = Decoder()
    with pytest.raises(ProtocolError) as info:
        decoder.feed(h("30"))
    assert type(info.value) is ProtocolError
    assert "[MQTT-3.1.0-1]" in str(info.value)
    assert info.value.reason_code == ReasonCode.PROTOCOL_ERROR


def test_server_side_refuses_a_second_connect() -> None:
    connect = encode(Connect("MQTT", 4, "c", True, 0), 4)
    decoder = Decoder()
    decoder.feed(connect)
    with pytest.raises(ProtocolError, match=r"\[MQTT-3\.1\.0-2\]"):
        decoder.feed(connect)


def test_second_connect_in_the_same_read() -> None:
    connect = encode(Connect("MQTT", 5, "c", True, 0), 5)
    with pytest.raises(ProtocolError, match=r"\[MQTT-3\.1\.0-2\]"):
        Decoder().feed(connect + connect)


def test_client_side_decodes_server_packets_without_connect() -> None:
    decoder = Decoder(5)
    assert decoder.feed(encode(ConnAck(True, 0), 5)) == [ConnAck(True, ReasonCode.SUCCESS)]


def test_client_side_still_decodes_a_connect_at_its_own_level() -> None:
    connect = Connect("MQIsdp", 3, "c", True, 0)
    decoder = Decoder(5)
    assert decoder.feed(encode(connect, 3)) == [connect]
    assert decoder.protocol_level == 5


def test_poisoned_after_an_error() -> None:
    decoder = Decoder(4)
    with pytest.raises(MalformedPacketError):
        decoder.feed(h("36 05 00 01 'a' 00 01"))
    assert decoder.buffered == 0
    for _ in range(2):
        with pytest.raises(MalformedPacketError) as info:
            decoder.feed(encode(PingReq(), 4))
        assert "decoder already failed" in str(info.value)
        assert "[MQTT-3.3.1-4]" in str(info.value)
        assert info.value.reason_code == ReasonCode.MALFORMED_PACKET


def test_poisoned_keeps_the_error_kind() -> None:
    decoder = Decoder(4, max_packet_size=5)
    with pytest.raises(PacketTooLargeError):
        decoder.feed(encode(Publish("topic", b"payload"), 4))
    with pytest.raises(PacketTooLargeError) as info:
        decoder.feed(b"")
    assert info.value.reason_code == ReasonCode.PACKET_TOO_LARGE


def test_packets_before_the_bad_one_are_lost_with_the_connection() -> None:
    # feed() raises rather than returning a partial list: the connection is closing.
    with pytest.raises(MalformedPacketError):
        Decoder(4).feed(encode(PingReq(), 4) + h("c0 01 00"))


def test_buffer_holds_at_most_one_packet() -> None:
    big = encode(Publish("t", b"z" * 5000), 4)
    decoder = Decoder(4, max_packet_size=len(big))
    got = []
    for i in range(0, len(big) * 3, 777):
        got += decoder.feed((big * 3)[i:i + 777])
        assert decoder.buffered <= len(big)
    assert got == [Publish("t", b"z" * 5000)] * 3
    assert decoder.buffered == 0


def test_large_packet_in_small_chunks_is_linear() -> None:
    payload = bytes(range(256)) * 4096  # 1 MiB
    wire = encode(Publish("t", payload), 4)
    decoder = Decoder(4)
    got = []
    for i in range(0, len(wire), 1024):
        got += decoder.feed(wire[i:i + 1024])
    assert got == [Publish("t", payload)]


def test_constructor_arguments() -> None:
    with pytest.raises(ValueError):
        Decoder(6)
    with pytest.raises(ValueError):
        Decoder(4, max_packet_size=1)
    assert Decoder(4).max_packet_size == 268_435_460
    assert Decoder(4, max_packet_size=10**12).max_packet_size == 268_435_460


def test_errors_pickle_with_their_reason_code() -> None:
    import pickle

    err = pickle.loads(pickle.dumps(PacketTooLargeError("[MQTT-3.2.2-15] too big")))
    assert type(err) is PacketTooLargeError and err.reason_code == 0x95
    err2 = pickle.loads(pickle.dumps(ProtocolError("x", ReasonCode.TOPIC_NAME_INVALID)))
    assert err2.reason_code is ReasonCode.TOPIC_NAME_INVALID
