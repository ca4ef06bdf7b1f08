"""Codec layer: the sans-IO stream decoder. Stdlib and codec only; no I/O, clocks or threads.

``Decoder.feed(bytes)`` returns every packet completed by those bytes and
keeps the incomplete tail, whatever the split. It frames packets (fixed
header, remaining length, maximum packet size), checks the fixed-header flags
of each type and hands the body to its parser.

Memory: a packet is rejected as soon as its fixed header announces more than
``max_packet_size`` bytes (``max_connect_size`` for CONNECT and AUTH, the
packets of a client not authenticated yet), and the only thing kept between
calls is the unfinished packet, so the buffer never exceeds the limit (the
fixed header is counted in it, as MQTT 5 counts it).

Errors: every failure is a :class:`ProtocolError` (most of them
:class:`MalformedPacketError`). After one, the decoder is poisoned: the
connection must be closed, and every later ``feed`` raises the same kind of
error.
"""

from __future__ import annotations

from .errors import MalformedPacketError, PacketTooLargeError, ProtocolError
from .packets import PROTOCOL_LEVELS, Packet, Publish
from .parsers import PARSERS, PublishBuilder, parse_connect, parse_publish
from .primitives import MAX_VARINT
from .properties import NO_PROPERTIES

__all__ = ["MAX_PACKET_SIZE", "Decoder"]

#: The largest packet the protocol can express: 1 + 4 header bytes + remaining length.
MAX_PACKET_SIZE = 1 + 4 + MAX_VARINT

#: Fixed-header flags each packet type must carry (section 2.1.3); PUBLISH (3) varies.
_FLAGS = (-1, 0, 0, -1, 0, 0, 2, 0, 2, 0, 2, 0, 0, 0, 0, 0)
_FLAG_RULES = {
    6: "[MQTT-3.6.1-1]", 8: "[MQTT-3.8.1-1]", 10: "[MQTT-3.10.1-1]", 14: "[MQTT-3.14.1-1]",
}
_NAMES = (
    "reserved type 0", "CONNECT", "CONNACK", "PUBLISH", "PUBACK", "PUBREC", "PUBREL",
    "PUBCOMP", "SUBSCRIBE", "SUBACK", "UNSUBSCRIBE", "UNSUBACK", "PINGREQ", "PINGRESP",
    "DISCONNECT", "AUTH",
)


