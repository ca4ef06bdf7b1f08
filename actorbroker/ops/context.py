"""Ops layer: what the HTTP handlers may see of the broker. Stdlib, pykka, actors, config, transport.

One :class:`OpsContext` per broker, built by :mod:`actorbroker.app`; the
handlers read through it on the loop thread and never keep a ref: the root
and the listeners are looked up at each request (a restart replaces them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pykka import ActorRef

from actorbroker.actors import Node
from actorbroker.config import Config
from actorbroker.transport import MqttConnection, TransportStats

from .sampler import Sampler

__all__ = ["ListenerView", "OpsContext"]


@dataclass(frozen=True, slots=True)
class ListenerView:
    """One MQTT listener: its name (bind:port), its counters, its live connections."""

    name: str
    stats: TransportStats
    connections: Mapping[int, MqttConnection]


@dataclass(slots=True)
class OpsContext:
    """The broker as the ops handlers see it (loop thread only)."""

    node: Node
    config: Config
    root: Callable[[], ActorRef[Any] | None]
    listeners: Callable[[], list[ListenerView]]
    sampler: Sampler

    def connections(self) -> Iterator[MqttConnection]:
        """Every open MQTT connection, over all listeners."""
        for listener in self.listeners():
            yield from list(listener.connections.values())

    def connections_by_client(self) -> dict[str, MqttConnection]:
        """Each client id's open connection (as :meth:`connection_of`), in one pass: a
        list of clients looks each one up here, not over every connection again."""
        found: dict[str, MqttConnection] = {}
        for conn in self.connections():
            if conn.client_id and not conn.closed:
                known = found.get(conn.client_id)
                if known is None or conn.conn_id > known.conn_id:
                    found[conn.client_id] = conn
        return found

    def connection_of(self, client_id: str) -> MqttConnection | None:
        """The open connection of ``client_id``, if any (the last one to CONNECT; one
        being closed does not count)."""
        found = None
        for conn in self.connections():
            if conn.client_id == client_id and not conn.closed:
                found = conn if found is None or conn.conn_id > found.conn_id else found
        return found
