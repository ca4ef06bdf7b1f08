"""Collaborators for the transport tests: a recording session port, a gateway, a raw MQTT client.

The thing under test is the transport (listener, acceptor, connection). Its
collaborators here are small and real: :class:`RecordingPort` keeps every
message the transport tells and, like a session actor, answers from its
own "mailbox" turn (``loop.call_soon``); :class:`TestGateway` accepts or
refuses CONNECTs; :class:`RawClient` speaks MQTT over a real socket with
the codec, so tests can send broken bytes and decode exactly what the
broker answered.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from actorbroker.codec import (
    ConnAck,
    Connect,
    Decoder,
    Packet,
    PingReq,
    PingResp,
    Publish,
    SubAck,
    Subscribe,
    encode,
)
from actorbroker.config import LimitsConfig, ListenerConfig
from actorbroker.ports import ConnectionLost, Drained, Inbound
from actorbroker.transport import ConnectionSettings, MqttConnection, TransportStats, start_listener


class Waitable:
    """Something tests can await a condition on, woken whenever it changes."""

    def __init__(self) -> None:
        self._changed = asyncio.Event()

    def changed(self) -> None:
        self._changed.set()

    async def wait_until(self, predicate: Callable[[], Any], timeout: float = 5.0) -> Any:
        """Wait until ``predicate()`` is truthy (re-checked on every change); return it."""
        async def loop() -> Any:
            while not (result := predicate()):
                self._changed.clear()
                await self._changed.wait()
            return result
        return await asyncio.wait_for(loop(), timeout)


class RecordingPort(Waitable):
    """A session stand-in: records what it is told, echoes like a tiny broker.

    ``auto_done`` False leaves ``batch_done`` to the test (a slow session).
    """

    def __init__(self, conn: MqttConnection, *, auto_done: bool = True, echo: bool = True) -> None:
        super().__init__()
        self.conn = conn
        self.auto_done = auto_done
        self.echo = echo
        self.messages: list[Any] = []
        self.dead = False
        self.separate_sends = False  # one send() call per reply instead of one per Inbound

    def tell(self, message: Any) -> None:
        if self.dead:
            raise RuntimeError("actor is dead")
        self.messages.append(message)
        asyncio.get_running_loop().call_soon(self._process, message)

    def _process(self, message: Any) -> None:
        if isinstance(message, Inbound) and self.echo:
            replies: list[Packet] = []
            for packet in message.packets:
                if isinstance(packet, PingReq):
                    replies.append(PingResp())
                elif isinstance(packet, Publish) and packet.qos == 0:
                    replies.append(packet)
                elif isinstance(packet, Subscribe):
                    replies.append(SubAck(packet.packet_id, tuple(s.qos for s in packet.subscriptions)))
            if replies and self.separate_sends:
                for reply in replies:
                    self.conn.send([reply])
            elif replies:
                self.conn.send(replies)
        if isinstance(message, Inbound) and self.auto_done:
            self.conn.batch_done()
        self.changed()

    # -- views ---------------------------------------------------------------

    @property
    def inbound(self) -> list[Inbound]:
        return [m for m in self.messages if isinstance(m, Inbound)]

    @property
    def packets(self) -> list[Packet]:
        return [p for m in self.inbound for p in m.packets]

    @property
    def lost(self) -> list[ConnectionLost]:
        return [m for m in self.messages if isinstance(m, ConnectionLost)]

    @property
    def drained(self) -> list[Drained]:
        return [m for m in self.messages if isinstance(m, Drained)]


@dataclass
class TestGateway(Waitable):
    """Accepts every CONNECT (CONNACK from the port's next turn) unless told otherwise."""

    __test__ = False  # not a pytest class

    refuse: int | None = None          # CONNACK code to refuse with, synchronously
    sync_connack: bool = False          # send the CONNACK inside connect()
    defer_connack: bool = False         # never send it: the test does
    auto_done: bool = True
    echo: bool = True
    ports: list[RecordingPort] = field(default_factory=list)
    connects: list[Connect] = field(default_factory=list)

    def __post_init__(self) -> None:
        Waitable.__init__(self)

    def connect(self, conn: MqttConnection, packet: Connect) -> RecordingPort | None:
        self.connects.append(packet)
        self.changed()
        if self.refuse is not None:
            conn.send([ConnAck(False, self.refuse)])
            conn.close()
            return None
        port = RecordingPort(conn, auto_done=self.auto_done, echo=self.echo)
        self.ports.append(port)
        if self.sync_connack:
            conn.send([ConnAck(False, 0)])
        elif not self.defer_connack:
            asyncio.get_running_loop().call_soon(conn.send, [ConnAck(False, 0)])
        return port

    async def port(self, index: int = 0) -> RecordingPort:
        """The port of the ``index``-th accepted connection, once it exists."""
        return await self.wait_until(lambda: len(self.ports) > index and self.ports[index])


class RawClient:
    """A client over a real socket: raw bytes out, decoded packets in."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, level: int) -> None:
        self.reader = reader
        self.writer = writer
        self.level = level
        self.decoder = Decoder(level)
        self.pending: list[Packet] = []

    @classmethod
    async def open(cls, port: int, level: int = 5) -> RawClient:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        return cls(reader, writer, level)

    async def connect(self, client_id: str = "c", keepalive: int = 0, **kw: Any) -> ConnAck:
        """Send CONNECT and return the CONNACK."""
        name = "MQIsdp" if self.level == 3 else "MQTT"
        await self.send(Connect(name, self.level, client_id, True, keepalive, **kw))
        packet = await self.recv()
        assert isinstance(packet, ConnAck), packet
        return packet

    async def send(self, *packets: Packet) -> None:
        await self.send_raw(b"".join(encode(p, self.level) for p in packets))

    async def send_raw(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def recv(self, timeout: float = 5.0) -> Packet:
        """The next packet from the broker; EOFError if it closed the connection."""
        while not self.pending:
            data = await asyncio.wait_for(self.reader.read(65536), timeout)
            if not data:
                raise EOFError("broker closed the connection")
            self.pending.extend(self.decoder.feed(data))
        return self.pending.pop(0)

    async def until_closed(self, timeout: float = 5.0) -> list[Packet]:
        """Every packet received until the broker closes the connection."""
        got: list[Packet] = []
        while True:
            try:
                got.append(await self.recv(timeout))
            except (EOFError, ConnectionResetError):
                return got

    async def ping(self, timeout: float = 5.0) -> None:
        """One PINGREQ/PINGRESP round trip."""
        await self.send(PingReq())
        assert isinstance(await self.recv(timeout), PingResp)

    def close(self) -> None:
        self.writer.close()


class Broker:
    """A live listener on 127.0.0.1, port 0, with a :class:`TestGateway`."""

    def __init__(self, gateway: TestGateway | None = None, *, max_connections: int = 0,
                 kind: str = "tcp", **settings: Any) -> None:
        self.gateway = gateway or TestGateway()
        self.max_connections = max_connections
        self.kind = kind  # "tcp" or "ws" (the TLS kinds need certificates: tests/integration/listeners)
        self.settings = ConnectionSettings(**settings)
        self.stats = TransportStats()
        self.clients: list[RawClient] = []

    async def __aenter__(self) -> Broker:
        config = ListenerConfig(type=self.kind, bind="127.0.0.1", port=0,
                                max_connections=self.max_connections)
        self.listener = await start_listener(config, LimitsConfig(), self.gateway, self.stats,
                                             settings=self.settings)
        return self

    async def __aexit__(self, *exc: object) -> None:
        for client in self.clients:
            client.close()
        await self.listener.close()
        await self.listener.close_all(timeout=5)

    async def client(self, level: int = 5) -> RawClient:
        client = await RawClient.open(self.listener.port, level)
        self.clients.append(client)
        return client

    async def connected(self, level: int = 5, client_id: str = "c", **kw: Any) -> tuple[RawClient, RecordingPort]:
        """A client past CONNACK, and its session port."""
        client = await self.client(level)
        connack = await client.connect(client_id, **kw)
        assert connack.reason_code == 0
        port = await self.gateway.wait_until(
            lambda: next((p for p in self.gateway.ports if p.conn.client_id == client_id), None))
        return client, port
