"""Benchmark: actorbroker.transport on uvloop, one process, one loop.

Run with ``python -m bench.transport`` (or ``python bench/transport.py``) from
the project root; ``--quick`` for smaller sizes. Prints figures; asserts
nothing. The clients run on the same loop as the listener (a bare
``asyncio.Protocol`` counting bytes, no decoding), so every figure includes
their cost too; a separate client process would only make them better.

* out: a session stand-in sends QoS 0 PUBLISHes (topic "t", 8-byte payload,
  13 bytes on the wire at MQTT 3.1.1) to one client, ``--burst`` per loop
  tick, honouring ``congested`` (waits for ``Drained``). Reports messages/s,
  transport writes and packets per write (the coalescing).
* out, burst 1: the same, one message per loop tick: the worst case, one
  write per message.
* in: a client streams PUBLISHes (pre-encoded) to the broker; the port
  counts packets and returns the credit at once. Decoding, state table,
  Inbound per read.
* connect: sequential CONNECT/CONNACK/close cycles (``--connections``, 20 in
  parallel).
* ping: PINGREQ/PINGRESP round trips, one at a time.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from actorbroker.codec import ConnAck, Connect, PingReq, Publish, encode  # noqa: E402
from actorbroker.config import LimitsConfig, ListenerConfig  # noqa: E402
from actorbroker.ports import Drained, Inbound  # noqa: E402
from actorbroker.transport import MqttConnection, TransportStats, run, start_listener  # noqa: E402


class Port:
    """Counts inbound packets, returns credit at once, answers PINGREQ, signals Drained."""

    def __init__(self, conn: MqttConnection) -> None:
        self.conn = conn
        self.packets = 0
        self.target = 0
        self.done: asyncio.Future[None] | None = None
        self.drained: asyncio.Future[None] | None = None

    def tell(self, message: Any) -> None:
        if isinstance(message, Inbound):
            self.packets += len(message.packets)
            for packet in message.packets:
                if type(packet) is PingReq:
                    self.conn.send_bytes(b"\xd0\x00")
            self.conn.batch_done()
            if self.done is not None and self.packets >= self.target and not self.done.done():
                self.done.set_result(None)
        elif isinstance(message, Drained) and self.drained is not None and not self.drained.done():
            self.drained.set_result(None)


class Gateway:
    def __init__(self) -> None:
        self.ports: list[Port] = []

    def connect(self, conn: MqttConnection, packet: Connect) -> Port:
        conn.send([ConnAck(False, 0)])
        port = Port(conn)
        self.ports.append(port)
        return port


class Sink(asyncio.Protocol):
    """Client side: counts bytes; completes ``done`` once ``expect`` bytes came."""

    def __init__(self) -> None:
        self.received = 0
        self.expect = 0
        self.done: asyncio.Future[None] | None = None
        self.transport: asyncio.Transport | None = None
        self.buffer = b""

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.received += len(data)
        if len(self.buffer) < 64:
            self.buffer += data[:64]
        if self.done is not None and self.received >= self.expect and not self.done.done():
            self.done.set_result(None)

    async def wait_for(self, total: int) -> None:
        self.expect = total
        self.done = asyncio.get_running_loop().create_future()
        if self.received >= total:
            return
        await self.done


async def _client(port: int, client_id: str) -> tuple[Sink, Port, Gateway]:
    loop = asyncio.get_running_loop()
    _, sink = await loop.create_connection(Sink, "127.0.0.1", port)
    assert sink.transport is not None
    sink.transport.write(encode(Connect("MQTT", 4, client_id, True, 0), 4))
    await sink.wait_for(4)
    return sink, GATEWAY.ports[-1], GATEWAY


GATEWAY = Gateway()


async def bench_out(port: int, stats: TransportStats, count: int, burst: int) -> str:
    sink, sport, _ = await _client(port, f"out{burst}")
    conn = sport.conn
    wire = encode(Publish("t", b"12345678"), 4)
    message = Publish("t", b"12345678")
    writes0, base = stats.writes, sink.received
    loop = asyncio.get_running_loop()
    start = time.perf_counter()
    sent = 0
    while sent < count:
        if conn.congested:
            sport.drained = loop.create_future()
            await sport.drained
            continue
        for _ in range(min(burst, count - sent)):
            conn.send((message,))
        sent += min(burst, count - sent)
        await asyncio.sleep(0)
    await sink.wait_for(base + count * len(wire))
    elapsed = time.perf_counter() - start
    writes = stats.writes - writes0
    conn.close()
    return (f"out, burst {burst:>4}: {count / elapsed:>12,.0f} msg/s  {count * len(wire) / elapsed / 1e6:6.1f} MB/s"
            f"  {writes:>7,} writes, {count / max(writes, 1):7.1f} packets/write")


async def bench_in(port: int, count: int) -> str:
    sink, sport, _ = await _client(port, "in")
    assert sink.transport is not None
    chunk = encode(Publish("t", b"12345678"), 4) * 5000
    loop = asyncio.get_running_loop()
    sport.target = count
    sport.done = loop.create_future()
    start = time.perf_counter()
    sent = 0
    while sent < count:
        sink.transport.write(chunk)
        sent += 5000
        if sink.transport.get_write_buffer_size() > 1 << 20:
            await asyncio.sleep(0)
    await sport.done
    elapsed = time.perf_counter() - start
    sink.transport.close()
    return f"in:             {sport.packets / elapsed:>12,.0f} msg/s decoded and told as Inbound"


async def bench_connect(port: int, count: int) -> str:
    loop = asyncio.get_running_loop()
    connect = encode(Connect("MQTT", 4, "c", True, 0), 4)

    async def one() -> None:
        _, sink = await loop.create_connection(Sink, "127.0.0.1", port)
        assert sink.transport is not None
        sink.transport.write(connect)
        await sink.wait_for(4)
        sink.transport.close()

    start = time.perf_counter()
    for _ in range(count // 20):
        await asyncio.gather(*(one() for _ in range(20)))
    elapsed = time.perf_counter() - start
    return f"connect:        {count / elapsed:>12,.0f} CONNECT/CONNACK/close per s"


async def bench_ping(port: int, count: int) -> str:
    sink, _, _ = await _client(port, "ping")
    assert sink.transport is not None
    start = time.perf_counter()
    for i in range(count):
        sink.transport.write(b"\xc0\x00")
        await sink.wait_for(4 + 2 * (i + 1))
    elapsed = time.perf_counter() - start
    sink.transport.close()
    return f"ping:           {elapsed / count * 1e6:>12.1f} us per round trip"


async def main(args: argparse.Namespace) -> None:
    stats = TransportStats()
    listener = await start_listener(ListenerConfig(port=0), LimitsConfig(), GATEWAY, stats)
    print(f"Python {platform.python_version()}, uvloop, {platform.machine()}; client on the same loop")
    print(await bench_out(listener.port, stats, args.messages, args.burst))
    print(await bench_out(listener.port, stats, args.messages // 10, 1))
    print(await bench_in(listener.port, args.messages))
    print(await bench_connect(listener.port, args.connections))
    print(await bench_ping(listener.port, args.pings))
    await listener.close()
    await listener.close_all()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--burst", type=int, default=1000)
    parser.add_argument("--connections", type=int, default=2000)
    parser.add_argument("--pings", type=int, default=20_000)
    parser.add_argument("--quick", action="store_true")
    ns = parser.parse_args()
    if ns.quick:
        ns.messages, ns.connections, ns.pings = 100_000, 200, 2000
    run(main(ns))
