"""Transport layer: MQTT listeners over TCP, TLS, WebSocket and WebSocket over TLS. Imports stdlib, asyncio, codec, ports and websockets.

    stats = TransportStats()
    listener = await start_listener(config.listeners[0], config.limits, gateway, stats)
    listener.port                        # the real port, also when configured as 0
    listener.reload_certificates()       # tls/wss: SIGHUP; the files are also polled
    ...
    await listener.close()               # stop accepting
    await listener.close_all()           # v5 clients get DISCONNECT 0x8B, then all close

A :class:`Listener` owns its listening sockets (one per address the bind
name resolves to, both loopbacks for ``localhost``; bound by
:func:`bind_listener`, possibly before the listener starts), an
:class:`~.acceptor.Acceptor` per socket, and the set of its live
connections. Each accepted socket becomes one
:class:`~.connection.MqttConnection` through
``loop.connect_accepted_socket``, with the listener's current TLS context
as its ``ssl=`` (tls, wss: :mod:`.tls`) and a
:class:`~.websocket.WebSocketAdapter` between the socket and the
connection (ws, wss). The choice is made once per connection; a tcp
connection's reads take the same path as before TLS existed.

A TLS listener first peeks at the socket's first byte: anything but a TLS
handshake record (plain MQTT, usually) is logged in one line naming the
listener and the peer, and closed (a ClientHello on a tcp or ws listener:
:mod:`.endings`, :mod:`.websocket`). Its files are looked at every
``CERTIFICATE_POLL`` seconds and reloaded when they changed;
:meth:`Listener.reload_certificates` does it at once (SIGHUP).

Beyond ``max_connections`` live connections (0: unlimited), or beyond the
per-address limits (:class:`~.admission.Admission`), a new socket is
accepted and closed at once, counted in ``connections_refused`` and
logged (at most one line per 5 s). While the
:class:`~.overload.OverloadGuard` says the broker is overloaded, the
connections refuse their CONNECT. Listeners start last and stop first
(docs/architecture.md, "The tree"): ``close`` stops accepting; the caller then ends the sessions
and calls ``close_all``.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import ssl
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from actorbroker.codec import NO_PROPERTIES, Properties, ReasonCode
from actorbroker.ports import Gateway

from .acceptor import Acceptor
from .admission import Admission
from .connection import MqttConnection
from .output import FlushQueue
from .overload import OverloadGuard
from .settings import ConnectionSettings, LimitsLike, ListenerLike
from .stats import LogLimiter, TransportStats
from .tls import Certificates, TlsOptions, certificate_identity, peek_first_byte
from .websocket import WebSocketAdapter

__all__ = ["Listener", "bind_listener", "start_listener"]

log = logging.getLogger("actorbroker.transport")

_TLS_TYPES = ("tls", "wss")
#: Seconds between two looks at a TLS listener's files (mtime, size, inode).
CERTIFICATE_POLL = 5.0


async def start_listener(config: ListenerLike, limits: LimitsLike, gateway: Gateway,
                         stats: TransportStats, *, settings: ConnectionSettings | None = None,
                         backlog: int = 1024, sockets: list[socket.socket] | None = None,
                         guard: OverloadGuard | None = None,
                         defer: Callable[[Callable[[], None]], None] | None = None) -> Listener:
    """Bind ``config.bind``:``config.port`` and start accepting MQTT connections.

    ``settings`` overrides what is derived from ``limits``
    (:meth:`ConnectionSettings.from_limits`). ``sockets``, from
    :func:`bind_listener`, are used instead of binding anew: the broker binds
    before it starts anything else, so that a port in use fails the start
    before a data directory is touched. ``guard`` refuses CONNECTs while the
    broker is overloaded. ``defer`` runs the rest of a large read later, in the
    loop's bulk lane (the actors' run queue: ``supervisors.runqueue``;
    default: ``loop.call_soon``). Raises ``OSError`` if the address
    cannot be bound, and ``OSError``/``ssl.SSLError`` if a TLS listener's
    files cannot be loaded (a startup failure, for the supervisor).
    """
    loop = asyncio.get_running_loop()
    certificates = None
    if config.type in _TLS_TYPES:  # before binding: a bad file leaves no socket behind
        certificates = Certificates(TlsOptions.of(config), f"{config.type} {config.bind}:{config.port}")
    if sockets is None:
        sockets = await bind_listener(config.bind, config.port, backlog)
    admission = Admission(config.max_connections_per_ip, config.max_connect_rate_per_ip)
    listener = Listener(loop, sockets, gateway, settings or ConnectionSettings.from_limits(limits),
                        stats, max_connections=config.max_connections, kind=config.type,
                        certificates=certificates, path=config.path, admission=admission,
                        guard=guard, defer=defer)
    listener.start()
    return listener


class Listener:
    """Listening sockets and the connections accepted through them (loop thread only)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, sockets: list[socket.socket],
                 gateway: Gateway, settings: ConnectionSettings, stats: TransportStats, *,
                 max_connections: int = 0, kind: str = "tcp",
                 certificates: Certificates | None = None, path: str = "/mqtt",
                 poll_interval: float = CERTIFICATE_POLL, admission: Admission | None = None,
                 guard: OverloadGuard | None = None,
                 defer: Callable[[Callable[[], None]], None] | None = None) -> None:
        if (kind in _TLS_TYPES) != (certificates is not None):
            raise ValueError(f"a {kind!r} listener needs certificates exactly when it is tls or wss")
        self._loop = loop
        self._sockets = tuple(sockets)
        self._gateway = gateway
        self._settings = settings
        self._stats = stats
        self._flushes = FlushQueue(loop)  # its connections' output, one flush a loop tick
        self._max = max_connections
        self._admission = admission if admission is not None and admission.limited else None
        self._guard = guard
        self._defer = defer  # None: each connection defers with loop.call_soon
        self._conns: dict[int, MqttConnection] = {}
        self._ips: dict[int, str] = {}  # conn_id -> source address, while admission counts
        self._tasks: set[asyncio.Task[None]] = set()
        #: How to drop a connection that is not MQTT yet (a TLS first byte or handshake,
        #: a WebSocket upgrade under way): close_all cannot ask it to say goodbye.
        self._pending: dict[int, Callable[[], object]] = {}
        self._acceptors = [Acceptor(loop, s, self._on_accept, stats) for s in sockets]
        self._limiter = LogLimiter(log)
        self._idle: asyncio.Future[None] | None = None
        self._closed = False
        self._port = int(sockets[0].getsockname()[1])
        self.kind = kind
        self.name = f"{kind} " + ", ".join(_address(s) for s in sockets)
        self._websocket = kind in ("ws", "wss")
        self._path = path
        #: The TLS context new handshakes use, and its reload (tls and wss only).
        self.certificates = certificates
        if certificates is not None:
            certificates.name = self.name
        self._poll_interval = poll_interval
        self._poll: asyncio.TimerHandle | None = None
        #: What v5 clients are told by :meth:`close_all` by default: 0x8B, or a
        #: redirection (0x9C/0x9D with a Server Reference) the app configures.
        self.farewell: tuple[int, Properties] = (ReasonCode.SERVER_SHUTTING_DOWN, NO_PROPERTIES)

    @property
    def sockets(self) -> tuple[socket.socket, ...]:
        """The listening sockets."""
        return self._sockets

    @property
    def port(self) -> int:
        """The port of the first socket (the real one when 0 was asked for)."""
        return self._port

    @property
    def connections(self) -> Mapping[int, MqttConnection]:
        """Live connections by ``conn_id`` (read-only view)."""
        return MappingProxyType(self._conns)

    @property
    def settings(self) -> ConnectionSettings:
        """What every connection of this listener is held to."""
        return self._settings

    def start(self) -> None:
        """Begin accepting on every socket."""
        for acceptor in self._acceptors:
            acceptor.start()
        if self.certificates is not None:
            self._poll = self._loop.call_later(self._poll_interval, self._check_certificates)
        log.info("listening for MQTT on %s", self.name)

    def reload_certificates(self) -> bool:
        """Load the TLS files anew (SIGHUP): new handshakes use them, open connections stay.

        A failure keeps the previous certificates and logs why. False on a
        failure, True otherwise (also on a listener without TLS: nothing to do).
        """
        return self.certificates is None or self.certificates.reload()

    def _check_certificates(self) -> None:
        self._poll = None
        if self._closed or self.certificates is None:
            return
        try:
            if self.certificates.changed():
                self.certificates.reload()
        finally:
            self._poll = self._loop.call_later(self._poll_interval, self._check_certificates)

    async def close(self) -> None:
        """Stop accepting and close the listening sockets; connections stay open."""
        if self._closed:
            return
        self._closed = True
        if self._poll is not None:
            self._poll.cancel()
            self._poll = None
        for acceptor in self._acceptors:
            acceptor.stop()
        for sock in self._sockets:
            sock.close()
        log.info("stopped listening on %s", self.name)

    async def close_all(self, reason_code: int | None = None,
                        timeout: float | None = None) -> None:
        """Close every connection (v5: DISCONNECT ``reason_code``) and wait until all are gone.

        Without ``reason_code``, v5 clients get :attr:`farewell` (0x8B by
        default). Each connection flushes its output first; one whose peer
        does not read is aborted after ``close_timeout`` (or ``timeout`` here).
        """
        code, properties = self.farewell if reason_code is None else (reason_code, None)
        for conn in list(self._conns.values()):
            drop = self._pending.pop(conn.conn_id, None) if conn.transport is None else None
            if drop is not None:
                drop()
            else:
                conn.close(code, "server shutting down", properties)
        if not self._conns:
            return
        self._idle = self._loop.create_future()
        wait = self._settings.close_timeout + 1.0 if timeout is None else timeout
        try:
            await asyncio.wait_for(asyncio.shield(self._idle), wait)
        except asyncio.TimeoutError:
            for conn in list(self._conns.values()):
                if conn.transport is not None:
                    conn.transport.abort()
            await asyncio.wait_for(asyncio.shield(self._idle), 1.0)

    def _on_accept(self, sock: socket.socket, address: Any) -> None:
        if self._closed:
            sock.close()
            return
        if self._max and len(self._conns) >= self._max:
            self._stats.connections_refused += 1
            self._limiter.warning(self._loop.time(), "listener %s: %d connections, the maximum:"
                                  " closing a new one from %s", self.name, self._max, address)
            sock.close()
            return
        ip = str(address[0]) if isinstance(address, tuple) else ""
        if self._admission is not None:
            why = self._admission.admit(ip, self._loop.time())
            if why is not None:
                self._stats.connections_refused += 1
                self._limiter.warning(self._loop.time(), "listener %s: %s: closing a new one",
                                      self.name, why)
                sock.close()
                return
        self._stats.connections_accepted += 1
        sock.setblocking(False)
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = MqttConnection(self._gateway, self._settings, self._stats, self._loop,
                              self._flushes, self._guard, self._defer)
        conn.on_lost = self._forget
        self._conns[conn.conn_id] = conn
        if self._admission is not None:
            self._ips[conn.conn_id] = ip
        task = self._loop.create_task(self._attach(conn, sock))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _attach(self, conn: MqttConnection, sock: socket.socket) -> None:
        """Wrap the socket in a transport driving ``conn``: TLS first (tls, wss), WebSocket (ws, wss)."""
        conn.listener = self.name
        protocol: asyncio.BaseProtocol | None
        try:
            if self.certificates is None:
                _, protocol = await self._loop.connect_accepted_socket(self._protocol(conn), sock)
            else:
                task = asyncio.current_task()
                assert task is not None
                self._pending[conn.conn_id] = task.cancel
                protocol = await self._tls(conn, sock)
                self._pending.pop(conn.conn_id, None)
            if isinstance(protocol, WebSocketAdapter) and not protocol.open:
                self._pending[conn.conn_id] = protocol.abort
        except asyncio.CancelledError:  # close_all while the handshake was under way
            self._unattached(conn, sock)
        except Exception as exc:  # e.g. the peer reset before the transport existed
            log.info("listener %s: could not set up a connection: %r", self.name, exc)
            self._unattached(conn, sock)

    async def _tls(self, conn: MqttConnection, sock: socket.socket) -> asyncio.BaseProtocol | None:
        """The TLS handshake, after checking that the client starts one; None if it failed."""
        assert self.certificates is not None
        who = _peer(sock)  # for the log lines of a failure, when the peer may be gone
        if not await self._tls_first(sock, conn, who):
            return None
        if self.certificates.options.use_identity_as_username:
            conn.identify = certificate_identity
        try:
            _, protocol = await self._loop.connect_accepted_socket(
                self._protocol(conn), sock, ssl=self.certificates.context,
                ssl_handshake_timeout=self._settings.connect_timeout)
        except ssl.SSLError as exc:
            log.info("listener %s: TLS handshake with %s failed: %s", self.name, who,
                     exc.reason or exc)
            self._unattached(conn, sock)
            return None
        return protocol

    def _protocol(self, conn: MqttConnection) -> Callable[[], asyncio.Protocol]:
        """What drives the socket: ``conn`` itself, or a WebSocket adapter around it."""
        if not self._websocket:
            return lambda: conn
        return lambda: WebSocketAdapter(
            conn, path=self._path, loop=self._loop, listener=self.name, on_failed=self._forget,
            max_frame=max(self._settings.max_packet_size, 65536),
            handshake_timeout=self._settings.connect_timeout)

    async def _tls_first(self, sock: socket.socket, conn: MqttConnection, who: str) -> bool:
        """Whether the first byte (peeked: it stays for the handshake) starts a TLS record.

        Anything else (plain MQTT, usually) gets one log line and is closed;
        so is a socket that sends nothing within ``connect_timeout``.
        """
        first = await peek_first_byte(self._loop, sock, self._settings.connect_timeout)
        if first == b"\x16":
            return True
        if first is None:
            log.info("listener %s: no TLS handshake from %s within %gs, closing", self.name,
                     who, self._settings.connect_timeout)
        elif first:
            what = ("plain MQTT (CONNECT)" if first[0] >> 4 == 1
                    else f"not TLS (first byte 0x{first[0]:02x})")
            log.warning("listener %s: %s from %s on a TLS listener: closing (the client must "
                        "use TLS)", self.name, what, who)
        self._unattached(conn, sock)
        return False

    def _unattached(self, conn: MqttConnection, sock: socket.socket) -> None:
        sock.close()
        if conn.transport is None:
            self._forget(conn)

    def _forget(self, conn: MqttConnection) -> None:
        self._conns.pop(conn.conn_id, None)
        self._pending.pop(conn.conn_id, None)
        ip = self._ips.pop(conn.conn_id, None)
        if ip is not None and self._admission is not None:
            self._admission.release(ip)
        if not self._conns and self._idle is not None and not self._idle.done():
            self._idle.set_result(None)


