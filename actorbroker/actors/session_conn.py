"""Actors layer: a session's connections coming and going, as a SessionActor mixin. Stdlib, pykka, codec, session, auth.

A session outlives its connections. ``Attach`` hands it a new one (a
CONNECT the gateway routed here): a connection still attached is taken over
([MQTT-3.1.4-2]: closed, its Will published if due), the core attaches the
new one and the durable state, if any, resumes. ``ConnectionLost`` detaches
it: the core decides about the Will and the session's end, and a durable
session may hibernate once nothing is pending; first PUBLISHes still held
for the commit log will never reach that connection, and the core hears so
first (their resend is then DUP=0, :mod:`.sessions.output`). ``Drained`` (the socket took
what was buffered) releases the queue held while it was congested. A session that is retiring
hands an ``Attach`` back to the gateway and forwards what later arrives for
that connection (:meth:`ConnectionLifecycle._forward_or`). The client id is in
the name table's ``online`` set while a connection is attached (shared
subscriptions prefer online members). With an ACL, each attach gives the
core the attached client's rights (``auth.ClientAcl``); ``Reauthorize``
(the ACL file was reloaded) gives it the new ones.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from actorbroker.auth import ClientAcl
from actorbroker.codec import SHOWN_LENGTH, ConnAck, protocol_name, shown
from actorbroker.ports import ConnectionLost, Drained
from actorbroker.session import Effect, Send, SessionCore, SessionState

from .messages import Attach
from .sessions.journal.interface import Journal
from .sessions.output import CHUNK, Output
from .sessions.retransmit import Retransmitter

__all__ = ["ConnectionLifecycle", "peer"]

log = logging.getLogger("actorbroker.session")

def _session_present(effects: list[Effect]) -> bool:
    """Whether the CONNACK among ``effects`` says Session Present."""
    for effect in effects:
        if type(effect) is Send:
            for packet in effect.packets:
                if type(packet) is ConnAck:
                    return packet.session_present
    return False


def peer(conn: Any) -> str:
    """``host:port`` of a connection's peer, for the log."""
    host, port = conn.peer
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def about(client_id: str, conn: Any) -> dict[str, str]:
    """The ``extra`` of a log line about one client (JSON lines show it as keys of their
    own, actorbroker/logsetup.py): its id, cut as in messages, and its peer."""
    cut = client_id if len(client_id) <= SHOWN_LENGTH else shown(client_id)
    return {"client_id": cut, "peer": peer(conn)}


