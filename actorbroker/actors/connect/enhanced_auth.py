"""Actors layer: MQTT 5 enhanced authentication at CONNECT and re-authentication. Stdlib, pykka, codec, session, auth, messages.

At CONNECT (:class:`AuthPort`): a v5 CONNECT that names an Authentication
Method is not attached to its session yet. The gateway points the
connection's port at an AuthPort, which runs the :class:`~actorbroker.auth.Exchange`
on the loop thread (SCRAM is a few HMACs): each AUTH 0x18 from the client is
one step, answered with AUTH 0x18 (continue); on success the gateway
dispatches the ``Attach`` (with the last Authentication Data, which the
session puts in its CONNACK) and re-points the port at the session; on
failure the gateway refuses it (row 13 of the table in ``session/connect.py``:
0x87 Not authorized, 0x82 for an out-of-place packet). The transport lets only AUTH and DISCONNECT
through before CONNACK ([MQTT-3.1.2-30]).

After CONNACK (:class:`Reauthentication`, owned by the session actor): AUTH
0x19 starts a new exchange with the CONNECT's method, AUTH 0x18 continues
it, AUTH 0x00 ends it successfully; a failure is DISCONNECT 0x87 (section
4.12.1, [MQTT-4.12.1-2]).

User names and passwords are checked by :mod:`.login`. The session of a
client that authenticated with an exchange belongs to the exchange's user
name (the Attach's CONNECT carries it from here on).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING, Any

from actorbroker.auth import Authenticators, Continue, Exchange, Failure, Success
from actorbroker.codec import Auth, Disconnect, Packet, Properties, ReasonCode
from actorbroker.ports import ConnectionLost, Inbound
from actorbroker.session import refuse

from ..messages import Attach

if TYPE_CHECKING:  # the gateway starts an AuthPort: a cycle for the types only
    from .gateway import SessionGateway

__all__ = ["AuthPort", "Reauthentication"]

log = logging.getLogger("actorbroker.auth")

_CONTINUE = ReasonCode.CONTINUE_AUTHENTICATION
_REAUTH = ReasonCode.RE_AUTHENTICATE


def _auth(code: int, method: str, data: bytes | None) -> Auth:
    return Auth(code, Properties(authentication_method=method, authentication_data=data))


class AuthPort:
    """Where a connection's port points while its CONNECT authenticates (loop thread only)."""

    __slots__ = ("_gateway", "_attach", "_exchange", "_over")

    def __init__(self, gateway: SessionGateway, attach: Attach, exchange: Exchange) -> None:
        self._gateway = gateway
        self._attach = attach
        self._exchange = exchange
        self._over = False

    def start(self) -> None:
        """Take the CONNECT's Authentication Data as the first step."""
        self._outcome(self._exchange.step(self._attach.connect.properties.authentication_data))

    def tell(self, message: Any) -> None:
        """What the transport tells the port: Inbound (AUTH, DISCONNECT), ConnectionLost."""
        cls = type(message)
        if cls is Inbound:
            try:
                for packet in message.packets:
                    if self._over:
                        break
                    self._packet(packet)
            finally:
                self._attach.conn.batch_done()
        elif cls is ConnectionLost:
            self._over = True

    def _packet(self, packet: Packet) -> None:
        method = self._exchange.method
        if type(packet) is Disconnect:
            self._over = True  # the transport closes the connection
        elif type(packet) is Auth and packet.reason_code == _CONTINUE and (
                packet.properties.authentication_method == method):
            self._outcome(self._exchange.step(packet.properties.authentication_data))
        else:
            self._outcome(Failure(ReasonCode.PROTOCOL_ERROR,
                                  f"(section 4.12) {type(packet).__name__} during the {method}"
                                  " exchange: only AUTH 0x18 with the same method"))

    def _outcome(self, outcome: Continue | Success | Failure) -> None:
        conn = self._attach.conn
        method = self._exchange.method
        if isinstance(outcome, Continue):
            conn.send((_auth(_CONTINUE, method, outcome.data),))
            return
        self._over = True
        if isinstance(outcome, Success):
            log.info("client %r authenticated with %s as %r", self._attach.client_id, method,
                     outcome.username)
            attach = self._attach
            connect = attach.connect
            if outcome.username is not None:
                connect = dataclasses.replace(connect, username=outcome.username)
            self._gateway.authenticated(
                dataclasses.replace(attach, auth_data=outcome.data, connect=connect))
            return
        self._gateway.refuse(conn, refuse(self._attach.connect, None, outcome.reason,
                                          v5=outcome.reason_code))


class Reauthentication:
    """A session's re-authentications with its CONNECT's method (see the module doc)."""

    __slots__ = ("_auth", "_client_id", "_exchange")

    def __init__(self, auth: Authenticators | None, client_id: str) -> None:
        self._auth = auth
        self._client_id = client_id
        self._exchange: Exchange | None = None

    def handle(self, packet: Auth) -> Auth | Failure:
        """The AUTH to answer with, or the Failure to disconnect with."""
        method = packet.properties.authentication_method or ""
        if packet.reason_code == _REAUTH:
            authenticator = None if self._auth is None else self._auth.get(method)
            if authenticator is None:
                return Failure(ReasonCode.NOT_AUTHORIZED, f"re-authentication: method"
                                                          f" {method!r} not served")
            self._exchange = Exchange(authenticator, self._client_id)
        elif packet.reason_code != _CONTINUE or self._exchange is None or self._exchange.done:
            return Failure(ReasonCode.PROTOCOL_ERROR, f"(section 4.12.1) AUTH 0x"
                                                      f"{packet.reason_code:02X} out of place")
        exchange = self._exchange
        outcome = exchange.step(packet.properties.authentication_data)
        if isinstance(outcome, Continue):
            return _auth(_CONTINUE, method, outcome.data)
        self._exchange = None
        if isinstance(outcome, Success):
            log.info("client %r re-authenticated with %s as %r", self._client_id, method,
                     outcome.username)
            return _auth(ReasonCode.SUCCESS, method, outcome.data)
        return outcome
