"""Fuzzer inputs: valid MQTT packets from the project's codec, then mutated. Stdlib and codec.

:func:`packet` draws one valid packet for a protocol level (PUBLISH of every
QoS, with MQTT 5 properties, SUBSCRIBE with options, UNSUBSCRIBE, the
acknowledgements, PINGREQ, AUTH, DISCONNECT), encoded by
:func:`actorbroker.codec.encode`; :func:`mutate` breaks it the ways that
find bugs in a decoder: flipped bits, interesting byte values, a rewritten
Remaining Length (short, long, 256 MiB, non-minimal), a rewritten MQTT 5
property length, inserted, deleted, duplicated and spliced bytes, a
truncation. Everything is drawn from one ``random.Random``: a seed replays
a run exactly.
"""

from __future__ import annotations

import random

from actorbroker.codec import (
    Auth,
    Connect,
    Disconnect,
    Packet,
    PingReq,
    Properties,
    PubAck,
    PubComp,
    Publish,
    PubRec,
    PubRel,
    Subscribe,
    Subscription,
    Unsubscribe,
    encode,
)
from actorbroker.codec.primitives import encode_varint

__all__ = ["connect", "encoded", "mutate", "mutate_body", "packet"]

_TOPICS = ("fuzz/a", "fuzz/b/c", "fuzz/é", "f", "fuzz/" + "x" * 200)
_FILTERS = ("fuzz/#", "fuzz/+/c", "+", "#", "fuzz/a", "$share/g/fuzz/#")
_INTERESTING = (0x00, 0x01, 0x7F, 0x80, 0xFF, 0xC0, 0x3F)


def connect(rng: random.Random, level: int, client_id: str) -> Connect:
    """A valid CONNECT at ``level`` (3: MQIsdp) with a clean session."""
    properties = Properties()
    if level == 5 and rng.random() < 0.5:
        properties = Properties(session_expiry_interval=rng.choice((0, 10)),
                                receive_maximum=rng.choice((1, 20)),
                                topic_alias_maximum=rng.choice((0, 5)))
    return Connect("MQIsdp" if level == 3 else "MQTT", level, client_id, True,
                   rng.choice((0, 30, 60)), properties=properties)


def _properties(rng: random.Random) -> Properties:
    choice = rng.randrange(5)
    if choice == 0:
        return Properties(message_expiry_interval=rng.randrange(1, 100), content_type="text/x")
    if choice == 1:
        return Properties(topic_alias=rng.randrange(1, 6), payload_format_indicator=1)
    if choice == 2:
        return Properties(user_property=(("k", "v"), ("k2", "v" * rng.randrange(40))))
    if choice == 3:
        return Properties(response_topic="fuzz/r", correlation_data=rng.randbytes(8))
    return Properties()


def packet(rng: random.Random, level: int, packet_id: int) -> Packet:
    """One valid packet a client may send after its CONNECT."""
    v5 = level == 5
    kind = rng.randrange(12)
    if kind < 5:
        qos = rng.randrange(3)
        return Publish(rng.choice(_TOPICS), rng.randbytes(rng.choice((0, 1, 16, 300))), qos,
                       retain=rng.random() < 0.1, packet_id=packet_id if qos else None,
                       properties=_properties(rng) if v5 else Properties())
    if kind == 5:
        filters = rng.sample(_FILTERS if v5 else _FILTERS[:5], rng.randrange(1, 4))
        return Subscribe(packet_id, tuple(Subscription(
            f, rng.randrange(3), no_local=v5 and rng.random() < 0.3,
            retain_as_published=v5 and rng.random() < 0.3,
            retain_handling=rng.randrange(3) if v5 else 0) for f in filters))
    if kind == 6:
        return Unsubscribe(packet_id, tuple(rng.sample(_FILTERS[:5], rng.randrange(1, 3))))
    if kind == 7:
        return rng.choice((PubAck, PubRec, PubRel, PubComp))(packet_id)
    if kind == 8 and v5:
        return Auth(0x18, Properties(authentication_method="SCRAM-SHA-256",
                                     authentication_data=rng.randbytes(16)))
    if kind == 9 and rng.random() < 0.2:
        return Disconnect()
    return PingReq()


def _remaining_length_end(data: bytes) -> int:
    """Where the fixed header of ``data`` ends (1 + the Remaining Length's bytes)."""
    end = 1
    while end < len(data) and end < 5 and data[end] & 0x80:
        end += 1
    return min(end + 1, len(data))


def mutate(rng: random.Random, data: bytes, level: int, other: bytes = b"") -> bytes:
    """``data`` broken 1 to 3 times (``other``: another packet, for splicing)."""
    out = bytearray(data)
    for _ in range(rng.randrange(1, 4)):
        at = rng.randrange(len(out)) if out else 0
        how = rng.randrange(10)
        if how == 0 and out:
            out[at] ^= 1 << rng.randrange(8)
        elif how == 1 and out:
            out[at] = rng.choice(_INTERESTING)
        elif how == 2 and out:  # the Remaining Length: off by a little, a lot, or not minimal
            head = _remaining_length_end(bytes(out))
            body = len(out) - head
            length = rng.choice((body + 1, max(body - 1, 0), rng.randrange(1 << 28), 0,
                                 268_435_455, body * 2))
            varint = encode_varint(min(length, 268_435_455))
            if rng.random() < 0.2:
                varint = bytes(b | 0x80 for b in varint) + b"\x00"  # non-minimal
            out[1:head] = varint
        elif how == 3 and level == 5 and len(out) > 4:  # a property length somewhere after
            pos = rng.randrange(2, len(out))
            out[pos:pos + 1] = encode_varint(rng.choice((0, 1, 127, 128, 16384, 1 << 21)))
        elif how == 4:
            out[at:at] = rng.randbytes(rng.randrange(1, 9))
        elif how == 5 and out:
            del out[at:at + rng.randrange(1, 9)]
        elif how == 6 and out:
            piece = out[at:at + rng.randrange(1, 17)]
            out[at:at] = piece
        elif how == 7 and other:
            cut = rng.randrange(len(other))
            out[at:] = other[cut:]
        elif how == 8 and out:
            del out[max(at, 1):]
        elif out:
            out[0] = (out[0] & 0xF0) | rng.randrange(16)  # the fixed header's flags
    return bytes(out)


def mutate_body(rng: random.Random, data: bytes, level: int) -> bytes:
    """``data`` with its body broken 1 to 3 times and its Remaining Length made right
    again: the packet stays framed, so the broken fields (strings, properties, QoS and
    flags, packet ids, subscription options) reach past the framing into the decoder's
    field checks and, when those pass, the session and routing rules."""
    head = _remaining_length_end(data)
    body = mutate(rng, data[head:], level) if rng.random() < 0.5 else _flip(rng, data[head:])
    first = data[0] if rng.random() < 0.8 else (data[0] & 0xF0) | rng.randrange(16)
    return bytes((first,)) + encode_varint(len(body)) + body


def _flip(rng: random.Random, body: bytes) -> bytes:
    """One byte of ``body`` replaced: a flipped bit or an interesting value."""
    if not body:
        return body
    out = bytearray(body)
    at = rng.randrange(len(out))
    out[at] = out[at] ^ (1 << rng.randrange(8)) if rng.random() < 0.5 else rng.choice(_INTERESTING)
    return bytes(out)


def encoded(rng: random.Random, level: int, packet_id: int) -> bytes:
    """A valid packet, encoded."""
    return encode(packet(rng, level, packet_id), level)
