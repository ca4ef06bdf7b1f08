"""Transport layer: MQTT over WebSocket, sans-IO, inside the connection's asyncio Protocol. Imports stdlib, asyncio and websockets.

:class:`WebSocketAdapter` is the asyncio Protocol of a ws/wss socket (over
TCP, or over asyncio's TLS transport for wss). It runs websockets'
sans-IO ``ServerProtocol`` (no second server framework, no task per
connection): the HTTP upgrade on ``path`` with the subprotocol ``mqtt``
(``mqttv3.1`` too, for old MQTT.js), then frames. It presents itself to the
:class:`~.connection.MqttConnection` as that connection's byte-stream
transport (:class:`FrameTransport`): the payloads of the binary frames of
one socket read reach ``data_received`` as one chunk (MQTT is a byte
stream, so a packet may span frames and a frame may hold several packets),
and each ``write`` leaves as one binary frame. ``pause_reading`` and
``resume_reading`` go straight to the socket, so read credit works as on
TCP. Pings are answered by the sans-IO protocol; the close handshake maps
onto the connection's own ending: ``write_eof`` sends Close (1000) and the
peer's Close answer is its EOF. A text frame breaks [MQTT-6.0.0-1] and
closes the connection (1003). Each frame's payload is bounded by
``max_frame`` bytes (1009 beyond); a message is not, since MQTT packets
are bounded by the decoder.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from websockets.exceptions import PayloadTooBig
from websockets.frames import Frame, Opcode
from websockets.http11 import Request, Response
from websockets.protocol import State
from websockets.server import ServerProtocol
from websockets.typing import Subprotocol

if TYPE_CHECKING:
    from .connection import MqttConnection

__all__ = ["FrameTransport", "WebSocketAdapter"]

log = logging.getLogger("actorbroker.transport")
#: websockets' own lines ("connection closed" per connection at info) repeat ours.
_frames_log = logging.getLogger("actorbroker.transport.websocket")
_frames_log.setLevel(logging.WARNING)

#: "mqtt" is the subprotocol of MQTT 3.1.1 and 5 (section 6); MQTT.js says "mqttv3.1" for 3.1.
SUBPROTOCOLS = (Subprotocol("mqtt"), Subprotocol("mqttv3.1"))
_CLOSE_UNSUPPORTED_DATA = 1003
_TLS_HANDSHAKE = 0x16  # first byte of a TLS record carrying a ClientHello
_CONNECT = 1  # MQTT packet type of CONNECT (first byte 0x10); no HTTP request starts so
_LINGER = 1.0  # seconds a socket whose WebSocket ended waits for the peer's EOF


def _rule(exc: Exception) -> str:
    """The part of RFC 6455 a frame the parser refused breaks: like MQTT protocol errors,
    each WebSocket one names its rule (websockets' messages alone do not)."""
    if isinstance(exc, PayloadTooBig):
        return "RFC 6455 section 10.4, a frame larger than max_packet_size allows"
    return "RFC 6455 section 5, data framing"


class WebSocketAdapter(asyncio.Protocol):
    """The socket's protocol for a ws/wss listener; unwraps frames around one MqttConnection."""

    def __init__(self, conn: MqttConnection, *, path: str, max_frame: int, listener: str,
                 handshake_timeout: float, loop: asyncio.AbstractEventLoop,
                 on_failed: Callable[[MqttConnection], None]) -> None:
        self._conn = conn
        self._path = path
        self._listener = listener
        self._loop = loop
        self._handshake_timeout = handshake_timeout
        self._on_failed = on_failed  # the connection never opened: the listener forgets it
        self._ws = ServerProtocol(subprotocols=list(SUBPROTOCOLS), max_size=(None, max_frame),
                                  logger=_frames_log)
        self._raw: asyncio.Transport | None = None
        self._stream = FrameTransport(self)
        self._open = False
        self._seen = False  # any byte received yet
        self._requested = False  # an HTTP request was parsed
        self._timer: asyncio.TimerHandle | None = None
        self.peer = ""

    @property
    def open(self) -> bool:
        """True once the upgrade succeeded and the MqttConnection was made."""
        return self._open

    def abort(self) -> None:
        """Drop the socket before the upgrade completed (the listener is closing)."""
        if self._raw is not None:
            self._raw.abort()

    # -- the socket's side -----------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._raw = transport  # type: ignore[assignment]  # uvloop's does not subclass it
        peer = transport.get_extra_info("peername")
        if isinstance(peer, tuple) and len(peer) >= 2:
            host, port = str(peer[0]), int(peer[1])
            self.peer = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        self._timer = self._loop.call_later(self._handshake_timeout, self._too_slow)

    def data_received(self, data: bytes) -> None:
        if not self._seen:
            self._seen = True
            if data[0] == _TLS_HANDSHAKE:
                log.warning("listener %s: TLS handshake (ClientHello) from %s on a plain "
                            "WebSocket listener: closing (the client wants a wss listener)",
                            self._listener, self.peer)
                self._close_raw()
                return
            if data[0] >> 4 == _CONNECT:
                log.warning("listener %s: plain MQTT (CONNECT) from %s on a WebSocket "
                            "listener: closing (the client must use MQTT over WebSocket)",
                            self._listener, self.peer)
                self._close_raw()
                return
        ws = self._ws
        failed = ws.parser_exc is not None  # logged already: later reads keep it set
        ws.receive_data(data)
        self._process(ws.events_received())
        if ws.parser_exc is not None and not failed and self._open:
            log.warning("conn %d %s: WebSocket protocol error, closing: %s (%s)",
                        self._conn.conn_id, self.peer, ws.parser_exc, _rule(ws.parser_exc))
        self._flush()

    def eof_received(self) -> bool:
        return False  # close the socket: connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_timer()
        self._raw = None
        if self._open:
            self._conn.connection_lost(exc)
        else:
            self._on_failed(self._conn)

    def pause_writing(self) -> None:
        if self._open:
            self._conn.pause_writing()

    def resume_writing(self) -> None:
        if self._open:
            self._conn.resume_writing()

    # -- events ----------------------------------------------------------------

    def _process(self, events: Iterable[Request | Response | Frame]) -> None:
        chunks: list[bytes | bytearray | memoryview] = []
        for event in events:
            if type(event) is Request:
                self._upgrade(event)
                continue
            assert isinstance(event, Frame)
            opcode = event.opcode
            if opcode is Opcode.BINARY or opcode is Opcode.CONT:
                chunks.append(event.data)
            elif opcode is Opcode.TEXT:
                log.warning("conn %d %s: [MQTT-6.0.0-1] a WebSocket text frame: closing",
                            self._conn.conn_id, self.peer)
                self._ws.fail(_CLOSE_UNSUPPORTED_DATA, "MQTT needs binary frames")
                break
            # PING is answered by the sans-IO protocol, PONG needs nothing, and after
            # CLOSE it has queued its answer and the end of the stream (_flush).
        if chunks and self._open:
            self._conn.data_received(bytes(chunks[0]) if len(chunks) == 1 else b"".join(chunks))

    def _upgrade(self, request: Request) -> None:
        ws = self._ws
        self._requested = True
        path = request.path.split("?", 1)[0]
        if self._path and path != self._path:
            response = ws.reject(404, f"No MQTT WebSocket endpoint at {path}: it is at "
                                      f"{self._path}.\n")
        else:
            response = ws.accept(request)
        ws.send_response(response)
        if response.status_code != 101:
            log.info("listener %s: WebSocket upgrade from %s refused (%d): %s", self._listener,
                     self.peer, response.status_code,
                     ws.handshake_exc or f"path {path!r} is not {self._path!r}")
            return
        self._cancel_timer()
        self._open = True
        self._flush()  # the 101 goes out before anything the connection writes
        self._conn.connection_made(self._stream)

    def _too_slow(self) -> None:
        self._timer = None
        if not self._open:
            log.info("listener %s: no WebSocket handshake from %s within %gs, closing",
                     self._listener, self.peer, self._handshake_timeout)
            self._close_raw()

    # -- output ----------------------------------------------------------------

    def _flush(self) -> None:
        """Write what the sans-IO protocol has queued; its end-of-stream closes the socket."""
        raw = self._raw
        if raw is None:
            return
        chunks = self._ws.data_to_send()
        for chunk in chunks:
            if raw.is_closing():
                return
            if chunk:
                raw.write(chunk)
            else:  # SEND_EOF: the close handshake is done, or the peer failed the protocol
                self._end(raw)
                if not self._requested:  # a refused upgrade was logged by _upgrade
                    log.info("listener %s: not a WebSocket handshake from %s: %s",
                             self._listener, self.peer, self._ws.handshake_exc)

    def _end(self, raw: asyncio.Transport) -> None:
        """Shut down writing after the last frame; what the peer still sends is discarded
        until its EOF, at most ``_LINGER`` seconds. Closing at once would answer unread
        input with a reset, which can lose the Close frame on its way."""
        if not raw.can_write_eof():  # TLS: close_notify, then close
            raw.close()
            return
        raw.write_eof()
        self._cancel_timer()
        self._timer = self._loop.call_later(_LINGER, self._close_raw)

    def send(self, data: bytes) -> None:
        """One binary frame (dropped once the close handshake began: the socket is going)."""
        if self._ws.state is State.OPEN:
            self._ws.send_binary(data)
            self._flush()

    def send_close(self) -> None:
        """Start the close handshake (1000); the peer's Close answer ends the stream."""
        if self._ws.state is State.OPEN:
            self._ws.send_close(1000)
            self._flush()

    def _close_raw(self) -> None:
        if self._raw is not None and not self._raw.is_closing():
            self._raw.close()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    @property
    def raw(self) -> asyncio.Transport | None:
        """The socket's transport (TCP, or TLS for wss); None once lost."""
        return self._raw


class FrameTransport(asyncio.Transport):
    """The byte-stream transport an MqttConnection sees on a WebSocket (see the module doc)."""

    def __init__(self, adapter: WebSocketAdapter) -> None:
        super().__init__()
        self._adapter = adapter

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self._adapter.send(bytes(data))

    def writelines(self, list_of_data: Iterable[bytes | bytearray | memoryview]) -> None:
        self._adapter.send(b"".join(list_of_data))

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None:
        self._adapter.send_close()

    def close(self) -> None:
        self._adapter.send_close()
        raw = self._adapter.raw
        if raw is not None:
            raw.close()

    def abort(self) -> None:
        raw = self._adapter.raw
        if raw is not None:
            raw.abort()

    def is_closing(self) -> bool:
        raw = self._adapter.raw
        return raw is None or raw.is_closing()

    def pause_reading(self) -> None:
        raw = self._adapter.raw
        if raw is not None:
            raw.pause_reading()

    def resume_reading(self) -> None:
        raw = self._adapter.raw
        if raw is not None:
            raw.resume_reading()

    def is_reading(self) -> bool:
        raw = self._adapter.raw
        return raw is not None and raw.is_reading()

    def get_write_buffer_size(self) -> int:
        raw = self._adapter.raw
        return 0 if raw is None else raw.get_write_buffer_size()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        raw = self._adapter.raw
        if raw is not None:
            raw.set_write_buffer_limits(high, low)

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        raw = self._adapter.raw
        return default if raw is None else raw.get_extra_info(name, default)
