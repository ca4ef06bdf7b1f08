"""Read credit over WebSocket: a slow session stops the socket being read, as on TCP.

The WebSocket adapter sits between the socket and the MqttConnection and
passes pause_reading/resume_reading straight to the socket: after
``max_batches`` outstanding Inbounds nothing more is read, the publisher's
frames stay in TCP's buffers, and each credit given back lets one more read
in. The client here is websockets' sans-IO ClientProtocol over asyncio streams.
"""

from __future__ import annotations

import asyncio

from transport_testkit import Broker, TestGateway
from websockets.client import ClientProtocol
from websockets.http11 import Response
from websockets.typing import Subprotocol
from websockets.uri import parse_uri

from actorbroker.codec import ConnAck, Connect, Decoder, Publish, encode


class _WsPublisher:
    """A WebSocket MQTT client over asyncio streams (handshake, frames out, packets in)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 port: int) -> None:
        self.reader, self.writer = reader, writer
        self.ws = ClientProtocol(parse_uri(f"ws://localhost:{port}/mqtt"),
                                 subprotocols=[Subprotocol("mqtt")], max_size=None)
        self.decoder = Decoder(4)

    @classmethod
    async def open(cls, port: int) -> _WsPublisher:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        client = cls(reader, writer, port)
        client.ws.send_request(client.ws.connect())
        client._flush()
        while not any(isinstance(e, Response) for e in await client._events()):
            pass
        return client

    def _flush(self) -> None:
        for chunk in self.ws.data_to_send():
            self.writer.write(chunk)

    async def _events(self) -> list[object]:
        data = await asyncio.wait_for(self.reader.read(65536), 5)
        assert data, "the broker closed the connection"
        self.ws.receive_data(data)
        return list(self.ws.events_received())

    def send(self, data: bytes) -> None:
        self.ws.send_binary(data)
        self._flush()

    async def recv(self) -> object:
        packets: list[object] = []
        while not packets:
            for event in await self._events():
                packets.extend(self.decoder.feed(event.data))  # type: ignore[attr-defined]
        return packets[0]


def test_a_slow_session_pauses_a_websocket_publisher(run) -> None:
    async def scenario() -> None:
        async with Broker(TestGateway(auto_done=False, echo=False), kind="ws",
                          max_batches=4) as broker:
            client = await _WsPublisher.open(broker.listener.port)
            client.send(encode(Connect("MQTT", 4, "ws-pub", True, 0), 4))
            assert await client.recv() == ConnAck(False, 0)
            port = await broker.gateway.port()
            transport = port.conn.transport
            assert transport is not None
            for i in range(4):
                client.send(encode(Publish("p", b"%d" % i), 4))
                await port.wait_until(lambda i=i: len(port.inbound) == i + 1)
                assert transport.is_reading() == (i < 3)
            assert broker.stats.read_pauses == 1
            # 8,000 PUBLISHes in 500 frames of 16: TCP pushes back on the publisher.
            message = Publish("p", b"z" * 1000)
            frame = encode(message, 4) * 16
            for _ in range(500):
                client.send(frame)
            assert client.writer.transport.get_write_buffer_size() > 0
            done = 0
            while len(port.packets) < 4 + 8000:
                await port.wait_until(lambda done=done: len(port.inbound) - done == 4)
                assert not transport.is_reading()
                port.conn.batch_done()
                done += 1
            assert port.packets[4:] == [message] * 8000
            await client.writer.drain()
            client.writer.close()
    run(scenario(), timeout=60)
