"""Actors layer: the gateway, from an accepted CONNECT to a session actor. Stdlib, pykka, supervisors, session, codec.

The transport calls :meth:`SessionGateway.connect` synchronously on the loop
thread when a connection's CONNECT arrives (the contract is
``actorbroker.transport.gateway.Gateway``; this module only relies on its
shape, it never imports the transport). The gateway:

1. applies :func:`~actorbroker.session.check_connect` (protocol level,
   client id rules, Will, and the keepalive limit): a refusal queues the
   CONNACK with its return code, closes the connection, returns None;
2. finds the session actor of the client id in the name table, or starts
   one under the Sessions sharded supervisor (sharded by client id);
3. tells it ``Attach`` through a :class:`ConnectionPort` and returns that
   port: every later message of the connection goes through it.

Starting an actor is asynchronous. Until its ref is known the port holds
what it is told and forwards it, in order, once the ref is there; a second
CONNECT of the same client id meanwhile joins the same start (one creation
in flight per client id), so Attaches reach the session in CONNECT order
and the later one takes the earlier over ([MQTT-3.1.4-2]).

MQTT 5 (and credentials): a CONNECT is refused while the node redirects
clients for good (``server_moved``: CONNACK 0x9D with the Server Reference,
MQTT 3: 0x03); one naming an Authentication Method the node does not serve
gets 0x8C; one naming a served method runs its exchange in an
:class:`~.auth.AuthPort` first and is dispatched only once it succeeded
(:meth:`SessionGateway.authenticated`). User names and passwords, anonymous
clients, the Will's topic and the session's owner are checked by
:class:`~.login.Login`; a failed login gets its CONNACK after a delay
(``call_later``), its connection meanwhile pointed at a port that drops reads.
On a TLS listener with use_identity_as_username the verified client
certificate authenticates (``conn.identity``): its name replaces the
CONNECT's user name and password, and no password is checked (Mosquitto's
rule); the ACL and the session's owner still apply to that name.

A session that retires (its clean session ended) while an Attach was on
its way hands it back with :meth:`SessionGateway.redispatch`; the gateway
re-points that connection's port at the session that serves the client id
now. The port costs one Python call per read, not per packet.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from pykka import ActorDeadError, ActorRef

from actorbroker.auth import Exchange
from actorbroker.codec import (
    ConnAck,
    Connect,
    ConnectReturnCode,
    Properties,
    ReasonCode,
    protocol_name,
    shown,
)
from actorbroker.messages import Inbound
from actorbroker.session import Refused, check_connect, refuse
from supervisors import ChildSpec, LoopFuture, Restart, start_sharded_child

from .auth import AuthPort
from .keeper import Sleeping
from .login import Admitted, Login, Verdict
from .messages import Attach
from .node import Node
from .password_checks import PasswordChecks
from .session import SessionActor

__all__ = ["ConnectionPort", "SessionGateway"]

log = logging.getLogger("actorbroker.session")


class _Closed:
    """Where a port points once its session could not be started: everything is dropped."""

    __slots__ = ()

    def tell(self, message: Any) -> None:
        return None


_CLOSED = _Closed()


class ConnectionPort:
    """The session port of one connection: forwards to a session actor, or holds until there is one."""

    __slots__ = ("target", "_held")

    def __init__(self) -> None:
        self.target: Any = None
        self._held: list[Any] = []

    def tell(self, message: Any) -> None:
        """Forward ``message`` to the session (ActorDeadError if it died), or hold it."""
        target = self.target
        if target is None:
            self._held.append(message)
        else:
            target.tell(message)

    def bind(self, ref: Any) -> None:
        """Point at ``ref``; forward what was held, in order.

        If ``ref`` is dead (ActorDeadError), what was not forwarded stays held
        and the port stays unbound.
        """
        held = self._held
        while held:
            ref.tell(held[0])
            del held[0]
        self.target = ref

    def unbind(self) -> None:
        """Hold again (the session is being replaced)."""
        self.target = None

    def take_held(self) -> list[Any]:
        """Remove and return what is held, and drop everything from now on."""
        held, self._held = self._held, []
        self.target = _CLOSED
        return held


class _Refusing:
    """Where a port points while a refused login waits for its CONNACK: reads are dropped."""

    __slots__ = ("_conn",)

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def tell(self, message: Any) -> None:
        if type(message) is Inbound:
            self._conn.batch_done()  # its read credit back; the packets are not handled


class SessionGateway:
    """Implements the transport's ``Gateway``: CONNECT -> session port (loop thread only)."""

    def __init__(self, node: Node, call_later: Callable[..., Any], passwords: PasswordChecks,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._node = node
        self._starting: dict[str, list[ConnectionPort]] = {}
        self._call_later = call_later
        self._passwords = passwords
        self.login = Login(node.settings, node.owners, clock)

    def connect(self, conn: Any, packet: Connect) -> Any:
        """Accept or refuse ``packet`` (see the module doc); never raises for a peer's sake."""
        settings = self._node.settings
        if settings.server_moved:
            _refuse(conn, _moved(packet, settings.server_reference),
                    f"server moved to {settings.server_reference!r} (configuration)", packet)
            return None
        identity = conn.identity
        if identity is not None:  # the listener verified a client certificate naming this user
            packet = dataclasses.replace(packet, username=identity, password=None)
        decision = check_connect(packet, settings.connect)
        if isinstance(decision, Refused):
            _refuse(conn, decision.connack, decision.reason, packet)
            return None
        if packet.protocol_level != 5 and packet.keepalive > settings.max_keepalive:
            # A 3.x client cannot be told a Server Keep Alive: refuse it, as Mosquitto does.
            _refuse(conn, ConnAck(False, ConnectReturnCode.IDENTIFIER_REJECTED),
                    f"keepalive {packet.keepalive}s above max_keepalive {settings.max_keepalive}s")
            return None
        login = self.login
        if identity is None and login.password_needed(packet):
            throttled = login.throttled(conn.peer[0], packet)
            if throttled is not None:
                return self._refuse_login(conn, packet, throttled)
            # Held until the hash is checked off the loop (password_checks.py): read credit
            # pauses the client meanwhile, a session start holds the same way.
            port = ConnectionPort()
            security = settings.security
            assert security is not None and packet.username is not None
            self._passwords.check(security.check_password, packet.username,
                                  packet.password or b"",
                                  partial(self._checked, conn, packet, decision.client_id,
                                          decision.assigned, port))
            return port
        admitted = login.admit(conn.peer[0], packet, decision.client_id,
                               verified=identity is not None)
        return self._admitted(conn, packet, decision.assigned, admitted)

    def _checked(self, conn: Any, packet: Connect, client_id: str, assigned: bool,
                 port: ConnectionPort, ok: bool) -> None:
        """The password of ``packet`` was checked: go on with the login, through ``port``."""
        if conn.closed:  # gone meanwhile: what it sent goes nowhere, nothing was claimed
            port.take_held()
            return
        admitted = self.login.admit(conn.peer[0], packet, client_id, checked=ok)
        target = self._admitted(conn, packet, assigned, admitted, port)
        if target is None:
            port.take_held()
        elif target is not port:  # a refusal's, which drops reads and gives their credit back
            port.bind(target)

    def _admitted(self, conn: Any, packet: Connect, assigned: bool,
                  admitted: Admitted | Verdict, port: ConnectionPort | None = None) -> Any:
        """After the login: refuse, or attach to the session through ``port`` (a new one if
        None); what the connection tells from now on, or None if it was refused."""
        if isinstance(admitted, Verdict):
            return self._refuse_login(conn, packet, admitted)
        settings = self._node.settings
        packet, client_id, claim = admitted.connect, admitted.client_id, admitted.claim
        method = packet.properties.authentication_method if packet.protocol_level == 5 else None
        if assigned or client_id != packet.client_id:
            conn.client_id = client_id
        port = ConnectionPort() if port is None else port
        attach = Attach(conn, packet, client_id, assigned, port, claim=claim,
                        owner=self.login.taken_from(client_id, packet))
        if method is None:
            self._dispatch(attach)
            return port
        authenticator = None if settings.auth is None else settings.auth.get(method)
        if authenticator is None:
            _refuse(conn, ConnAck(False, ReasonCode.BAD_AUTHENTICATION_METHOD),
                    f"authentication method {method!r} not served", packet)
            return None
        auth_port = AuthPort(self, attach, Exchange(authenticator, client_id))
        port.bind(auth_port)
        auth_port.start()
        return port

    def _refuse_login(self, conn: Any, packet: Connect, verdict: Verdict) -> Any:
        """Refuse now, or after the verdict's delay (the connection waits, its reads dropped)."""
        connack = refuse(packet, verdict.code, verdict.reason).connack
        if verdict.delay <= 0 or self._call_later is None:
            _refuse(conn, connack, verdict.reason, packet)
            return None
        self._call_later(verdict.delay, _refuse_if_open, conn, connack, verdict.reason, packet)
        return _Refusing(conn)

    def authenticated(self, attach: Attach) -> None:
        """The enhanced authentication of ``attach``'s CONNECT succeeded: attach it now.

        ``attach.connect`` carries the authenticated user name; the session is
        claimed for that user here.
        """
        claimed = self.login.claim(attach.client_id, attach.connect)
        if isinstance(claimed, Verdict):
            attach.port.take_held()
            _refuse(attach.conn, refuse(attach.connect, claimed.code, claimed.reason).connack,
                    claimed.reason, attach.connect)
            return
        attach.port.unbind()
        self._dispatch(dataclasses.replace(
            attach, claim=claimed, owner=self.login.taken_from(attach.client_id, attach.connect)))

    def redispatch(self, attach: Attach) -> None:
        """A retiring session got ``attach``: route it (and its port) to the current session."""
        attach.port.unbind()
        self._dispatch(attach)

    # -- routing ------------------------------------------------------------

    def _dispatch(self, attach: Attach) -> None:
        port: ConnectionPort = attach.port
        client_id = attach.client_id
        port.tell(attach)  # held until bound
        waiting = self._starting.get(client_id)
        if waiting is not None:  # a start is in flight: join it, keep CONNECT order
            waiting.append(port)
            return
        names = self._node.names
        ref: Any = names.sessions.get(client_id)  # a session actor or a Sleeping
        if ref is not None:
            try:
                port.bind(ref)
                return
            except ActorDeadError:
                # A hibernated session's placeholder keeps its name until the new actor
                # registers: topic actors meanwhile leave logged messages to the fold
                # (the actor loads them) instead of finding no session and dropping them.
                if type(ref) is not Sleeping:
                    names.unregister_session(client_id, ref)
        self._starting[client_id] = [port]
        self._start(client_id)

    def _start(self, client_id: str) -> None:
        node = self._node
        sessions = node.refs.sessions
        if sessions is None:
            self._started(client_id, None)
            return
        spec = ChildSpec(
            id=client_id,
            start=SessionStarter(client_id, node, SessionActor.start),
            restart=Restart.TRANSIENT,
        )
        future: LoopFuture[ActorRef[Any]] = start_sharded_child(sessions, client_id, spec)
        future.add_done_callback(partial(self._on_started, client_id))

    def _on_started(self, client_id: str, future: LoopFuture[ActorRef[Any]]) -> None:
        try:
            ref: ActorRef[Any] | None = future.get()
        except Exception as exc:
            log.error("could not start the session of client %s: %r", shown(client_id), exc)
            ref = None
        try:
            self._started(client_id, ref)
        except Exception:  # runs inside the supervisor's reply: never raise there
            log.exception("gateway: handing connections to client %s's session failed",
                          shown(client_id))

    def _started(self, client_id: str, ref: ActorRef[Any] | None) -> None:
        ports = self._starting.pop(client_id, [])
        if ref is None:  # a woken session stays asleep: the keeper may expire it again
            self._node.woken.discard(client_id)
        for port in ports:
            if ref is not None:
                try:
                    port.bind(ref)
                    continue
                except ActorDeadError:
                    pass
            for message in port.take_held():
                if isinstance(message, Attach):
                    _refuse(message.conn, ConnAck(False, ConnectReturnCode.SERVER_UNAVAILABLE),
                            "the session could not be started")


class SessionStarter:
    """A session child's start function; the first call starts it fresh, later ones are restarts."""

    __slots__ = ("_client_id", "_node", "_start", "_starts")

    def __init__(self, client_id: str, node: Node, start: Any) -> None:
        self._client_id = client_id
        self._node = node
        self._start = start
        self._starts = 0

    def __call__(self) -> ActorRef[Any]:
        self._starts += 1
        ref: ActorRef[Any] = self._start(self._client_id, self._node, restarted=self._starts > 1)
        return ref


def _moved(packet: Connect, reference: str) -> ConnAck:
    """The CONNACK of a node that moved for good: v5 0x9D with the reference, 3.x 0x03."""
    if packet.protocol_level != 5:
        return ConnAck(False, ConnectReturnCode.SERVER_UNAVAILABLE)
    return ConnAck(False, ReasonCode.SERVER_MOVED, Properties(server_reference=reference))


def _refuse_if_open(conn: Any, connack: ConnAck | None, reason: str, packet: Connect) -> None:
    """A delayed login refusal: unless the client went meanwhile."""
    if not conn.closed:
        _refuse(conn, connack, reason, packet)


def _refuse(conn: Any, connack: ConnAck | None, reason: str, packet: Connect | None = None
            ) -> None:
    """Queue the refusing CONNACK (if the version has one for it) and close.

    An MQTT 5 CONNACK carries ``reason`` as its Reason String unless the
    CONNECT asked for no problem information ([MQTT-3.1.2-29]).
    """
    if (connack is not None and packet is not None and packet.protocol_level == 5
            and packet.properties.request_problem_information != 0
            and connack.properties.reason_string is None):
        connack = ConnAck(connack.session_present, connack.reason_code, dataclasses.replace(
            connack.properties, reason_string=reason[:200]))
    host, port = conn.peer
    log.info("refused client %s from %s:%s (%s): %s", shown(conn.client_id), host, port,
             protocol_name(conn.protocol_level), reason)
    if connack is not None:
        conn.send((connack,))
    conn.close(reason=reason)