class Decoder:
    """Turns a byte stream into MQTT packets.

    ``protocol_level`` 3, 4 or 5 fixes the version (a client, a test, a
    cluster link); None means the server side of a connection: the first
    packet must be a CONNECT ([MQTT-3.1.0-1]), whose level the decoder
    adopts (see :attr:`protocol_level`), and a second CONNECT is refused
    ([MQTT-3.1.0-2]). ``max_packet_size`` bounds a whole packet, fixed
    header included; larger ones raise :class:`PacketTooLargeError` (0x95).
    ``max_connect_size`` (default: the same) bounds CONNECT and AUTH packets,
    which a server reads from clients not authenticated yet.
    """

    __slots__ = ("protocol_level", "max_packet_size", "max_connect_size", "_smallest",
                 "_server", "_connected", "_buf", "_total", "_error")

    def __init__(
        self, protocol_level: int | None = None, max_packet_size: int | None = None,
        max_connect_size: int | None = None,
    ) -> None:
        if protocol_level is not None and protocol_level not in PROTOCOL_LEVELS:
            raise ValueError(f"protocol_level must be 3, 4, 5 or None, not {protocol_level!r}")
        for name, value in (("max_packet_size", max_packet_size),
                            ("max_connect_size", max_connect_size)):
            if value is not None and value < 2:
                raise ValueError(f"{name} must be at least 2, not {value}")
        #: The protocol level in use: given, or learnt from the CONNECT.
        self.protocol_level: int | None = protocol_level
        #: Largest packet accepted, fixed header included.
        self.max_packet_size: int = min(max_packet_size or MAX_PACKET_SIZE, MAX_PACKET_SIZE)
        #: Largest CONNECT or AUTH packet accepted, fixed header included.
        self.max_connect_size: int = min(max_connect_size or MAX_PACKET_SIZE, self.max_packet_size)
        # Below this no packet needs its type looked at (the per-packet fast path).
        self._smallest = self.max_connect_size
        self._server = protocol_level is None
        self._connected = False
        self._buf = bytearray()
        self._total = 0  # full size of the packet in _buf, once its header is known
        self._error: ProtocolError | None = None

    @property
    def buffered(self) -> int:
        """Bytes held for a packet not complete yet."""
        return len(self._buf)

    def feed(self, data: bytes) -> list[Packet]:
        """Every packet completed by ``data``, in order; keeps the rest for later."""
        if self._error is not None:
            exc = self._error
            raise type(exc)(f"decoder already failed: {exc}", exc.reason_code)
        try:
            if type(data) is not bytes:
                data = bytes(data)
            out: list[Packet] = []
            start = self._finish_tail(data, out) if self._buf else 0
            if start < len(data):
                self._parse(data, start, out)
            return out
        except ProtocolError as exc:
            # A copy: the raised one gets a traceback whose frames hold our caller, a
            # reference cycle that would keep a closed connection for the collector.
            self._error = type(exc)(str(exc), exc.reason_code)
            self._buf = bytearray()
            raise

    def _finish_tail(self, data: bytes, out: list[Packet]) -> int:
        """Complete the packet begun in an earlier call; return where ``data`` continues."""
        buf = self._buf
        if not self._total:  # its fixed header is incomplete (at most 4 bytes so far)
            head = bytes(buf) + data[:5]
            header = self._header(head, 0, len(head))
            if header is None:
                buf += data
                return len(data)
            self._total = header[1]  # where the packet ends in `head`: its size
        need = self._total - len(buf)
        if len(data) < need:
            buf += data
            return len(data)
        packet = bytes(buf) + data[:need]
        self._buf = bytearray()
        self._total = 0
        self._parse(packet, 0, out)
        return need

    def _header(self, data: bytes, pos: int, n: int) -> tuple[int, int] | None:
        """(start of body, end of packet) of the packet at ``pos``; None if incomplete."""
        first = data[pos]
        if self._server:
            self._check_order(first >> 4)
        length = 0
        for i, shift in enumerate((0, 7, 14, 21)):
            at = pos + 1 + i
            if at >= n:
                return None
            byte = data[at]
            length |= (byte & 0x7F) << shift
            if byte >= 0x80:
                if shift < 21:
                    # More bytes follow, and the last byte of a minimal
                    # encoding is non-zero: the size has a lower bound
                    # already. Refuse now rather than buffer the header of a
                    # packet we will refuse, whatever the split.
                    self._check_size(first, i + 3 + length + (1 << (shift + 7)))
            else:
                if byte == 0 and shift:
                    raise MalformedPacketError(
                        "[MQTT-1.5.5-1] remaining length is not minimally encoded"
                    )
                end = at + 1 + length
                self._check_size(first, end - pos)
                return at + 1, end
        raise MalformedPacketError(
            "remaining length is longer than four bytes (v5 section 2.1.4, 3.1.1 section 2.2.3)"
        )

    def _check_size(self, first: int, size: int) -> None:
        ptype = first >> 4
        if ptype == 1 or ptype == 15:
            if size > self.max_connect_size:
                raise PacketTooLargeError(
                    f"[MQTT-3.2.2-15] (3.1.1: [MQTT-4.8.0-1]) {_NAMES[ptype]} of {size} bytes"
                    f" or more exceeds the limit before authentication {self.max_connect_size}"
                )
        elif size > self.max_packet_size:
            raise PacketTooLargeError(
                f"[MQTT-3.2.2-15] (3.1.1: [MQTT-4.8.0-1]) {_NAMES[ptype]} of"
                f" {size} bytes or more exceeds the maximum packet size {self.max_packet_size}"
            )

    def _check_order(self, ptype: int) -> None:
        if not self._connected and ptype != 1:
            raise ProtocolError(
                f"[MQTT-3.1.0-1] first packet must be CONNECT, got {_NAMES[ptype]}"
            )
        if self._connected and ptype == 1:
            raise ProtocolError("[MQTT-3.1.0-2] second CONNECT on the connection")

    def _parse(self, data: bytes, pos: int, out: list[Packet]) -> None:
        """Decode every complete packet of ``data[pos:]``; keep the tail in the buffer."""
        n = len(data)
        level = self.protocol_level
        append = out.append
        max_size = self._smallest
        new_publish = PublishBuilder
        while pos < n:
            first = data[pos]
            if level is not None and pos + 1 < n and data[pos + 1] < 0x80:
                # Fast path: one-byte remaining length, level known.
                body = pos + 2
                end = body + data[pos + 1]
                if end - pos > max_size:
                    self._check_size(first, end - pos)
            else:
                header = self._header(data, pos, n)
                if header is None:
                    break
                body, end = header
            if end > n:
                self._total = end - pos
                break
            ptype = first >> 4
            if ptype == 3:
                # Inlined fast path: MQTT 3.x QoS 0 PUBLISH with a plain topic.
                # Anything unusual falls through to parse_publish, which owns
                # every rule and raises with the right message.
                if not first & 0x0E and level != 5 and body + 2 <= end:
                    stop = body + 2 + ((data[body] << 8) | data[body + 1])
                    if stop <= end:
                        try:
                            topic = data[body + 2:stop].decode()
                        except UnicodeDecodeError:
                            topic = ""
                        if topic and "+" not in topic and "#" not in topic and "\x00" not in topic:
                            obj = new_publish(topic, data[stop:end], 0, first == 0x31, False,
                                              None, NO_PROPERTIES)
                            obj.__class__ = Publish
                            append(obj)
                            pos = end
                            continue
                append(parse_publish(data, body, end, first & 0x0F, level))  # type: ignore[arg-type]
            else:
                self._check_flags(first, level)
                if ptype == 1 and self._server:
                    self._check_order(1)
                    connect = parse_connect(data, body, end, 0, level)
                    self._connected = True
                    level = self.protocol_level = connect.protocol_level
                    packet: Packet = connect
                else:
                    packet = PARSERS[ptype](data, body, end, first & 0x0F, level)
                append(packet)
            pos = end
        if pos < n:
            self._buf = bytearray(memoryview(data)[pos:])

    def _check_flags(self, first: int, level: int | None) -> None:
        ptype, flags = first >> 4, first & 0x0F
        if ptype == 0 or (ptype == 15 and level != 5):
            raise MalformedPacketError(
                f"packet type {ptype} is reserved (section 2.1.2)"
                + (" (AUTH exists in MQTT 5 only)" if ptype == 15 else "")
            )
        expected = _FLAGS[ptype]
        if flags != expected and not (level == 3 and flags == 0x0A and expected == 2):
            # MQTT 3.1 let PUBREL, SUBSCRIBE and UNSUBSCRIBE carry DUP (0x0A).
            raise MalformedPacketError(
                f"[MQTT-2.1.3-1] (3.1.1: [MQTT-2.2.2-2]) {_FLAG_RULES.get(ptype, '')}"
                f" {_NAMES[ptype]} fixed-header flags must be {expected:04b}, got {flags:04b}"
            )
