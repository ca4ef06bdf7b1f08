"""Actors layer: the gateway, from an accepted CONNECT to a session actor. Stdlib, pykka, supervisors, session, codec.

The transport calls :meth:`SessionGateway.connect` synchronously on the loop
thread when a connection's CONNECT arrives (the contract is
``actorbroker.ports.Gateway``; this module only relies on its
shape, it never imports the transport). The gateway drives the CONNECT
rules; which rule refuses with which code, and in which order, is the table
of ``session/connect.py``:

1. :func:`~actorbroker.session.decide` applies the rules that need no
   state (the node moved, protocol level, client id, Will, keepalive);
2. :class:`~.login.Login` the ones that need the node's state (throttle,
   password, anonymous clients, client id from the user name and its
   patterns, the Will's ACL, the session's owner). A password is checked
   off the loop (``password_checks``): the gateway returns the connection's
   port at once, holding, and goes on when the answer is back;
3. an MQTT 5 CONNECT naming an Authentication Method the node serves runs
   its exchange in an :class:`~.enhanced_auth.AuthPort` first and is dispatched only
   once it succeeded (:meth:`SessionGateway.authenticated`);
4. otherwise it finds the session actor of the client id in the name table,
   or starts one under the Sessions sharded supervisor (sharded by client
   id), tells it ``Attach`` through a :class:`ConnectionPort` and returns
   that port: every later message of the connection goes through it.

A refusal (:meth:`SessionGateway.refuse`) queues the CONNACK the rule built
(``session.refuse``), closes the connection and returns None; a failed
login's waits ``Refused.delay`` (``call_later``), its connection meanwhile
pointed at a port that drops reads.

Starting an actor is asynchronous. Until its ref is known the port holds
what it is told and forwards it, in order, once the ref is there; a second
CONNECT of the same client id meanwhile joins the same start (one creation
in flight per client id), so Attaches reach the session in CONNECT order
and the later one takes the earlier over ([MQTT-3.1.4-2]).

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
from actorbroker.codec import Connect, ConnectReturnCode, protocol_name, shown
from actorbroker.ports import Connection, Inbound, SessionPort
from actorbroker.session import Accepted, Refused, auth_method_served, decide, refuse
from supervisors import ChildSpec, LoopFuture, Restart, Teller, start_sharded_child

from ..messages import Attach
from ..names import Asleep, Singleton, Waking
from ..node import Node
from ..session import SessionActor
from ..sessions.start import StartMode
from .enhanced_auth import AuthPort
from .login import Admitted, Login
from .password_checks import PasswordChecks

__all__ = ["ConnectionPort", "SessionGateway"]

log = logging.getLogger("actorbroker.session")


class _Closed:
    """Where a port points once its session could not be started: everything is dropped."""

    __slots__ = ()

    def tell(self, message: object) -> None:
        return None


_CLOSED = _Closed()


class ConnectionPort:
    """The session port of one connection: forwards to a session actor, or holds until there is one."""

    __slots__ = ("target", "_held")

    def __init__(self) -> None:
        self.target: Teller | None = None
        self._held: list[object] = []

    def tell(self, message: object) -> None:
        """Forward ``message`` to the session (ActorDeadError if it died), or hold it."""
        target = self.target
        if target is None:
            self._held.append(message)
        else:
            target.tell(message)

    def bind(self, ref: Teller) -> None:
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

    def take_held(self) -> list[object]:
        """Remove and return what is held, and drop everything from now on."""
        held, self._held = self._held, []
        self.target = _CLOSED
        return held


class _Refusing:
    """Where a port points while a refused login waits for its CONNACK: reads are dropped."""

    __slots__ = ("_conn",)

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def tell(self, message: object) -> None:
        if type(message) is Inbound:
            self._conn.batch_done()  # its read credit back; the packets are not handled


class SessionGateway:
    """Implements the transport's ``Gateway``: CONNECT -> session port (loop thread only)."""

    def __init__(self, node: Node, call_later: Callable[..., object], passwords: PasswordChecks,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._node = node
        self._starting: dict[str, list[ConnectionPort]] = {}
        self._call_later = call_later
        self._passwords = passwords
        self.login = Login(node.settings, node.owners, clock)

    def connect(self, conn: Connection, packet: Connect) -> SessionPort | None:
        """Accept or refuse ``packet`` (the rules: ``session/connect.py``); never raises for a
        peer's sake. The connection's port, or None if it was refused."""
        identity = conn.identity
        decision = decide(packet, self._node.settings.connect, identity=identity)
        if isinstance(decision, Refused):
            return self.refuse(conn, decision)
        login, packet = self.login, decision.connect
        if identity is None and login.password_needed(packet):
            throttled = login.throttled(conn.peer[0], packet)
            if throttled is not None:
                return self.refuse(conn, throttled)
            # Held until the hash is checked off the loop (password_checks.py): read credit
            # pauses the client meanwhile, a session start holds the same way.
            port = ConnectionPort()
            security = self._node.settings.security
            assert security is not None and packet.username is not None
            self._passwords.check(security.check_password, packet.username,
                                  packet.password or b"",
                                  partial(self._checked, conn, decision, port))
            return port
        admitted = login.admit(conn.peer[0], packet, decision.client_id,
                               verified=identity is not None)
        return self._admitted(conn, decision.assigned, admitted)

    def _checked(self, conn: Connection, decision: Accepted, port: ConnectionPort, ok: bool) -> None:
        """The password of ``decision``'s CONNECT was checked: go on with the login, through
        ``port``."""
        if conn.closed:  # gone meanwhile: what it sent goes nowhere, nothing was claimed
            port.take_held()
            return
        admitted = self.login.admit(conn.peer[0], decision.connect, decision.client_id,
                                    checked=ok)
        target = self._admitted(conn, decision.assigned, admitted, port)
        if target is None:
            port.take_held()
        elif target is not port:  # a refusal's, which drops reads and gives their credit back
            port.bind(target)

    def _admitted(self, conn: Connection, assigned: bool, admitted: Admitted | Refused,
                  port: ConnectionPort | None = None) -> SessionPort | None:
        """After the login: refuse, or attach to the session through ``port`` (a new one if
        None); what the connection tells from now on, or None if it was refused."""
        if isinstance(admitted, Refused):
            return self.refuse(conn, admitted)
        packet, client_id = admitted.connect, admitted.client_id
        if assigned or client_id != packet.client_id:
            conn.client_id = client_id
        auth = self._node.settings.auth
        refused = auth_method_served(packet, () if auth is None else auth.methods)
        if refused is not None:
            return self.refuse(conn, refused)
        port = ConnectionPort() if port is None else port
        attach = Attach(conn, packet, client_id, assigned, port, claim=admitted.claim,
                        owner=self.login.taken_from(client_id, packet))
        method = packet.properties.authentication_method if packet.protocol_level == 5 else None
        if method is None:
            self._dispatch(attach)
            return port
        # auth_method_served let the method through: the node serves it.
        authenticator = None if auth is None else auth.get(method)
        assert authenticator is not None
        auth_port = AuthPort(self, attach, Exchange(authenticator, client_id))
        port.bind(auth_port)
        auth_port.start()
        return port

    def refuse(self, conn: Connection, refused: Refused) -> SessionPort | None:
        """Carry out ``refused``: now, or after its delay (the connection meanwhile points at
        a port that drops its reads, which this returns; None otherwise)."""
        if refused.delay <= 0:
            _send_refusal(conn, refused)
            return None
        self._call_later(refused.delay, _refuse_if_open, conn, refused)
        return _Refusing(conn)

    def authenticated(self, attach: Attach) -> None:
        """The enhanced authentication of ``attach``'s CONNECT succeeded: attach it now.

        ``attach.connect`` carries the authenticated user name; the session is
        claimed for that user here.
        """
        claimed = self.login.claim(attach.client_id, attach.connect)
        if isinstance(claimed, Refused):
            attach.port.take_held()
            _send_refusal(attach.conn, claimed)
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
        entry: Any = names.sessions.get(client_id)
        match entry:
            case None:
                mode = StartMode.FRESH
            case Asleep():
                # Reason: a hibernated session has no actor, and its client connects.
                # Precondition: the keeper must not expire it, nor send its Will, while its
                # actor loads it; topic actors must keep leaving its messages to the fold
                # (counted, never raised) rather than find no session and drop them.
                # Solution: the entry becomes Waking (it takes Delivers as Asleep does, the
                # keeper defers its deadlines) until the actor registers its own ref; a
                # failed start puts the same Asleep back (_started).
                names.register_session(client_id, Waking(entry))  # type: ignore[arg-type]
                mode = StartMode.WAKE
            case Waking():
                # Reason: Waking, but no start in flight (none in _starting). It should not
                # happen: the actor registers its ref first thing in on_start, the
                # supervisor reports a start only after on_start, and a start that failed
                # put Asleep back (_started).
                # Precondition: if it ever does, the log holds the session: never FRESH.
                # Solution: wake it again; the entry stays Waking until the actor registers.
                mode = StartMode.WAKE
            case _:
                try:
                    port.bind(entry)
                    return
                except ActorDeadError:
                    names.unregister_session(client_id, entry)
                    mode = StartMode.FRESH
        self._starting[client_id] = [port]
        self._start(client_id, mode)

    def _start(self, client_id: str, mode: StartMode) -> None:
        node = self._node
        sessions = node.names.whereis(Singleton.SESSIONS)
        if sessions is None:
            self._started(client_id, None)
            return
        spec = ChildSpec(
            id=client_id,
            start=SessionStarter(client_id, node, SessionActor.start, self.redispatch, mode),
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
        if ref is None:
            names = self._node.names
            entry: object = names.sessions.get(client_id)
            if type(entry) is Waking:  # it stays asleep: the keeper may expire it again
                asleep: Any = entry.asleep
                names.register_session(client_id, asleep)
        for port in ports:
            if ref is not None:
                try:
                    port.bind(ref)
                    continue
                except ActorDeadError:
                    pass
            for message in port.take_held():
                if isinstance(message, Attach):
                    _send_refusal(message.conn, refuse(
                        message.connect, ConnectReturnCode.SERVER_UNAVAILABLE,
                        "the session could not be started"))


class SessionStarter:
    """A session child's start function; the first call starts it in ``mode`` (FRESH or
    WAKE: the gateway's choice), later ones are its supervisor's restarts (RESTART).

    Each session gets the gateway's ``redispatch``, for the Attaches that reach it
    while it retires (a callable, so that the node need not hold the gateway).
    """

    __slots__ = ("_client_id", "_mode", "_node", "_redispatch", "_start")

    def __init__(self, client_id: str, node: Node, start: Callable[..., ActorRef[Any]],
                 redispatch: Callable[[Attach], None], mode: StartMode = StartMode.FRESH) -> None:
        self._client_id = client_id
        self._node = node
        self._start = start
        self._redispatch = redispatch
        self._mode = mode

    def __call__(self) -> ActorRef[Any]:
        mode, self._mode = self._mode, StartMode.RESTART
        ref: ActorRef[Any] = self._start(self._client_id, self._node, redispatch=self._redispatch,
                                         start=mode)
        return ref


def _refuse_if_open(conn: Connection, refused: Refused) -> None:
    """A delayed refusal: unless the client went meanwhile."""
    if not conn.closed:
        _send_refusal(conn, refused)


def _send_refusal(conn: Connection, refused: Refused) -> None:
    """Queue the refusing CONNACK (if the version has one for it), log, and close."""
    host, port = conn.peer
    log.info("refused client %s from %s:%s (%s): %s", shown(conn.client_id), host, port,
             protocol_name(conn.protocol_level), refused.reason)
    if refused.connack is not None:
        conn.send((refused.connack,))
    conn.close(reason=refused.reason)