#: RFC 6761: "localhost" is the loopback. Resolvers differ (a /etc/hosts may map
#: it to 127.0.0.1 only), and clients that try ::1 first must reach the broker too.
_LOOPBACKS = ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1"))


def _is_localhost(host: str) -> bool:
    name = host.lower().rstrip(".")
    return name == "localhost" or name.endswith(".localhost")


async def bind_listener(host: str, port: int, backlog: int = 1024) -> list[socket.socket]:
    """Listening, non-blocking sockets on every address ``host`` resolves to.

    ``localhost`` also gets both loopback addresses, whatever the resolver
    says; ::1 is left out on a host without IPv6 loopback. Raises
    ``OSError`` (``socket.gaierror`` when the name does not resolve).
    """
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host or None, port, family=socket.AF_UNSPEC,
                                   type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    addresses = [(family, kind, proto, address) for family, kind, proto, _, address in infos]
    optional = []
    if _is_localhost(host):
        for family, ip in _LOOPBACKS:
            if not any(a[0] == family and a[3][0] == ip for a in addresses):
                optional.append((family, socket.SOCK_STREAM, socket.IPPROTO_TCP, (ip, port)))
    sockets: list[socket.socket] = []
    seen = set()
    try:
        for index, (family, kind, proto, address) in enumerate([*addresses, *optional]):
            if (family, address) in seen:
                continue
            seen.add((family, address))
            if port == 0 and sockets:  # every socket of a listener on one port
                address = (address[0], sockets[0].getsockname()[1], *address[2:])
            try:
                sockets.append(_listen(family, kind, proto, address, backlog))
            except OSError as exc:
                if index >= len(addresses) and exc.errno in _NO_FAMILY:
                    continue  # no IPv6 (or IPv4) loopback on this host
                raise
    except OSError:
        for sock in sockets:
            sock.close()
        raise
    if not sockets:
        raise OSError(f"{host!r} resolves to no address to listen on")
    return sockets


_NO_FAMILY = (errno.EAFNOSUPPORT, errno.EADDRNOTAVAIL)


def _listen(family: int, kind: int, proto: int, address: Any, backlog: int) -> socket.socket:
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(address)
        sock.listen(backlog)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


def _peer(sock: socket.socket) -> str:
    try:
        host, port = sock.getpeername()[:2]
    except OSError:
        return "a peer gone already"
    return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"


def _address(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"