class ConnectionLifecycle:
    """What SessionActor does when connections attach and go (see the module doc)."""

    client_id: str
    _core: SessionCore
    connection: Any
    _conn_id: int
    _close_code: int | None
    _forward: dict[int, Any]
    #: Wall-clock time its last connection ended (None: never connected to this actor).
    last_seen: float | None = None
    _retired: bool
    #: Hands an Attach that reached this retiring actor back to the gateway.
    _redispatch: Callable[[Attach], None]
    _reauth: Any
    _journal: Journal
    _node: Any
    _names: Any
    _metrics: Any
    #: The gateway's claim of the client id for the attached user (actors/connect/owners.py), and
    #: that user: the session gives its owner up with this claim when it ends.
    _claim: int = 0
    _user: str | None = None

    _run: Callable[[list[Effect]], None]
    _output: Output
    _retransmitter: Retransmitter

    if TYPE_CHECKING:
        def _retire(self) -> None: ...

        def _now(self) -> float: ...

    def _forward_or(self, conn_id: int, message: Any) -> bool:
        """Pass a message of a handed-back connection on; False if it is not one."""
        port = self._forward.get(conn_id)
        if port is None:
            return False
        if type(message) is ConnectionLost:
            del self._forward[conn_id]
        port.tell(message)
        return True

    def _attach(self, attach: Attach) -> None:
        conn = attach.conn
        if self._retired:
            self._forward[conn.conn_id] = attach.port
            self._redispatch(attach)
            return
        if conn.closed:
            log.info("client %s from %s: connection closed before it was attached",
                     shown(self.client_id), peer(conn))
            if self._core.state is SessionState.NEW and self.connection is None:
                # Started for this connection alone: nothing to keep, not even the owner
                # its CONNECT claimed (else one entry per such client id, forever).
                self._node.owners.release(self.client_id, attach.claim)
                self._retire()
            return
        now = self._now()
        old = self.connection
        if old is not None:
            log.info("client %s disconnected from %s: taken over by a new connection from %s"
                     " [MQTT-3.1.4-2]", shown(self.client_id), peer(old), peer(conn),
                     extra=about(self.client_id, old))
            self._run(self._core.take_over(now))  # closes the old connection, maybe its Will
            self.connection = None
            self._close_code = None  # that Close was the old connection's
            self._metrics.disconnected()
        self.connection, self._conn_id = conn, conn.conn_id
        self._metrics.connected()
        connect = attach.connect
        self._names.online.add(self.client_id)
        self._reauth = None
        self._retransmitter.reset()
        effects = self._core.attach(connect, now, assigned=attach.assigned,
                                    auth_data=attach.auth_data)
        self._claim, self._user = attach.claim, connect.username
        effects += self._core.authorize(self._grants())
        # After attach: its CONNACK's Session Present is what "resumed" means to the client.
        log.info("client %s connected from %s (%s, clean session %d, keepalive %ds%s%s%s)",
                 shown(self.client_id), peer(conn), protocol_name(connect.protocol_level),
                 connect.clean_start, connect.keepalive,
                 "" if connect.username is None else f", user {connect.username!r}",
                 ", id assigned" if attach.assigned else "",
                 ", session resumed" if _session_present(effects) else "",
                 extra=about(self.client_id, conn))
        journal = self._journal
        journal.attached(connect, self._core, peer(conn), now, attach.owner)
        self._run(effects)
        journal.pump()

    def _grants(self) -> ClientAcl | None:
        """The ACL's rules for this client id and the attached user (None: no ACL)."""
        security = self._node.settings.security
        acl = None if security is None else security.acl
        return None if acl is None else acl.for_client(self._user, self.client_id)

    def _reauthorize(self) -> None:
        """The ACL was reloaded: the client's rights, its subscriptions re-checked (also
        while it is offline, as the user it last attached as: nothing more is queued for
        a revoked subscription). A session this actor never attached waits for its CONNECT."""
        if self._claim or self.connection is not None:
            self._run(self._core.authorize(self._grants()))

    def _lost(self, message: ConnectionLost) -> None:
        conn = self.connection
        if conn is None or message.conn_id != self._conn_id:
            self._forward_or(message.conn_id, message)  # else: a taken-over connection
            return
        self.connection = None
        self._names.online.discard(self.client_id)
        self.last_seen = time.time()  # when its client went: the admin API shows it
        self._retransmitter.reset()
        journal = self._journal
        reason = message.reason
        code = message.code if self._close_code is None else self._close_code
        self._close_code = None
        log.info("client %s disconnected from %s: %s", shown(self.client_id), peer(conn), reason,
                 extra=about(self.client_id, conn))
        self._output.unwritten(journal.held_for(conn))  # held for the log: this connection never gets them
        effects = self._core.detach(self._now())
        journal.detached(self._core, reason, code)
        self._run(effects)
        # Counted once its Will is routed (with storage: after the log has it).
        journal.when_released(self._metrics.disconnected)
        journal.settle()

    def _drained(self, message: Drained) -> None:
        conn, core = self.connection, self._core
        if conn is None or message.conn_id != self._conn_id:
            self._forward_or(message.conn_id, message)
            return
        now = self._now()
        while core.attached:
            effects = core.release_output(now, CHUNK)
            if not effects:
                return  # queue empty, or waiting for the inflight window
            self._run(effects)
            if conn.congested:
                core.hold_output()
                return
