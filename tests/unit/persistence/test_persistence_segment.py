"""Frames and segment headers: what a scan yields and why it stops."""

from __future__ import annotations

import struct
import zlib

import pytest

from actorbroker.persistence.records import PublishAccepted, encode_record
from actorbroker.persistence.segment import (
    FRAME,
    HEADER,
    MAX_PAYLOAD,
    MIN_PAYLOAD,
    FrameScan,
    Stop,
    check_header,
    encode_frame,
    encode_header,
    memory_reader,
    parse_segment_name,
    segment_name,
)

PAYLOADS = [encode_record(PublishAccepted(f"t/{i}", b"p" * i, timestamp_us=i)) for i in range(5)]
STREAM = b"".join(encode_frame(p) for p in PAYLOADS)
STARTS = [sum(FRAME.size + len(p) for p in PAYLOADS[:i]) for i in range(len(PAYLOADS) + 1)]


def scan(
    data: bytes, start: int = 0, limit: int | None = None,
) -> tuple[list[tuple[int, bytes]], FrameScan]:
    found = FrameScan(memory_reader(data), start, len(data) if limit is None else limit)
    return list(found), found


def test_frame_layout_is_length_crc_payload_with_crc_over_length_and_payload() -> None:
    payload = PAYLOADS[0]
    frame = encode_frame(payload)
    length, crc = struct.unpack(">II", frame[:8])
    assert length == len(payload) and frame[8:] == payload
    assert crc == zlib.crc32(frame[:4] + payload)


def test_a_clean_scan_yields_every_frame_with_its_position() -> None:
    frames, found = scan(STREAM)
    assert frames == list(zip(STARTS, PAYLOADS))
    assert found.end is not None and found.end.clean and found.end.position == len(STREAM)


def test_scan_from_a_frame_boundary_and_up_to_a_limit() -> None:
    frames, found = scan(STREAM, STARTS[2], STARTS[4])
    assert [p for _, p in frames] == PAYLOADS[2:4]
    assert found.end is not None and found.end.clean


@pytest.mark.parametrize("cut", range(STARTS[-2], STARTS[-1]))
def test_torn_at_every_byte_of_the_last_frame(cut: int) -> None:
    frames, found = scan(STREAM[:cut])
    assert [p for _, p in frames] == PAYLOADS[:-1]
    assert found.end is not None
    assert found.end.stop is (Stop.END if cut == STARTS[-2] else Stop.INCOMPLETE)
    assert found.end.position == STARTS[-2]


def test_a_limit_inside_a_frame_stops_before_it() -> None:
    frames, found = scan(STREAM, 0, STARTS[3] + 3)
    assert len(frames) == 3
    assert found.end is not None and found.end.stop is Stop.INCOMPLETE


@pytest.mark.parametrize("byte", range(STARTS[2], STARTS[3]))
def test_a_bit_flip_anywhere_in_a_frame_stops_the_scan_there(byte: int) -> None:
    damaged = bytearray(STREAM)
    damaged[byte] ^= 0x10
    frames, found = scan(bytes(damaged))
    assert [p for _, p in frames] == PAYLOADS[:2]
    assert found.end is not None and found.end.position == STARTS[2]
    assert found.end.stop in (Stop.BAD_CRC, Stop.BAD_LENGTH, Stop.INCOMPLETE)


def test_lengths_outside_the_bounds_are_bad_lengths() -> None:
    for length in (0, MIN_PAYLOAD - 1, MAX_PAYLOAD + 1):
        _, found = scan(struct.pack(">II", length, 0) + bytes(64))
        assert found.end is not None and found.end.stop is Stop.BAD_LENGTH
    with pytest.raises(ValueError):
        encode_frame(b"short")


def test_zeros_are_a_bad_length_not_a_record() -> None:
    frames, found = scan(STREAM + bytes(4096))
    assert len(frames) == len(PAYLOADS)
    assert found.end is not None and found.end.stop is Stop.BAD_LENGTH


def test_a_frame_larger_than_the_read_chunk() -> None:
    big = encode_record(PublishAccepted("big", b"x" * (3 << 20), timestamp_us=0))
    data = encode_frame(big) + encode_frame(PAYLOADS[1])
    frames, found = scan(data)
    assert [p for _, p in frames] == [big, PAYLOADS[1]]
    assert found.end is not None and found.end.clean


def test_segment_names() -> None:
    assert segment_name(0) == "00000000000000000000.log"
    assert segment_name(67_108_864) == "00000000000067108864.log"
    assert parse_segment_name("00000000000067108864.log") == 67_108_864
    for other in ("committed", "lock", "0.log", "00000000000000000000.log.salvage", "x" * 20 + ".log"):
        assert parse_segment_name(other) is None


def test_segment_header() -> None:
    header = encode_header(4096)
    assert len(header) == HEADER.size == 16
    assert header == b"ABLG\x01\x00\x00\x10" + (4096).to_bytes(8, "big")
    assert check_header(header, 4096) is None
    assert "base" in (check_header(header, 0) or "")
    assert "magic" in (check_header(b"XXXX" + header[4:], 4096) or "")
    assert "format" in (check_header(header[:4] + b"\x02" + header[5:], 4096) or "")
    assert "bytes" in (check_header(header[:10], 4096) or "")
