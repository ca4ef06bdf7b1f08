"""A connection the server closes with input still unread ends in a FIN, not a reset:
it shuts down writing and drains the peer (``transport/endings.py``), so the peer
reads why it was closed up to a clean EOF and may go on writing meanwhile."""

from __future__ import annotations

import asyncio

from transport_testkit import Broker, RawClient, RecordingPort, TestGateway

from actorbroker.codec import Disconnect, Publish, encode


def _chunk(level: int) -> bytes:
    """256 QoS 1 PUBLISHes of 1000 bytes."""
    return b"".join(encode(Publish("t", b"x" * 1000, 1, packet_id=n), level)
                    for n in range(1, 257))


async def _until_eof(client: RawClient) -> bytes:
    """What the server sent until its FIN (a reset raises ConnectionResetError)."""
    return await asyncio.wait_for(client.reader.read(), 5)


async def _paused_with_unread_input(broker: Broker, level: int) -> tuple[RawClient, RecordingPort]:
    """A connected client whose session never returns its read credit: after one Inbound
    the transport stops reading, so the client's next chunk stays in the socket."""
    client, port = await broker.connected(level=level, client_id=f"busy{level}")
    await client.send_raw(_chunk(level))
    await port.wait_until(lambda: broker.stats.read_pauses)
    await client.send_raw(_chunk(level))
    return client, port


def test_a_v5_goodbye_with_unread_input_is_read_up_to_a_clean_eof(run) -> None:
    async def scenario() -> None:
        async with Broker(TestGateway(auto_done=False, echo=False), max_batches=1) as broker:
            client, port = await _paused_with_unread_input(broker, 5)
            port.conn.close(0x8B, "server shutting down")
            assert await _until_eof(client) == encode(Disconnect(0x8B), 5)
            await client.send_raw(_chunk(5))  # still read (and discarded) by the server
            await port.wait_until(lambda: port.lost)
            assert port.lost[0].graceful
    run(scenario())


def test_a_v3_close_with_unread_input_is_a_clean_eof(run) -> None:
    async def scenario() -> None:
        async with Broker(TestGateway(auto_done=False, echo=False), max_batches=1) as broker:
            client, port = await _paused_with_unread_input(broker, 4)
            port.conn.close(reason="server shutting down")
            assert await _until_eof(client) == b""
    run(scenario())
