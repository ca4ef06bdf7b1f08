"""The fuzzer's own parts: framed body mutations stay framed, and the mirror decoder's predictions.

``mutate_body`` must leave a packet whose Remaining Length covers its body
exactly (else it is just another framing mutation), and ``_predict`` must
not call "taken" an input whose PINGREQ is eaten by the packet before it
(the fuzzer would wait for a PINGRESP that never comes).
"""

from __future__ import annotations

import random

from actorbroker.codec import Decoder, PingReq, encode
from bench.fuzz_inputs import encoded, mutate_body
from bench.fuzz_session import _predict

_PING = encode(PingReq(), 4)


def _remaining_length(data: bytes) -> tuple[int, int]:
    """The Remaining Length of ``data`` and where the body starts."""
    length, at = 0, 1
    for shift in (0, 7, 14, 21):
        length |= (data[at] & 0x7F) << shift
        at += 1
        if data[at - 1] < 0x80:
            break
    return length, at


def _connected_mirror() -> Decoder:
    mirror = Decoder(max_packet_size=1 << 20, max_connect_size=1 << 16)
    mirror.feed(b"\x10\x0c\x00\x04MQTT\x04\x02\x00\x1e\x00\x00")
    return mirror


def test_body_mutations_keep_the_remaining_length_right() -> None:
    rng = random.Random(5)
    for _ in range(2000):
        level = rng.choice((3, 4, 5))
        data = mutate_body(rng, encoded(rng, level, rng.randrange(1, 65536)), level)
        length, end = _remaining_length(data)
        assert end + length == len(data), data[:20]


def test_the_mirror_sees_a_pingreq_eaten_by_the_packet_before_it() -> None:
    assert _predict(_connected_mirror(), b"\x70\x02" + _PING) == "waiting"  # PUBCOMP id 0xc000
    assert _predict(_connected_mirror(), b"\x40\x02\x00\x01" + _PING) == "taken"
    assert _predict(_connected_mirror(), b"\x30\x09" + _PING) == "waiting"  # unfinished
    assert _predict(_connected_mirror(), b"\xe1\x00" + _PING) == "refused"  # bad flags
    assert _predict(_connected_mirror(), b"\xe0\x00" + _PING) == "refused"  # DISCONNECT
