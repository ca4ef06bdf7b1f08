"""Transport layer: how an MQTT connection ends, as a mixin of MqttConnection. Imports stdlib, asyncio, codec and messages.

Every way out of :class:`~actorbroker.transport.connection.MqttConnection`
meets here: the peer broke the protocol, something on our side failed, no
CONNECT came in time, the keepalive expired, or the server closes it. Each
says goodbye the way the client's version allows (MQTT 5: DISCONNECT with a
reason code, or a CONNACK if nothing was answered yet), flushes what is
queued, closes the transport (aborting it if the peer does not take its last
bytes within ``close_timeout``) and tells the session exactly once
(``ConnectionLost``). It lives apart so that the connection module stays one
readable file (STYLE.md: under 400 lines); none of it is on the per-packet
path, and the methods are found on the class like any other.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from actorbroker.codec import ConnAck, Properties, ProtocolError, ReasonCode, encode
from actorbroker.codec.states import ConnectionState
from actorbroker.messages import ConnectionLost, Drained

from .gate import InboundGate, sniff_level
from .gateway import SessionPort
from .output import Outbox
from .settings import ConnectionSettings
from .stats import TransportStats
from .timers import IdleTimer

__all__ = ["ConnectionEndings"]

log = logging.getLogger("actorbroker.transport")

_S = ConnectionState


class ConnectionEndings:
    """The endings of :class:`~actorbroker.transport.connection.MqttConnection` (see the module doc)."""

    # MqttConnection's state, declared for the type checker (MqttConnection sets it).
    conn_id: int
    _settings: ConnectionSettings
    _stats: TransportStats
    _loop: asyncio.AbstractEventLoop
    _gate: InboundGate
    _port: SessionPort | None
    _head: bytes
    _outbox: Outbox
    _closing: bool
    _lost: bool
    _lost_told: bool
    _idle: IdleTimer
    _timer: asyncio.TimerHandle | None
    _abort_timer: asyncio.TimerHandle | None
    _problem_info: bool

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
        """The peer broke the protocol: log the rule, say why (v5), close."""
        if self._closing:
            return
        self._stats.protocol_errors += 1
        log.warning("conn %d %s: protocol error, closing: %s", self.conn_id, self._who(), exc)
        level = self.protocol_level or sniff_level(self._head)
        if exc.reason_code == ReasonCode.UNSUPPORTED_PROTOCOL_VERSION and not self._gate.connack_sent:
            # [MQTT-3.1.2-2] (3.1.1): CONNACK 0x01 in the form every version can read.
            self._queue(encode(ConnAck(False, 0x01), 4))
            self._gate.connack_sent = True
        elif level == 5:
            self._goodbye(exc.reason_code, reason=str(exc))
        self._shutdown(str(exc), graceful=False)

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

    def _keepalive_expired(self) -> None:
        if self._closing:
            return
        self._stats.keepalive_timeouts += 1
        log.info("conn %d %s: keepalive expired (%gs without a packet), closing",
                 self.conn_id, self._who(), self._idle.limit)
        if self.protocol_level == 5:
            self._goodbye(ReasonCode.KEEP_ALIVE_TIMEOUT)  # the code says it all
        self._shutdown("keepalive timeout", graceful=False)

    # -- closing -----------------------------------------------------------------

    def _shutdown(self, reason: str, *, graceful: bool, abort: bool = False) -> None:
        """Flush what is queued, close the transport, tell the session once."""
        if self._closing:
            return
        self._closing = True
        self._cancel_timer()
        self._gate.held.clear()
        transport = self.transport
        if transport is not None and not self._lost:
            if abort:
                transport.abort()
            else:
                self._outbox.flush()
                transport.close()
                self._abort_timer = self._loop.call_later(self._settings.close_timeout,
                                                          self._abort)
        self._tell_lost(reason, graceful)

    def _abort(self) -> None:
        self._abort_timer = None
        if self.transport is not None and not self._lost:
            log.info("conn %d %s: peer did not take its last bytes in %gs, aborting",
                     self.conn_id, self._who(), self._settings.close_timeout)
            self.transport.abort()

    def _tell_lost(self, reason: str, graceful: bool) -> None:
        if self._port is not None and not self._lost_told:
            self._lost_told = True
            self._tell(ConnectionLost(self.conn_id, reason, graceful))

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
