"""Transport layer: MQTT listeners (TCP now). Imports stdlib, asyncio, codec and messages.

    stats = TransportStats()
    listener = await start_listener(config.listeners[0], config.limits, gateway, stats)
    listener.port                        # the real port, also when configured as 0
    ...
    await listener.close()               # stop accepting
    await listener.close_all()           # v5 clients get DISCONNECT 0x8B, then all close

A :class:`Listener` owns its listening sockets (one per address the bind
name resolves to, both loopbacks for ``localhost``; bound by
:func:`bind_listener`, possibly before the listener starts), an
:class:`~.acceptor.Acceptor` per socket, and the set of its live
connections. Each accepted socket becomes one
:class:`~.connection.MqttConnection` through
``loop.connect_accepted_socket``: the seam where TLS (its ``ssl=``
argument) and WebSocket (a protocol that unwraps frames around the
MqttConnection) slot in later without touching the connection.

Beyond ``max_connections`` live connections (0: unlimited), or beyond the
per-address limits (:class:`~.admission.Admission`), a new socket is
accepted and closed at once, counted in ``connections_refused`` and
logged (at most one line per 5 s). While the
:class:`~.overload.OverloadGuard` says the broker is overloaded, the
connections refuse their CONNECT. Listeners start last and stop first
(DESIGN.md): ``close`` stops accepting; the caller then ends the sessions
and calls ``close_all``.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from actorbroker.codec import NO_PROPERTIES, Properties, ReasonCode

from .acceptor import Acceptor
from .admission import Admission
from .connection import MqttConnection
from .gateway import Gateway
from .output import FlushQueue
from .overload import OverloadGuard
from .settings import ConnectionSettings, LimitsLike, ListenerLike
from .stats import LogLimiter, TransportStats

__all__ = ["Listener", "bind_listener", "start_listener"]

log = logging.getLogger("actorbroker.transport")


async def start_listener(config: ListenerLike, limits: LimitsLike, gateway: Gateway,
                         stats: TransportStats, *, settings: ConnectionSettings | None = None,
                         backlog: int = 1024, sockets: list[socket.socket] | None = None,
                         guard: OverloadGuard | None = None) -> Listener:
    """Bind ``config.bind``:``config.port`` and start accepting MQTT connections.

    ``settings`` overrides what is derived from ``limits``
    (:meth:`ConnectionSettings.from_limits`). ``sockets``, from
    :func:`bind_listener`, are used instead of binding anew: the broker binds
    before it starts anything else, so that a port in use fails the start
    before a data directory is touched. ``guard`` refuses CONNECTs while the
    broker is overloaded. Raises ``OSError`` if the address
    cannot be bound (a startup failure, for the supervisor).
    """
    loop = asyncio.get_running_loop()
    if sockets is None:
        sockets = await bind_listener(config.bind, config.port, backlog)
    admission = Admission(config.max_connections_per_ip, config.max_connect_rate_per_ip)
    listener = Listener(loop, sockets, gateway, settings or ConnectionSettings.from_limits(limits),
                        stats, max_connections=config.max_connections, admission=admission,
                        guard=guard)
    listener.start()
    return listener


class Listener:
    """Listening sockets and the connections accepted through them (loop thread only)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, sockets: list[socket.socket],
                 gateway: Gateway, settings: ConnectionSettings, stats: TransportStats, *,
                 max_connections: int = 0, admission: Admission | None = None,
                 guard: OverloadGuard | None = None) -> None:
        self._loop = loop
        self._sockets = tuple(sockets)
        self._gateway = gateway
        self._settings = settings
        self._stats = stats
        self._flushes = FlushQueue(loop)  # its connections' output, one flush a loop tick
        self._max = max_connections
        self._admission = admission if admission is not None and admission.limited else None
        self._guard = guard
        self._conns: dict[int, MqttConnection] = {}
        self._ips: dict[int, str] = {}  # conn_id -> source address, while admission counts
        self._tasks: set[asyncio.Task[None]] = set()
        self._acceptors = [Acceptor(loop, s, self._on_accept, stats) for s in sockets]
        self._limiter = LogLimiter(log)
        self._idle: asyncio.Future[None] | None = None
        self._closed = False
        self._port = int(sockets[0].getsockname()[1])
        self.name = ", ".join(_address(s) for s in sockets)
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
        log.info("listening for MQTT on %s", self.name)

    async def close(self) -> None:
        """Stop accepting and close the listening sockets; connections stay open."""
        if self._closed:
            return
        self._closed = True
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
                              self._flushes, self._guard)
        conn.on_lost = self._forget
        self._conns[conn.conn_id] = conn
        if self._admission is not None:
            self._ips[conn.conn_id] = ip
        task = self._loop.create_task(self._attach(conn, sock))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _attach(self, conn: MqttConnection, sock: socket.socket) -> None:
        """Wrap the socket in a transport driving ``conn`` (TLS/WS: here)."""
        try:
            await self._loop.connect_accepted_socket(lambda: conn, sock)
        except Exception as exc:  # e.g. the peer reset before the transport existed
            log.info("listener %s: could not set up a connection: %r", self.name, exc)
            sock.close()
            if conn.transport is None:
                self._forget(conn)

    def _forget(self, conn: MqttConnection) -> None:
        self._conns.pop(conn.conn_id, None)
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


def _address(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"
