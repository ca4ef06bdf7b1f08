"""The decoder is total: any bytes, any split -> packets or a ProtocolError, nothing else.

Also: bounded time per input (hypothesis deadline), the buffer never holds
more than one packet (at most ``max_packet_size`` bytes, fixed header
included), and a failed decoder stays failed.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actorbroker.codec import Decoder, Packet, ProtocolError, encode

from .test_codec_roundtrip import server_streams

PACKET_TYPES = (
    "Connect", "ConnAck", "Publish", "PubAck", "PubRec", "PubRel", "PubComp", "Subscribe",
    "SubAck", "Unsubscribe", "UnsubAck", "PingReq", "PingResp", "Disconnect", "Auth",
)
decoder_args = st.tuples(st.sampled_from([None, 3, 4, 5]),
                         st.sampled_from([None, 2, 5, 16, 100, 1000]))


def _feed_all(decoder: Decoder, wire: bytes, cuts: list[int]) -> None:
    """Feed ``wire`` in the pieces ``cuts`` make; check the contract at each step."""
    failed = False
    limit = decoder.max_packet_size
    for start, stop in zip([0, *cuts], [*cuts, len(wire)], strict=True):
        try:
            out = decoder.feed(wire[start:stop])
        except ProtocolError as exc:
            # Only ProtocolError (and subclasses) escape; anything else fails the test.
            assert 0x80 <= exc.reason_code <= 0xA2
            assert str(exc)
            failed = True
            continue
        assert not failed, "a failed decoder must keep failing"
        assert isinstance(out, list)
        assert all(type(p).__name__ in PACKET_TYPES for p in out)
        assert decoder.buffered <= limit


@settings(max_examples=3000, deadline=500, suppress_health_check=[HealthCheck.too_slow])
@given(decoder_args, st.binary(max_size=600), st.data())
def test_arbitrary_bytes(args: tuple[int | None, int | None], wire: bytes, data: Any) -> None:
    cuts = sorted(data.draw(st.lists(st.integers(0, len(wire)), max_size=8)))
    _feed_all(Decoder(*args), wire, cuts)


@st.composite
def mutated_streams(draw: Any) -> tuple[int, bytes]:
    """A valid client stream with a few bytes flipped, inserted or deleted: reaches deep code."""
    level, stream = draw(server_streams())
    wire = bytearray(b"".join(encode(p, level) for p in stream))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, max(len(wire) - 1, 0)))
        action = draw(st.sampled_from(["flip", "set", "insert", "delete"]))
        if action == "flip" and wire:
            wire[at] ^= 1 << draw(st.integers(0, 7))
        elif action == "set" and wire:
            wire[at] = draw(st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xFF, 0x2B, 0x23]))
        elif action == "insert":
            wire[at:at] = draw(st.binary(min_size=1, max_size=3))
        elif wire:
            del wire[at]
    return level, bytes(wire)


@settings(max_examples=600, deadline=500, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_streams(), st.sampled_from([None, 64, 4096]), st.data())
def test_mutated_valid_streams(case: tuple[int, bytes], max_size: int | None, data: Any) -> None:
    level, wire = case
    cuts = sorted(data.draw(st.lists(st.integers(0, len(wire)), max_size=6)))
    _feed_all(Decoder(None, max_size), wire, cuts)
    _feed_all(Decoder(level, max_size), wire, cuts)


@settings(max_examples=1000, deadline=500)
@given(decoder_args, st.binary(max_size=300), st.binary(max_size=300))
def test_split_does_not_change_the_outcome(args: tuple[int | None, int | None], a: bytes,
                                           b: bytes) -> None:
    """Fed whole or in two pieces, the same bytes give the same packets or the same error."""

    def run(pieces: list[bytes]) -> tuple[list[Packet], type[ProtocolError] | None]:
        decoder = Decoder(*args)
        got: list[Packet] = []
        try:
            for piece in pieces:
                got += decoder.feed(piece)
        except ProtocolError as exc:
            return got, type(exc)
        return got, None

    whole_packets, whole_error = run([a + b])
    split_packets, split_error = run([a, b])
    assert whole_error == split_error
    if whole_error is None:
        assert whole_packets == split_packets


def test_huge_announced_length_is_refused_without_buffering() -> None:
    decoder = Decoder(4, max_packet_size=1 << 20)
    try:
        decoder.feed(b"\x30\xff\xff\xff\x7f" + b"x" * 1000)
    except ProtocolError as exc:
        assert exc.reason_code == 0x95
    else:
        raise AssertionError("a 256 MiB packet was accepted with a 1 MiB limit")
    assert decoder.buffered == 0
