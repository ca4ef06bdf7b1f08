"""Transport layer: one MQTT connection over any asyncio byte stream. Imports stdlib, asyncio, codec and ports.

:class:`MqttConnection` is an ``asyncio.Protocol``: it works the same over a
TCP transport, a TLS one (asyncio's SSL protocol wraps it) or a WebSocket
adapter that presents the frames' payload as a byte stream
(:mod:`.websocket`); it never touches a socket. It owns the codec's
:class:`~actorbroker.codec.Decoder`, applies the connection-state table
(:mod:`actorbroker.codec.states`), enforces the connect timeout and the
keepalive, and turns each read into one ``Inbound`` for the session port. It
is also the ``Connection`` the session writes to (the contract is in
:mod:`actorbroker.ports`).

Output goes through an :class:`~.output.WriteBuffer` (one ``transport.write``
per loop tick, bounded, congestion reported); the state table and the
packets held until CONNACK live in an :class:`~.gate.InboundGate`. Input
credit: each Inbound carries one of ``max_batches`` read credits
(:class:`~.credit.ReadCredits`), back once what the read routed was taken
by the subscribers' sessions, or after ``credit_timeout``; with none left,
reading pauses. Nothing raises out of the
asyncio callbacks: a peer's mistake closes its connection, a collaborator's
bug is logged and closes the connection. How it ends (violations, failures,
timeouts, the flush-then-close shutdown, telling the session once) is in
:class:`~.endings.ConnectionEndings`, a mixin, to keep this module short.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, cast

from actorbroker.codec import (
    ConnAck,
    Connect,
    Decoder,
    Packet,
    Properties,
    ProtocolError,
    ReasonCode,
    encode,
    shown,
)
from actorbroker.codec.states import ConnectionState
from actorbroker.ports import Connection, Drained, Gateway, Inbound, SessionPort

from .credit import ReadCredits
from .endings import ConnectionEndings
from .gate import InboundGate
from .output import FlushQueue, WriteBuffer
from .overload import OverloadGuard
from .settings import ConnectionSettings
from .stats import TransportStats
from .timers import IdleTimer, StallTimer
from .trace import trace, trace_bytes, traced

__all__ = ["MqttConnection"]

log = logging.getLogger("actorbroker.transport")

_S = ConnectionState
_ids = itertools.count(1)
_PAUSE_CREDIT = 1  # reasons reading is paused (bits)
_PAUSE_HELD = 2
_PAUSE_CHUNKS = 4
#: A read bigger than _BULK is decoded in the loop's bulk lane (``defer``), _CHUNK
#: bytes at a time, reading paused meanwhile. A read brings up to 256 KiB: a storm
#: client's twelve 1,000-filter SUBSCRIBEs decoded and handed on at once took the
#: loop from everyone else for 100 ms and more; small reads (most clients' PUBLISH,
#: PUBACK, PINGREQ) are decoded at once, as they come.
_BULK = 4096
_CHUNK = 8192
_SNIFF = 16  # bytes kept before CONNECT to learn a malformed CONNECT's level


class MqttConnection(ConnectionEndings, asyncio.Protocol):
    """An MQTT server connection: asyncio protocol below, ``Connection`` above."""

    def __init__(self, gateway: Gateway, settings: ConnectionSettings, stats: TransportStats,
                 loop: asyncio.AbstractEventLoop, flushes: FlushQueue,
                 guard: OverloadGuard | None = None,
                 defer: Callable[[Callable[[], None]], None] | None = None) -> None:
        self.conn_id: int = next(_ids)
        self.peer: tuple[str, int] = ("", 0)
        self.client_id: str | None = None
        #: This connection's share of the listener's counters (the busiest-clients view).
        self.packets_in = 0
        self.packets_out = 0
        self.bytes_in = 0
        self._transport: asyncio.Transport | None = None
        #: Called once with this connection when its socket is gone (the listener's hook).
        self.on_lost: Callable[[MqttConnection], None] | None = None
        #: The listener's name, for log lines about what arrived on the wrong one.
        self.listener = ""
        #: use_identity_as_username: the user named by the verified client certificate
        #: (``peercert`` -> name), set by a TLS listener before the handshake; the
        #: result is :attr:`identity`, which the gateway uses as the user name.
        self.identify: Callable[[object], str | None] | None = None
        self.identity: str | None = None
        self._gateway = gateway
        self._guard = guard
        self._settings = settings
        self._stats = stats
        self._loop = loop
        self._decoder = Decoder(max_packet_size=settings.max_packet_size,
                                max_connect_size=settings.max_connect_size)
        self._gate = InboundGate()
        self._port: SessionPort | None = None
        self._head = b""
        self._dispatching = False
        self._paused = 0
        self._defer = loop.call_soon if defer is None else defer
        self._rest: bytes | None = None  # a large read, decoded _CHUNK at a time from _rest_at
        self._rest_at = 0  # (an offset: slicing off each chunk copied the read's tail every time)
        self._rest_due = False  # a _feed_rest is deferred
        self._credits = ReadCredits(self.conn_id, loop, settings.max_batches, settings.credit_timeout, stats,
                                    self._credit_free)
        self._outbox = WriteBuffer(flushes, stats, settings.high_water, settings.max_output,
                                   self._after_flush)
        self._close_after_flush = False
        self._closing = False
        self._lost = False
        self._lost_told = False
        self._idle = IdleTimer(loop, self._keepalive_expired, self._held)
        self._stall = StallTimer(loop, settings.connect_timeout, self._packet_stalled, self._held,
                                 self._buffered_in)
        self._timer: asyncio.TimerHandle | None = None  # the connect timeout
        self._abort_timer: asyncio.TimerHandle | None = None
        #: An MQTT 5 client that allows Reason Strings (Request Problem Information).
        self._problem_info = False
        #: Its client id matches [log] trace: decided at CONNECT, tested per read and send.
        self._traced = False

    # -- Connection API (for the session; loop thread only) -------------------

    @property
    def transport(self) -> asyncio.Transport | None:
        """The byte-stream transport (None before connection_made and after connection_lost)."""
        return self._transport

    @transport.setter
    def transport(self, transport: asyncio.Transport | None) -> None:
        # Settable so that a wrapper (a test probe, a WebSocket adapter) can sit in between.
        self._transport = transport
        self._outbox.transport = transport

    @property
    def bytes_out(self) -> int:
        """Bytes written to this connection's socket."""
        return self._outbox.bytes_out

    @property
    def protocol_level(self) -> int | None:
        """3, 4 or 5 once CONNECT has arrived, else None."""
        return self._decoder.protocol_level

    @property
    def state(self) -> ConnectionState:
        """Where the connection stands in ``codec/states.py``'s table."""
        return self._gate.state

    @property
    def closed(self) -> bool:
        """True once the connection has ended or is closing."""
        return self._closing

    @property
    def buffered_bytes(self) -> int:
        """Output queued here and in the transport, not yet taken by the kernel."""
        return self._outbox.buffered

    @property
    def congested(self) -> bool:
        """True while the socket has paused us or more than ``high_water`` is buffered."""
        return self._outbox.congested

    def send(self, packets: Iterable[Packet]) -> None:
        """Encode ``packets`` at this connection's level and queue them for the next flush."""
        if self._closing:
            return
        level = self._decoder.protocol_level
        if level is None:
            raise RuntimeError("send() before CONNECT: the protocol level is unknown")
        if self._traced:
            packets = list(packets)  # maybe a generator: read twice
            trace("out", self.client_id or "", self.peer, packets)
        connack: ConnAck | None = None
        chunks = []
        size = 0
        for packet in packets:
            data = encode(packet, level)
            chunks.append(data)
            size += len(data)
            if type(packet) is ConnAck:
                connack = packet
        if self._admit(chunks, size):
            self._stats.packets_out += len(chunks)
            self.packets_out += len(chunks)
            if connack is not None and not self._gate.connack_sent:
                self._on_connack(connack)

    def send_bytes(self, data: bytes) -> None:
        """Queue already encoded packets (whole packets only)."""
        if not self._closing and self._admit([data], len(data)):
            if self._traced:
                trace_bytes(self.client_id or "", self.peer, len(data))
            self._stats.packets_out += 1
            self.packets_out += 1

    def batch_done(self) -> None:
        """The oldest Inbound was processed and nothing handed on: its read credit is back."""
        self._credits.batch_done()

    def close(self, reason_code: int | None = None, reason: str = "",
              properties: Properties | None = None) -> None:
        """Flush, say goodbye (v5 DISCONNECT, or CONNACK before any), close. Idempotent.

        ``properties`` go in that v5 packet (e.g. a Server Reference); ``reason_code``
        also goes to the session, in ``ConnectionLost.code``, for every version.
        """
        if self._closing:
            return
        if reason_code is not None and self.protocol_level == 5:
            self._goodbye(reason_code, properties=properties)
        self._shutdown(reason or "closed by the server", graceful=True, code=reason_code)

    def set_keepalive(self, seconds: int) -> None:
        """Close after 1.5 x ``seconds`` without a packet ([MQTT-3.1.2-24]); 0 disables."""
        if not self._closing and self._gate.state is not _S.AWAIT_CONNECT:
            self._idle.set(1.5 * seconds)

    # -- asyncio.Protocol callbacks ------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport = cast(asyncio.Transport, transport)  # uvloop's does not subclass it
        self.transport = transport
        peer = transport.get_extra_info("peername")
        if isinstance(peer, tuple) and len(peer) >= 2:
            self.peer = (str(peer[0]), int(peer[1]))
        high = self._settings.high_water
        transport.set_write_buffer_limits(high=high, low=high // 4)
        self._stats.connections_current += 1
        if self._closing:  # close() came while the transport was being set up
            transport.close()
            return
        if self.identify is not None:
            self.identity = self.identify(transport.get_extra_info("peercert"))
            if self.identity is None:
                log.warning("conn %d %s: listener %s: the client certificate names no user "
                            "(no CN, no subjectAltName): closing", self.conn_id, self._who(),
                            self.listener)
                self._shutdown("client certificate without a name", graceful=False)
                return
        self._idle.touch()
        self._timer = self._loop.call_later(self._settings.connect_timeout, self._connect_timeout)

    def data_received(self, data: bytes) -> None:
        if self._closing:
            return
        self._stats.bytes_in += len(data)
        self.bytes_in += len(data)
        if self._rest is not None or len(data) > _BULK:
            if self._rest is None:
                self._rest = data
            else:  # arrived before the pause took effect
                self._rest, self._rest_at = self._rest[self._rest_at:] + data, 0
            if not self._paused & _PAUSE_CHUNKS:
                self._pause(_PAUSE_CHUNKS)
                self._rest_due = True
                self._defer(self._feed_rest)
            return
        self._feed(data)

    def _feed_rest(self) -> None:
        """Decode the next chunk of a large read; the next one from the bulk lane."""
        self._rest_due = False
        rest = self._rest
        if rest is None or self._closing or self._paused & _PAUSE_CREDIT:
            return  # closing: dropped; paused for credit: _credit_free defers it again
        at = self._rest_at
        self._rest_at = at + _CHUNK
        if self._rest_at >= len(rest):
            self._rest, self._rest_at = None, 0
        self._feed(rest[at:at + _CHUNK])
        if self._rest is None:
            self._unpause(_PAUSE_CHUNKS)
        elif not self._closing and not self._paused & _PAUSE_CREDIT:
            self._rest_due = True
            self._defer(self._feed_rest)

    def _feed(self, data: bytes) -> None:
        try:
            if self._gate.state is _S.AWAIT_CONNECT and len(self._head) < _SNIFF:
                self._head += data[:_SNIFF]
            decoder = self._decoder
            packets = decoder.feed(data)
            if decoder.buffered and (packets or not self._stall.armed):
                self._stall.started()  # a packet began in this read and is not finished
            if packets:
                self._stats.packets_in += len(packets)
                self.packets_in += len(packets)
                self._idle.touch()
                self._dispatch(packets)
                if self._traced:  # after: the read's CONNECT may have just turned it on
                    trace("in", self.client_id or "", self.peer, packets)
        except ProtocolError as exc:
            self._violation(exc)
        except Exception:  # a bug (ours or a collaborator's): never out of a callback
            log.exception("conn %d %s: internal error on input", self.conn_id, self._who())
            self._fail("internal error")

    def eof_received(self) -> bool:
        return False  # MQTT has no half-close: let the transport close

    def connection_lost(self, exc: Exception | None) -> None:
        while self._rest is not None and not self._closing:  # read before it went: decode it
            rest, at = self._rest, self._rest_at
            self._rest, self._rest_at = None, 0
            self._feed(rest[at:])
        self._rest = None
        self._lost = True
        self._cancel_timer()
        if self._abort_timer is not None:
            self._abort_timer.cancel()
            self._abort_timer = None
        self._stats.connections_current -= 1
        self._credits.detach()
        self._outbox.detach()
        self._idle.detach()
        self._stall.detach()
        self.transport = None
        if not self._closing:
            self._closing = True
            if self._gate.state is _S.CLOSED:  # gone while its session answered its DISCONNECT
                self._tell_lost("client sent DISCONNECT", True, ReasonCode.NORMAL_DISCONNECTION)
            else:
                reason = (f"connection lost: {exc}" if exc
                          else "closed by the client without DISCONNECT")
                self._tell_lost(reason, graceful=False)
        if self.on_lost is not None:
            try:
                self.on_lost(self)
            except Exception:
                log.exception("conn %d: on_lost hook failed", self.conn_id)

    def pause_writing(self) -> None:
        self._outbox.write_paused = True

    def resume_writing(self) -> None:
        self._outbox.write_paused = False
        self._check_drained()

    # -- input ---------------------------------------------------------------

    def _dispatch(self, packets: list[Packet]) -> None:
        """Route one read's packets through the state table: connect, deliver, hold, close."""
        routed = self._gate.route(packets)
        self._dispatching = True
        try:
            if routed.connect is not None and not self._on_connect(routed.connect):
                return
            if routed.deliver and not self._closing:
                self._deliver(tuple(routed.deliver))
        finally:
            self._dispatching = False
        if routed.error is not None:
            self._violation(routed.error)
        elif self._gate.held:
            if self._gate.connack_ok:  # the gateway accepted synchronously
                self._release()
            else:
                self._pause(_PAUSE_HELD)
        elif routed.disconnected:
            self._disconnected(routed.deliver[-1])

    def _on_connect(self, packet: Connect) -> bool:
        """Hand the CONNECT to the gateway; False if the connection did not survive it."""
        self._cancel_timer()
        self._head = b""
        self.client_id = packet.client_id
        patterns = self._settings.trace
        self._traced = bool(patterns) and traced(patterns, packet.client_id)
        self._problem_info = (packet.protocol_level == 5
                              and packet.properties.request_problem_information != 0)
        self.set_keepalive(packet.keepalive)
        if self._guard is not None and self._guard.busy:
            self._refuse_busy(self._guard.busy)
            return False
        try:
            port = self._gateway.connect(self, packet)
        except Exception:
            log.exception("conn %d %s: gateway.connect failed", self.conn_id, self._who())
            self._fail("gateway failed")
            return False
        if port is None:
            self.close(reason="refused by the gateway")
            return False
        self._port = port
        if self._closing:  # closed during connect() yet given a port: still say so once
            self._tell_lost("closed during CONNECT", graceful=True)
            return False
        return True

    def _on_connack(self, connack: ConnAck) -> None:
        """The session answered the CONNECT: release held packets, or close after a refusal."""
        self._gate.connack(connack.reason_code)
        if connack.reason_code != 0:
            self._close_after_flush = True  # [MQTT-3.2.2-7]
            self._stats.refused(connack.reason_code, self.protocol_level == 5)
        elif not self._dispatching:  # else _dispatch releases them after its own batch
            self._release()

    def _release(self) -> None:
        held = self._gate.release()
        if held and not self._closing:
            self._unpause(_PAUSE_HELD)
            self._dispatch(held)

    def _deliver(self, batch: tuple[Packet, ...]) -> None:
        assert self._port is not None
        credits = self._credits
        try:
            self._port.tell(Inbound(self.conn_id, batch, credits.issue()))
        except Exception as exc:  # the session actor is dead: nobody to serve this client
            log.warning("conn %d %s: session port refused Inbound: %r", self.conn_id, self._who(), exc)
            self._fail(f"session unavailable: {exc!r}")
            return
        if credits.exhausted and not self._paused & _PAUSE_CREDIT:
            self._stats.read_pauses += 1
            self._pause(_PAUSE_CREDIT)
            credits.wait()

    def _credit_free(self) -> None:
        if self._paused & _PAUSE_CREDIT:
            self._unpause(_PAUSE_CREDIT)
            if self._rest is not None and not self._rest_due:
                self._rest_due = True
                self._defer(self._feed_rest)

    def _pause(self, reason: int) -> None:
        if not self._paused and self.transport is not None and not self._closing:
            self.transport.pause_reading()
        self._paused |= reason

    def _unpause(self, reason: int) -> None:
        was = self._paused
        self._paused &= ~reason
        if was and not self._paused and self.transport is not None and not self._closing:
            self.transport.resume_reading()
            self._idle.touch()  # time paused by us is not the client's silence

    def _held(self) -> bool:
        """Reading is paused by us: the peer's silence is ours."""
        return bool(self._paused)

    def _buffered_in(self) -> int:
        return self._decoder.buffered

    # -- output --------------------------------------------------------------

    def _admit(self, chunks: list[bytes], size: int) -> bool:
        """Queue output; past ``max_output`` close the connection instead (False)."""
        if self._outbox.add(chunks, size):
            return True
        self._stats.output_overflows += 1
        log.warning("conn %d %s: over %d bytes of output waiting: closing", self.conn_id,
                    self._who(), self._settings.max_output)
        self._outbox.clear()
        self._shutdown("output buffer overflow", graceful=False, abort=True)
        return False

    def _after_flush(self) -> None:
        if self._close_after_flush and not self._closing:
            self._shutdown("CONNACK refused the connection", graceful=True)
        else:
            self._check_drained()

    def _check_drained(self) -> None:
        if not self._closing and self._outbox.drained():
            self._tell(Drained(self.conn_id))

    # -- identity ------------------------------------------------------------

    def _who(self) -> str:
        host, port = self.peer
        who = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        return who if self.client_id is None else f"{who} client {shown(self.client_id)}"

    def __repr__(self) -> str:
        return f"<MqttConnection {self.conn_id} {self._who()} {self._gate.state.name}>"


if TYPE_CHECKING:
    def _implements(conn: MqttConnection) -> Connection:
        return conn  # mypy checks that MqttConnection satisfies the Connection protocol
