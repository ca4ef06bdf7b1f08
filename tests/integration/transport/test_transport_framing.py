"""Packets arrive whole and in order however TCP splits or joins the bytes."""

from __future__ import annotations

import asyncio

from transport_testkit import Broker

from actorbroker.codec import (
    ConnAck,
    Connect,
    Packet,
    PingReq,
    Publish,
    Subscribe,
    Subscription,
    encode,
)

PACKETS: list[Packet] = [
    Publish("big/payload", bytes(range(256)) * 2, qos=1, packet_id=7),  # 2-byte length
    Subscribe(3, (Subscription("a/+/c", 2),)),
    PingReq(),
    Publish("small", b"s"),
]


def _stream(level: int, client_id: str) -> bytes:
    connect = Connect("MQTT", level, client_id, True, 0)
    return b"".join(encode(p, level) for p in (connect, *PACKETS))


def test_one_byte_at_a_time(run) -> None:
    async def scenario() -> None:
        async with Broker() as broker:
            client = await broker.client(level=5)
            for byte in _stream(5, "bytes"):
                await client.send_raw(bytes([byte]))
                await asyncio.sleep(0)  # give the broker a chance to read each byte alone
            assert await client.recv() == ConnAck(False, 0)
            port = await broker.gateway.port()
            await port.wait_until(lambda: len(port.packets) == len(PACKETS))
            assert port.packets == PACKETS
            assert all(m.packets for m in port.inbound)  # no empty batches for partial reads
            assert len(port.inbound) >= 2
    run(scenario())


def test_every_split_point_of_a_stream(run) -> None:
    async def scenario() -> None:
        async with Broker() as broker:
            data = _stream(4, "split")
            cuts = sorted({*range(0, 40), *range(40, len(data), 23), len(data) - 1})
            for n, cut in enumerate(cuts):
                client = await broker.client(level=4)
                await client.send_raw(data[:cut])
                await asyncio.sleep(0)
                await client.send_raw(data[cut:])
                assert await client.recv() == ConnAck(False, 0)
                port = await broker.gateway.port(n)
                await port.wait_until(lambda: len(port.packets) == len(PACKETS))  # noqa: B023 (awaited here)
                assert port.packets == PACKETS, cut
                client.close()
            assert broker.stats.protocol_errors == 0
    run(scenario(), timeout=60)


def test_a_large_packet_in_many_reads(run) -> None:
    async def scenario() -> None:
        async with Broker() as broker:
            client, port = await broker.connected(level=4)
            big = Publish("big", b"z" * 3_000_000)
            await client.send(big)
            await port.wait_until(lambda: port.packets)
            assert port.packets == [big]
            assert broker.stats.bytes_in > 3_000_000
    run(scenario())
