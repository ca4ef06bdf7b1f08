"""Codec layer: connection-level protocol states, server side. Stdlib and codec only.

Which packets a server may receive from a client in which state (sections
3.1.0, 3.1.2.11.9, 3.14.4 and 4.12 of MQTT 5.0; 3.1.0 and 3.14.4 of 3.1.1).
Events are packet type names as the client sends them, plus one event of the
server's own: ``CONNACK_SENT``, when it accepts the connection (a CONNACK
received *from* a client is illegal everywhere, so the two never mix).

    AWAIT_CONNECT --CONNECT--> AUTHENTICATING --CONNACK_SENT--> CONNECTED
    AUTHENTICATING --AUTH--> AUTHENTICATING  (MQTT 5 enhanced authentication)
    CONNECTED --PUBLISH, SUBSCRIBE, ..., AUTH (re-authentication)--> CONNECTED
    AUTHENTICATING, CONNECTED --DISCONNECT--> CLOSED

While AUTHENTICATING the server has not answered the CONNECT yet. A v5
client that named an Authentication Method may send only AUTH or
DISCONNECT then ([MQTT-3.1.2-30]); a 3.x client may pipeline packets after
its CONNECT, which the connection holds until it has sent its CONNACK (and
never processes if it refuses the CONNECT, [MQTT-3.1.4-5]).

``docs/statecharts/connection.{dot,svg}`` are generated from this table by
``python -m actorbroker.statecharts --write``.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from types import MappingProxyType
from typing import Final

from .errors import ProtocolError
from .packets import PacketType

__all__ = [
    "CHART_NAME",
    "CHART_TITLE",
    "CONNACK_SENT",
    "INITIAL",
    "STAY_CONNECTED",
    "TRANSITIONS",
    "ConnectionState",
    "next_state",
]


class ConnectionState(Enum):
    """Where a connection stands, as seen by the server."""

    AWAIT_CONNECT = "await_connect"
    AUTHENTICATING = "authenticating"
    CONNECTED = "connected"
    CLOSED = "closed"


#: The server's own event: it sent a CONNACK accepting the connection.
CONNACK_SENT: Final = "CONNACK_SENT"

CHART_NAME: Final = "connection"
CHART_TITLE: Final = "MQTT connection, server side: packets received from the client"
INITIAL: Final = ConnectionState.AWAIT_CONNECT

_S = ConnectionState
#: Packets a connected client may send (PINGRESP, CONNACK, SUBACK, UNSUBACK
#: flow from server to client only).
_CLIENT_PACKETS = (
    PacketType.PUBLISH, PacketType.PUBACK, PacketType.PUBREC, PacketType.PUBREL,
    PacketType.PUBCOMP, PacketType.SUBSCRIBE, PacketType.UNSUBSCRIBE,
    PacketType.PINGREQ, PacketType.AUTH,
)

TRANSITIONS: Final[Mapping[tuple[ConnectionState, str], ConnectionState]] = MappingProxyType({
    (_S.AWAIT_CONNECT, PacketType.CONNECT.name): _S.AUTHENTICATING,
    (_S.AUTHENTICATING, PacketType.AUTH.name): _S.AUTHENTICATING,
    (_S.AUTHENTICATING, CONNACK_SENT): _S.CONNECTED,
    (_S.AUTHENTICATING, PacketType.DISCONNECT.name): _S.CLOSED,
    **{(_S.CONNECTED, packet.name): _S.CONNECTED for packet in _CLIENT_PACKETS},
    (_S.CONNECTED, PacketType.DISCONNECT.name): _S.CLOSED,
})

_SERVER_ONLY = frozenset(
    p.name
    for p in (PacketType.CONNACK, PacketType.SUBACK, PacketType.UNSUBACK, PacketType.PINGRESP)
)


#: The packet types after which a connected client stays connected: the table's
#: self-loops on CONNECTED, as a set for the per-packet checks (the transport gate's
#: per-read fast path, and next_state's, which so skips the enum ``name`` and the
#: tuple key; hashing a plain Enum runs Python code).
STAY_CONNECTED = frozenset(
    p for p in PacketType if TRANSITIONS.get((_S.CONNECTED, p.name)) is _S.CONNECTED
)
_CONNECTED = _S.CONNECTED  # a module global: reading an Enum member off its class costs 80 ns


def next_state(state: ConnectionState, event: PacketType | str) -> ConnectionState:
    """The state after ``event``; raise :class:`ProtocolError` if it is illegal there."""
    if state is _CONNECTED and event in STAY_CONNECTED:
        return state
    name = event.name if isinstance(event, PacketType) else event
    target = TRANSITIONS.get((state, name))
    if target is not None:
        return target
    if state is _S.AWAIT_CONNECT:
        raise ProtocolError(f"[MQTT-3.1.0-1] first packet must be CONNECT, got {name}")
    if name == PacketType.CONNECT.name:
        raise ProtocolError("[MQTT-3.1.0-2] second CONNECT on the connection")
    if state is _S.CLOSED:
        raise ProtocolError(
            f"[MQTT-3.14.4-1] (3.1.1: [MQTT-3.14.4-2]) {name} after DISCONNECT"
        )
    if name in _SERVER_ONLY:
        raise ProtocolError(f"{name} flows from server to client only (section 2.1.2)")
    if state is _S.AUTHENTICATING:
        raise ProtocolError(
            f"[MQTT-3.1.2-30] {name} before the server accepted the CONNECT"
            " (only AUTH or DISCONNECT until CONNACK)"
        )
    if name == CONNACK_SENT:
        raise ProtocolError("[MQTT-3.2.0-2] the server must not send a second CONNACK")
    raise ProtocolError(f"unknown event {name!r} in state {state.name}")
