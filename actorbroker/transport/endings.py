"""Transport layer: how an MQTT connection ends, as a mixin of MqttConnection. Imports stdlib, asyncio, codec and ports.

Every way out of :class:`~actorbroker.transport.connection.MqttConnection`
meets here: the peer broke the protocol, something on our side failed, no
CONNECT came in time, the keepalive expired, or the server closes it. Each
says goodbye the way the client's version allows (MQTT 5: DISCONNECT with a
reason code, or a CONNACK if nothing was answered yet), flushes what is
queued and closes gracefully: it shuts down writing (the peer reads a FIN
after the last packet), keeps reading and discarding the peer's input until
its EOF or ``_LINGER`` seconds, then closes, aborting if the peer does not
take its last bytes within ``close_timeout``. Closing at once would lose the
goodbye: with unread input in the socket the kernel answers with a reset
(RST) instead of a FIN, the peer's next write fails with it, and a peer that
gives up then never reads the DISCONNECT (a client answering the PUBRECs of
more than its Receive Maximum of QoS 2 PUBLISHes saw a reset instead of
DISCONNECT 0x93; some TCP stacks also drop what the peer had not read). The
session is told exactly once (``ConnectionLost``). It lives apart so that
the connection module stays one readable file (docs/style.md: under 400 lines);
none of it is on the per-packet path, and the methods are found on the class
like any other.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from actorbroker.codec import (ConnAck, ConnectReturnCode, Disconnect, Packet, Properties,
                               ProtocolError, ReasonCode, encode)
from actorbroker.codec.states import ConnectionState
from actorbroker.ports import ConnectionLost, Drained, SessionPort

from .gate import InboundGate, sniff_level
from .output import WriteBuffer
from .settings import ConnectionSettings
from .stats import TransportStats
from .timers import IdleTimer

__all__ = ["ConnectionEndings"]

log = logging.getLogger("actorbroker.transport")

_S = ConnectionState
#: Seconds a closing connection keeps reading (and discarding) for the peer's EOF before it
#: closes: the peer has its last packet by then, or is not reading (``close_timeout``).
_LINGER = 1.0
#: The first byte of a TLS handshake record: no MQTT packet starts so (CONNECT flags are 0).
_TLS_HANDSHAKE = b"\x16"


class ConnectionEndings:
    """The endings of :class:`~actorbroker.transport.connection.MqttConnection` (see the module doc)."""

    # MqttConnection's state, declared for the type checker (MqttConnection sets it).
    conn_id: int
    listener: str
    _settings: ConnectionSettings
    _stats: TransportStats
    _loop: asyncio.AbstractEventLoop
    _gate: InboundGate
    _port: SessionPort | None
    _head: bytes
    _outbox: WriteBuffer
    _closing: bool
    _lost: bool
    _lost_told: bool
    _idle: IdleTimer
    _timer: asyncio.TimerHandle | None
    _abort_timer: asyncio.TimerHandle | None
    _problem_info: bool
    _paused: int

    if TYPE_CHECKING:
        @property
        def transport(self) -> asyncio.Transport | None: ...

        @property
        def protocol_level(self) -> int | None: ...

        def _who(self) -> str: ...

    # -- saying goodbye --------------------------------------------------------

    def _goodbye(self, reason_code: int, *, reason: str = "",
                 properties: Properties | None = None) -> None:
        """Queue the v5 farewell: DISCONNECT if connected, CONNACK if nothing answered yet.

        ``reason`` becomes its Reason String if the client allows them ([MQTT-3.1.2-29]).
        """
        if properties is None:
            properties = Properties(reason_string=reason[:200]) if (
                reason and self._problem_info) else Properties()
        packet = self._gate.farewell(reason_code, properties)
        if packet is not None:
            self._queue(encode(packet, 5))

    def _queue(self, data: bytes) -> None:
        self._outbox.put(data)
        self._stats.packets_out += 1

    # -- why it ends -------------------------------------------------------------

    def _violation(self, exc: ProtocolError) -> None:
        """The peer broke the protocol: log the rule, say why (v5), close.

        A TLS ClientHello instead of a CONNECT gets its own line: the client
        wants a TLS listener, and the codec's complaint would not say so.
        """
        if self._closing:
            return
        self._stats.protocol_errors += 1
        if self._gate.state is _S.AWAIT_CONNECT and self._head[:1] == _TLS_HANDSHAKE:
            log.warning("listener %s: TLS handshake (ClientHello) from %s on a plain MQTT "
                        "listener: closing (the client wants a tls listener)", self.listener,
                        self._who())
            self._shutdown("TLS on a plain listener", graceful=False)
            return
        # The text, not the exception: a kept log record (a test's capture, a memory
        # handler) would keep its traceback's frames, this connection among them.
        log.warning("conn %d %s: protocol error, closing: %s", self.conn_id, self._who(), str(exc))
        level = self.protocol_level or sniff_level(self._head)
        if exc.reason_code == ReasonCode.UNSUPPORTED_PROTOCOL_VERSION and not self._gate.connack_sent:
            # [MQTT-3.1.2-2] (3.1.1): CONNACK 0x01 in the form every version can read.
            self._queue(encode(ConnAck(False, 0x01), 4))
            self._gate.connack_sent = True
        elif level == 5:
            self._goodbye(exc.reason_code, reason=str(exc))
        self._shutdown(str(exc), graceful=False, code=exc.reason_code)

    def _refuse_busy(self, why: str) -> None:
        """Refuse the CONNECT: the broker is overloaded (v5 0x89 Server busy, v3 0x03)."""
        self._stats.overload_refusals += 1
        log.info("conn %d %s: refused, the broker is overloaded: %s", self.conn_id,
                 self._who(), why)
        if self.protocol_level == 5:
            self._queue(encode(ConnAck(False, ReasonCode.SERVER_BUSY), 5))
        else:
            self._queue(encode(ConnAck(False, ConnectReturnCode.SERVER_UNAVAILABLE),
                               self.protocol_level or 4))
        self._gate.connack_sent = True
        self._shutdown("refused: overloaded", graceful=True)

    def _fail(self, reason: str) -> None:
        """Close because something on our side failed (v5: reason 0x80)."""
        if self.protocol_level == 5:
            self._goodbye(ReasonCode.UNSPECIFIED_ERROR)
        self._shutdown(reason, graceful=False)

    def _connect_timeout(self) -> None:
        self._timer = None
        if self._gate.state is _S.AWAIT_CONNECT and not self._closing:
            self._stats.connect_timeouts += 1
            log.info("conn %d %s: no CONNECT within %gs, closing", self.conn_id, self._who(),
                     self._settings.connect_timeout)
            self._shutdown("connect timeout", graceful=False)

    def _packet_stalled(self) -> None:
        """One packet took longer than ``connect_timeout`` to arrive (a slowloris)."""
        if self._closing:
            return
        self._stats.stalled_packets += 1
        log.info("conn %d %s: a packet still unfinished after %gs, closing", self.conn_id,
                 self._who(), self._settings.connect_timeout)
        self._shutdown("packet too slow to arrive", graceful=False)

    def _keepalive_expired(self) -> None:
        if self._closing:
            return
        self._stats.keepalive_timeouts += 1
        log.info("conn %d %s: keepalive expired (%gs without a packet), closing",
                 self.conn_id, self._who(), self._idle.limit)
        if self.protocol_level == 5:
            self._goodbye(ReasonCode.KEEP_ALIVE_TIMEOUT)  # the code says it all
        self._shutdown("keepalive timeout", graceful=False, code=ReasonCode.KEEP_ALIVE_TIMEOUT)

    def _disconnected(self, packet: Packet) -> None:
        """The client sent DISCONNECT: close, or let the session answer it first.

        A v5 DISCONNECT that sets a Session Expiry Interval may break
        [MQTT-3.14.2-2] (not from 0: the session core's rule), which the
        session answers with DISCONNECT 0x82 before it closes the connection;
        until then (at most ``close_timeout``) the connection stays open for it.
        """
        if (type(packet) is Disconnect and self._gate.connack_ok
                and packet.properties.session_expiry_interval is not None):
            self._abort_timer = self._loop.call_later(
                self._settings.close_timeout, self._shutdown, "client sent DISCONNECT", True,
                ReasonCode.NORMAL_DISCONNECTION)
            return
        self._shutdown("client sent DISCONNECT", graceful=True,
                       code=ReasonCode.NORMAL_DISCONNECTION)

    # -- closing -----------------------------------------------------------------

    def _shutdown(self, reason: str, graceful: bool, code: int | None = None, *,
                  abort: bool = False) -> None:
        """Flush what is queued, close the transport gracefully (see the module doc),
        tell the session once (``code``: see ``ConnectionLost``)."""
        if self._closing:
            return
        self._closing = True
        self._cancel_timer()
        if self._abort_timer is not None:  # waiting for the session's answer to a DISCONNECT
            self._abort_timer.cancel()
            self._abort_timer = None
        self._gate.held.clear()
        transport = self.transport
        if transport is not None and not self._lost:
            if abort:
                transport.abort()
            else:
                self._outbox.flush()
                self._linger(transport)
        self._tell_lost(reason, graceful, code)

    def _linger(self, transport: asyncio.Transport) -> None:
        """Shut down writing, read until the peer's EOF (``eof_received`` closes), at most
        ``_LINGER`` seconds; ``data_received`` discards what comes meanwhile."""
        if transport.can_write_eof():  # after the buffered bytes (TLS cannot: it just lingers)
            transport.write_eof()
        if self._paused:
            self._paused = 0
            transport.resume_reading()
        self._abort_timer = self._loop.call_later(
            min(_LINGER, self._settings.close_timeout), self._linger_over)

    def _linger_over(self) -> None:
        self._abort_timer = None
        transport = self.transport
        if transport is None or self._lost:
            return
        transport.close()
        if transport.get_write_buffer_size():  # not taken yet: abort at close_timeout
            self._abort_timer = self._loop.call_later(
                max(self._settings.close_timeout - _LINGER, 0.0), self._abort)

    def _abort(self) -> None:
        self._abort_timer = None
        if self.transport is not None and not self._lost:
            log.info("conn %d %s: peer did not take its last bytes in %gs, aborting",
                     self.conn_id, self._who(), self._settings.close_timeout)
            self.transport.abort()

    def _tell_lost(self, reason: str, graceful: bool, code: int | None = None) -> None:
        if self._port is not None and not self._lost_told:
            self._lost_told = True
            self._tell(ConnectionLost(self.conn_id, reason, graceful, code))

    def _tell(self, message: ConnectionLost | Drained) -> None:
        if self._port is None:
            return
        try:
            self._port.tell(message)
        except Exception as exc:
            log.warning("conn %d %s: session port refused %s: %r", self.conn_id, self._who(),
                        type(message).__name__, exc)
            if not self._closing:
                self._shutdown(f"session unavailable: {exc!r}", graceful=False)

    def _cancel_timer(self) -> None:
        self._idle.cancel()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
