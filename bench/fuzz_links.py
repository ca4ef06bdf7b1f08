"""Benchmark: the fuzzer's connections, one per listener kind (tcp, tls, ws, wss). Stdlib, websockets' sans-IO protocol.

A :class:`Link` carries MQTT bytes to the broker and back whatever the
listener speaks: a TCP stream (``tcp``), the same over TLS (``tls``;
TLS records carry the fuzzed bytes), or WebSocket binary frames over
either (``ws``, ``wss``; each ``write`` is one masked binary frame, the
frames the broker sends are unwrapped). On ws and wss
:func:`ws_mutation` also makes frames that break WebSocket itself (a text
frame, a reserved opcode or RSV bit, an unmasked frame, a frame of 2**62
bytes, an oversized ping): :meth:`Link.write_raw` sends them as they are.
"""

from __future__ import annotations

import asyncio
import random
import ssl
import subprocess
from pathlib import Path
from websockets.client import ClientProtocol
from websockets.exceptions import InvalidState
from websockets.frames import Frame, Opcode
from websockets.http11 import Response
from websockets.typing import Subprotocol
from websockets.uri import parse_uri

__all__ = ["KINDS", "Link", "open_link", "self_signed", "ws_mutation"]

KINDS = ("tcp", "tls", "ws", "wss")
_READ = 65536


def _client_context() -> ssl.SSLContext:
    """TLS without verification: the fuzzer tests what comes after the handshake."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


class Link:
    """One connection to the broker that carries MQTT bytes (see the module doc)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 ws: ClientProtocol | None) -> None:
        self._reader = reader
        self._writer = writer
        self._ws = ws
        self._pending = b""  # MQTT bytes unwrapped from frames read along with the upgrade

    def write(self, data: bytes) -> None:
        """``data`` to the broker (one binary frame on WebSocket)."""
        if self._ws is None:
            self._writer.write(data)
            return
        try:
            self._ws.send_binary(data)
        except InvalidState as exc:  # the broker closed the WebSocket connection
            raise ConnectionError(str(exc)) from exc
        self._flush()

    def write_raw(self, data: bytes) -> None:
        """``data`` on the socket as it is (WebSocket frames made by :func:`ws_mutation`)."""
        self._writer.write(data)

    def _flush(self) -> None:
        assert self._ws is not None
        out = b"".join(self._ws.data_to_send())
        if out:
            self._writer.write(out)

    async def read(self, patience: float) -> bytes | None:
        """The next MQTT bytes from the broker: ``b""`` once it closed, None after
        ``patience`` seconds of silence."""
        while True:
            if self._pending:
                data, self._pending = self._pending, b""
                return data
            try:
                raw = await asyncio.wait_for(self._reader.read(_READ), patience)
            except asyncio.TimeoutError:
                return None
            except (ConnectionError, ssl.SSLError):
                raw = b""
            if self._ws is None:
                return raw
            if not raw:
                return b""
            self._ws.receive_data(raw)
            self._pending = self._unwrap()
            self._flush()  # pongs, the answer to a Close
            if self._ws.close_code is not None and not self._pending:
                return b""

    def _unwrap(self) -> bytes:
        """The MQTT bytes of the binary frames received; a text frame from the broker is
        passed on as it is, for the MQTT decoder to reject."""
        assert self._ws is not None
        data = b""
        for event in self._ws.events_received():
            if isinstance(event, Frame) and event.opcode in (Opcode.BINARY, Opcode.CONT,
                                                            Opcode.TEXT):
                data += event.data
        return data

    def close(self) -> None:
        self._writer.close()


async def open_link(kind: str, host: str, port: int, patience: float = 10.0) -> Link:
    """A connection of listener kind ``kind``; on ws/wss the upgrade is done (path /mqtt,
    subprotocol mqtt). ConnectionError if the broker refuses or closes it."""
    context = _client_context() if kind in ("tls", "wss") else None
    reader, writer = await asyncio.open_connection(
        host, port, ssl=context, server_hostname="localhost" if context else None)
    if kind in ("tcp", "tls"):
        return Link(reader, writer, None)
    scheme = "wss" if context else "ws"
    ws = ClientProtocol(parse_uri(f"{scheme}://localhost:{port}/mqtt"),
                        subprotocols=[Subprotocol("mqtt")], max_size=None)
    ws.send_request(ws.connect())
    link = Link(reader, writer, ws)
    link._flush()
    while True:
        try:
            raw = await asyncio.wait_for(reader.read(_READ), patience)
        except (asyncio.TimeoutError, ssl.SSLError) as exc:
            writer.close()
            raise ConnectionError(f"WebSocket upgrade: {exc!r}") from exc
        if not raw:
            writer.close()
            raise ConnectionError("WebSocket upgrade: the broker closed")
        ws.receive_data(raw)
        events = ws.events_received()
        responses = [e for e in events if isinstance(e, Response)]
        if responses:
            if responses[0].status_code != 101:
                writer.close()
                raise ConnectionError(f"WebSocket upgrade: {responses[0].status_code}")
            link._pending = b"".join(e.data for e in events if isinstance(e, Frame))
            return link


def _masked(first: int, payload: bytes, mask: bool = True) -> bytes:
    """A frame's bytes: ``first`` (FIN, RSV, opcode), the length, the mask, the payload."""
    size = len(payload)
    if size < 126:
        head = bytes((first, (0x80 if mask else 0) | size))
    elif size < 65536:
        head = bytes((first, (0x80 if mask else 0) | 126)) + size.to_bytes(2, "big")
    else:
        head = bytes((first, (0x80 if mask else 0) | 127)) + size.to_bytes(8, "big")
    if not mask:
        return head + payload
    key = b"\x12\x34\x56\x78"
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


def ws_mutation(rng: random.Random, mqtt: bytes) -> bytes:
    """A WebSocket frame that breaks the WebSocket protocol or MQTT's use of it, with
    ``mqtt`` (a valid packet) inside where a payload fits."""
    how = rng.randrange(6)
    if how == 0:
        return _masked(0x81, mqtt)                      # a text frame [MQTT-6.0.0-1]
    if how == 1:
        return _masked(0x80 | rng.choice((3, 4, 5, 6, 7, 11, 15)), mqtt)  # reserved opcode
    if how == 2:
        return _masked(0x82 | rng.choice((0x40, 0x20, 0x10)), mqtt)  # RSV bit, no extension
    if how == 3:
        return _masked(0x82, mqtt, mask=False)          # a client frame must be masked
    if how == 4:                                        # 2**62 bytes announced
        return bytes((0x82, 0xFF)) + (1 << 62).to_bytes(8, "big") + b"\x00\x00\x00\x00" + mqtt
    return _masked(0x89, rng.randbytes(126 + rng.randrange(100)))  # ping > 125


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for localhost and its key (openssl CLI, EC P-256)."""
    cert, key = directory / "fuzz-cert.pem", directory / "fuzz-key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True, timeout=30)
    return cert, key
