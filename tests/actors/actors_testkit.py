"""A broker without sockets, for tests of the actors: a real tree on the test's loop, fake connections.

:class:`FakeConnection` implements the transport's ``Connection`` interface
in memory (what the session actor calls: ``send``, ``close``,
``batch_done``, ``congested``...) and plays the transport's part towards
the session port (``Inbound`` per read, ``ConnectionLost`` exactly once).
Everything else is the real thing: gateway, session, topic and registry
actors under their supervisors.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterable
from typing import Any

from pykka import ActorDeadError

from actorbroker.actors import NodeSettings, SessionGateway
from actorbroker.app import Broker
from actorbroker.codec import NO_PROPERTIES, ConnAck, Connect, Packet, Properties, Will
from actorbroker.config import Config
from actorbroker.config import StorageConfig
from actorbroker.ports import ConnectionLost, Inbound, ReadCredit

_ids = itertools.count(10_000)


async def eventually(predicate: Callable[[], Any], timeout: float = 5.0) -> Any:
    """Yield to the loop until ``predicate()`` is truthy; return it (TimeoutError)."""
    async def poll() -> Any:
        while not (result := predicate()):
            await asyncio.sleep(0.001)
        return result
    return await asyncio.wait_for(poll(), timeout)


class FakeConnection:
    """An in-memory ``Connection`` (see the module doc)."""

    def __init__(self, client_id: str, level: int = 4) -> None:
        self.conn_id = next(_ids)
        self.peer = ("192.0.2.1", self.conn_id)
        self.protocol_level = level
        self.client_id: str | None = client_id
        self.identity: str | None = None  # no client certificate (a plain listener)
        self.sent: list[Packet] = []
        self.closed = False
        self.close_reason = ""
        self.congested = False
        self.buffered_bytes = 0
        self.batches_done = 0
        self.port: Any = None

    # -- Connection ----------------------------------------------------------------

    def send(self, packets: Iterable[Packet]) -> None:
        if not self.closed:
            self.sent.extend(packets)

    def send_bytes(self, data: bytes) -> None:
        raise AssertionError("the session encodes nothing itself")

    def batch_done(self) -> None:
        self.batches_done += 1

    def close(self, reason_code: int | None = None, reason: str = "") -> None:
        if self.closed:
            return
        self.closed = True
        self.close_reason = reason
        if self.port is not None:
            try:  # as the transport: a dead session is logged there, never raised
                self.port.tell(ConnectionLost(self.conn_id, reason or "closed", True, reason_code))
            except ActorDeadError:
                pass

    def set_keepalive(self, seconds: int) -> None:
        pass

    # -- the client's side ----------------------------------------------------------

    def feed(self, *packets: Packet) -> None:
        """One read with these packets; its credit counts in ``batches_done`` once back."""
        credit = ReadCredit(lambda _credit: self.batch_done(), self.conn_id, 0.0)
        self.port.tell(Inbound(self.conn_id, tuple(packets), credit))

    def drop(self, reason: str = "connection reset") -> None:
        """The network connection ends without DISCONNECT."""
        if not self.closed:
            self.closed = True
            self.port.tell(ConnectionLost(self.conn_id, reason, False))

    def of_type(self, kind: type) -> list[Any]:
        return [p for p in self.sent if isinstance(p, kind)]

    async def expect(self, kind: type, count: int = 1, timeout: float = 5.0) -> list[Any]:
        """Wait until ``count`` packets of ``kind`` were sent; return them."""
        return await eventually(lambda: len(self.of_type(kind)) >= count and self.of_type(kind),
                                timeout)


class Harness:
    """A started broker without listeners, and a way to connect fake clients."""

    def __init__(self, **settings: Any) -> None:
        # No commit log: these tests drive the actors, not the storage (tests/durability does).
        config = Config(listeners=(), storage=StorageConfig(durability="memory"))
        self.broker = Broker(config, settings=NodeSettings.from_config(
            config, **{"sys_interval": 0.0, **settings}))

    async def __aenter__(self) -> Harness:
        await self.broker.start()
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.broker.stop()

    @property
    def node(self) -> Any:
        return self.broker.node

    @property
    def gateway(self) -> SessionGateway:
        gateway = self.broker.gateway
        assert isinstance(gateway, SessionGateway)
        return gateway

    def attach(self, client_id: str, *, clean: bool = True, level: int = 4,
               will: Will | None = None,
               properties: Properties = NO_PROPERTIES) -> FakeConnection:
        """Hand a CONNECT to the gateway (as the transport does); no waiting."""
        conn = FakeConnection(client_id, level)
        name = "MQIsdp" if level == 3 else "MQTT"
        conn.port = self.gateway.connect(conn, Connect(name, level, client_id, clean, 60,
                                                       will=will, properties=properties))
        return conn

    async def connect(self, client_id: str, **options: Any) -> FakeConnection:
        """Connect and wait for a successful CONNACK."""
        conn = self.attach(client_id, **options)
        [connack] = await conn.expect(ConnAck)
        assert connack.reason_code == 0, connack
        return conn
