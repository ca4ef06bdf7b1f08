"""Load generator: pre-encoded MQTT 3.1.1 packets. Imports the stdlib and actorbroker.codec only.

Every packet the generator sends is encoded once with ``actorbroker.codec``
and then copied and patched: a PUBLISH template is the encoded packet with a
dummy payload (and packet identifier), and a batch is ``n`` templates side by
side in one buffer, with each message's payload header (publisher id,
sequence number, send time) and packet identifier written in place with
``struct.pack_into``. One batch goes out in one ``transport.write``.

Payload layout (big-endian, padded with zeros to the payload size):
publisher id (u16), sequence number (u32), send time (u64, ns of
CLOCK_MONOTONIC, which every process of the host shares, unlike
``perf_counter``).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

from actorbroker.codec import Connect, Publish, Subscribe, Subscription, encode

__all__ = [
    "LEVEL", "MIN_PAYLOAD", "PAYLOAD", "Batcher", "Template", "connect_packet",
    "disconnect_packet", "puback_header", "publish_template", "subscribe_packet",
]

#: MQTT 3.1.1, the level every broker under test speaks.
LEVEL = 4
#: Publisher id, sequence number, send time (CLOCK_MONOTONIC ns).
PAYLOAD = struct.Struct(">HIQ")
MIN_PAYLOAD = PAYLOAD.size
_PACKET_ID = struct.Struct(">H")
_SEQ_MASK = 0xFFFFFFFF


def connect_packet(client_id: str, keepalive: int = 0, clean: bool = True) -> bytes:
    """CONNECT at MQTT 3.1.1; keepalive 0 means the broker never times the client out."""
    return encode(Connect("MQTT", LEVEL, client_id, clean, keepalive), LEVEL)


def subscribe_packet(packet_id: int, filters: Sequence[str], qos: int) -> bytes:
    """One SUBSCRIBE carrying every filter at the same maximum QoS."""
    subs = tuple(Subscription(f, qos) for f in filters)
    return encode(Subscribe(packet_id, subs), LEVEL)


def disconnect_packet() -> bytes:
    """DISCONNECT (no will is published, the session ends cleanly)."""
    return b"\xe0\x00"


def puback_header() -> bytes:
    """The two bytes before a PUBACK's packet identifier."""
    return b"\x40\x02"


@dataclass(frozen=True, slots=True)
class Template:
    """An encoded PUBLISH and where to patch it.

    ``payload_at`` is the offset of the payload; ``packet_id_at`` that of
    the packet identifier (QoS 1), or -1 at QoS 0.
    """

    wire: bytes
    payload_at: int
    packet_id_at: int


def publish_template(topic: str, payload_size: int, qos: int) -> Template:
    """The PUBLISH for ``topic`` with a zeroed payload of ``payload_size`` bytes."""
    if payload_size < MIN_PAYLOAD:
        raise ValueError(f"payload must hold at least {MIN_PAYLOAD} bytes, not {payload_size}")
    packet = Publish(topic, bytes(payload_size), qos=qos, packet_id=1 if qos else None)
    wire = encode(packet, LEVEL)
    payload_at = len(wire) - payload_size
    return Template(wire, payload_at, payload_at - 2 if qos else -1)


class Batcher:
    """Builds batches of PUBLISH packets from templates.

    ``cycle`` lists template indices: message ``seq`` uses template
    ``cycle[seq % len(cycle)]``. With one template the buffer is one bytes
    multiplication and the patch offsets are computed once per batch size.
    """

    __slots__ = ("_templates", "_cycle", "_offsets", "pub_id")

    def __init__(self, pub_id: int, templates: Sequence[Template],
                 cycle: Sequence[int] | None = None) -> None:
        if not templates:
            raise ValueError("a Batcher needs at least one template")
        self.pub_id = pub_id
        self._templates = list(templates)
        self._cycle = list(cycle) if cycle is not None else list(range(len(templates)))
        self._offsets: dict[int, list[tuple[int, int]]] = {}

    def topic_index(self, seq: int) -> int:
        """Index of the template (topic) that message ``seq`` uses."""
        return self._cycle[seq % len(self._cycle)]

    def build(self, seq0: int, n: int, now_ns: int) -> bytes:
        """Messages ``seq0 .. seq0+n-1``, all stamped ``now_ns``, as one byte string.

        QoS 1 packet identifiers are ``seq % 65535 + 1``: unique while fewer
        than 65,535 messages are in flight.
        """
        pack = PAYLOAD.pack_into
        pack_id = _PACKET_ID.pack_into
        pub = self.pub_id
        if len(self._templates) == 1:
            tmpl = self._templates[0]
            buf = bytearray(tmpl.wire * n)
            offsets = self._offsets.get(n)
            if offsets is None:
                size = len(tmpl.wire)
                offsets = [(i * size + tmpl.payload_at, i * size + tmpl.packet_id_at)
                           for i in range(n)]
                self._offsets[n] = offsets
        else:
            templates, cycle, period = self._templates, self._cycle, len(self._cycle)
            chosen = [templates[cycle[(seq0 + i) % period]] for i in range(n)]
            buf = bytearray(b"".join([t.wire for t in chosen]))
            offsets = []
            at = 0
            for t in chosen:
                offsets.append((at + t.payload_at, at + t.packet_id_at))
                at += len(t.wire)
        seq = seq0
        if offsets[0][1] < 0:
            for payload_at, _ in offsets:
                pack(buf, payload_at, pub, seq & _SEQ_MASK, now_ns)
                seq += 1
        else:
            for payload_at, packet_id_at in offsets:
                pack(buf, payload_at, pub, seq & _SEQ_MASK, now_ns)
                pack_id(buf, packet_id_at, seq % 65535 + 1)
                seq += 1
        return bytes(buf)
