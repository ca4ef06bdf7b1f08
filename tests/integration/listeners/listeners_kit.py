"""Small helpers the listener tests share."""

from __future__ import annotations

from actorbroker.app import RunningBroker


def port_of(broker: RunningBroker, kind: str) -> int:
    """The port of ``broker``'s first listener of ``kind`` (``"tcp"``, ``"tls"``, ``"ws"``, ``"wss"``)."""
    kinds = [c.type for c in broker.config.listeners]
    return broker.broker.ports[kinds.index(kind)]
