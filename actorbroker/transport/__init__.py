"""Transport layer: sockets to MQTT connections on uvloop. Imports stdlib, asyncio, uvloop, websockets, codec and ports.

The only package that imports uvloop or ssl and touches the MQTT sockets
(docs/style.md); it never imports the actors, session, routing or
persistence layers (import-linter checks it). The contract with the actors
is :mod:`actorbroker.ports` (re-exported here: ``Connection``, ``Gateway``,
``SessionPort``).

    from actorbroker.transport import TransportStats, new_event_loop, start_listener

    stats = TransportStats()
    listener = await start_listener(config.listeners[0], config.limits, gateway, stats)

Modules: :mod:`.server` (listeners), :mod:`.acceptor` (an accept loop that survives EMFILE),
:mod:`.connection` (one MQTT connection as an asyncio Protocol), :mod:`.endings`
(how a connection ends),
:mod:`.gate` (state table and packets held until CONNACK), :mod:`.output`
(coalesced, bounded output), :mod:`.tls` (TLS contexts, their reload,
certificate identities), :mod:`.websocket` (MQTT over WebSocket, sans-IO),
:mod:`.admission` (per-address limits), :mod:`.overload` (memory and loop
lag), :mod:`.settings`, :mod:`.stats`, :mod:`.loop`.
"""

from actorbroker.ports import Connection, Gateway, SessionPort

from .connection import MqttConnection
from .loop import new_event_loop, run
from .overload import OverloadGuard
from .server import Listener, bind_listener, start_listener
from .settings import ConnectionSettings
from .stats import StatsTotal, TransportStats
from .tls import Certificates, TlsOptions, tls_problem

__all__ = [
    "Certificates",
    "Connection",
    "ConnectionSettings",
    "Gateway",
    "Listener",
    "MqttConnection",
    "OverloadGuard",
    "SessionPort",
    "StatsTotal",
    "TlsOptions",
    "TransportStats",
    "bind_listener",
    "new_event_loop",
    "run",
    "start_listener",
    "tls_problem",
]
