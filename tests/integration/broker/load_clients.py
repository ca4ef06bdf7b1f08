"""Test support: many MQTT clients on one asyncio (uvloop) loop, run in a child process.

The broker tests start this file as a script (``python load_clients.py
MODE --host H --port P ...``) so that the clients have a core of their own
and never share the broker's loop or GIL; it prints one JSON object with
what happened. The clients speak MQTT 3.1.1 through the project's codec
(:class:`~actorbroker.codec.Decoder`, :func:`~actorbroker.codec.encode`).

Modes:

* ``stress``: ``clients`` clients in groups of ``group``; all connect and
  subscribe to ``stress/<group>/+`` and ``stress/+/<their index>``
  (overlapping wildcards: one copy each, at QoS 1), then all publish
  ``messages`` QoS 1 messages to ``stress/<group>/<index>``, acknowledge
  what they receive, check it is exactly what their group published, and
  disconnect, everything concurrently.
* ``cycles``: ``cycles`` connect/disconnect cycles, ``concurrency`` at a time,
  CONNECT and PINGREQ pipelined in one write, CONNACK and PINGRESP awaited,
  then DISCONNECT; for one cycle in four CONNECT and DISCONNECT in one write
  (the broker may close before answering); half the client ids are reused
  (a new connection meets a retiring session), half are new.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import sys
import time
from collections import Counter
from typing import Any

from actorbroker.codec import (
    ConnAck,
    Connect,
    Decoder,
    Disconnect,
    Packet,
    PingReq,
    PingResp,
    PubAck,
    Publish,
    SubAck,
    Subscribe,
    Subscription,
    encode,
)

LEVEL = 4


def raise_nofile(wanted: int) -> int:
    """Raise the soft RLIMIT_NOFILE towards ``wanted`` (at most the hard limit); the new soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    return soft


class Conn(asyncio.Protocol):
    """One client connection: packets in a queue, PUBLISH acknowledged on arrival."""

    level = LEVEL  # the protocol level this connection speaks (5: a subclass)

    def __init__(self) -> None:
        self.decoder = Decoder(self.level)
        self.transport: asyncio.Transport | None = None
        self.packets: asyncio.Queue[Packet | None] = asyncio.Queue()
        self.received: list[tuple[str, bytes, int, bool]] = []
        self.expected = 0
        self.complete = asyncio.Event()
        self.closed = asyncio.Event()

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        acks = []
        for packet in self.decoder.feed(data):
            if type(packet) is Publish:
                self.received.append((packet.topic, packet.payload, packet.qos, packet.dup))
                if packet.qos == 1:
                    acks.append(encode(PubAck(packet.packet_id), self.level))  # type: ignore[arg-type]
                if self.expected and len(self.received) >= self.expected:
                    self.complete.set()
            else:
                self.packets.put_nowait(packet)
        if acks:
            self.send_acks(b"".join(acks))

    def send_acks(self, data: bytes) -> None:
        """Acknowledge what one read brought (at once; a slower client overrides it)."""
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed.set()
        self.packets.put_nowait(None)

    def send(self, *packets: Packet) -> None:
        assert self.transport is not None
        self.transport.write(b"".join(encode(p, self.level) for p in packets))

    async def expect(self, kind: type, timeout: float = 30.0) -> Packet:
        """The next non-PUBLISH packet, which must be a ``kind`` (None: the connection closed)."""
        packet = await asyncio.wait_for(self.packets.get(), timeout)
        if packet is None or not isinstance(packet, kind):
            raise AssertionError(f"expected {kind.__name__}, got {packet!r}")
        return packet

    async def close_politely(self, timeout: float = 30.0) -> None:
        self.send(Disconnect())
        await asyncio.wait_for(self.closed.wait(), timeout)


async def open_conn(host: str, port: int, gate: asyncio.Semaphore | None = None) -> Conn:
    """Connect (``gate`` bounds the handshakes in progress: the listen backlog is finite)."""
    loop = asyncio.get_running_loop()
    if gate is None:
        _, conn = await loop.create_connection(Conn, host, port)
        return conn
    async with gate:
        _, conn = await loop.create_connection(Conn, host, port)
    return conn


async def stress(host: str, port: int, clients: int, group: int, messages: int) -> dict[str, Any]:
    """See the module doc."""
    gate = asyncio.Semaphore(256)
    started = time.monotonic()
    errors: Counter[str] = Counter()

    async def join(index: int) -> Conn:
        conn = await open_conn(host, port, gate)
        conn.send(Connect("MQTT", LEVEL, f"stress-{index}", True, 60))
        assert (await conn.expect(ConnAck)) == ConnAck(False, 0)
        conn.send(Subscribe(1, (Subscription(f"stress/{index // group}/+", 1),
                                Subscription(f"stress/+/{index}", 1))))
        suback: Any = await conn.expect(SubAck)
        assert suback.reason_codes == (1, 1), suback
        conn.expected = group * messages
        return conn

    conns = await asyncio.gather(*(join(i) for i in range(clients)))
    subscribed = time.monotonic()

    async def publish(index: int, conn: Conn) -> None:
        for k in range(messages):
            conn.send(Publish(f"stress/{index // group}/{index}", f"{index}:{k}".encode(), 1,
                              packet_id=k + 1))
        acks: list[Any] = [await conn.expect(PubAck) for _ in range(messages)]
        acked = {ack.packet_id for ack in acks}
        assert acked == set(range(1, messages + 1)), acked

    await asyncio.gather(*(publish(i, c) for i, c in enumerate(conns)))
    published = time.monotonic()
    missing = 0
    for index, conn in enumerate(conns):
        try:
            await asyncio.wait_for(conn.complete.wait(), 30.0)
        except asyncio.TimeoutError:
            pass
        first = index // group * group
        want = Counter((f"stress/{index // group}/{i}", f"{i}:{k}".encode(), 1, False)
                       for i in range(first, min(first + group, clients)) for k in range(messages))
        got = Counter(conn.received)
        if got != want:
            missing += sum((want - got).values())
            errors["wrong deliveries"] += sum((got - want).values())
    received = time.monotonic()
    await asyncio.gather(*(c.close_politely() for c in conns))
    return {
        "clients": clients,
        "deliveries": sum(len(c.received) for c in conns),
        "missing": missing,
        "errors": dict(errors),
        "seconds": {"connect_subscribe": subscribed - started, "publish": published - subscribed,
                    "receive": received - published, "disconnect": time.monotonic() - received},
    }


async def cycles(host: str, port: int, total: int, concurrency: int) -> dict[str, Any]:
    """See the module doc."""
    slots: asyncio.Queue[int] = asyncio.Queue()
    for slot in range(concurrency):
        slots.put_nowait(slot)
    refused = 0
    started = time.monotonic()

    async def cycle(n: int) -> None:
        nonlocal refused
        slot = await slots.get()  # a reused id is never in two cycles at once (no take-over)
        client_id = f"cycle-{slot}" if n % 2 else f"cycle-new-{n}"
        try:
            conn = await open_conn(host, port)
            connect = Connect("MQTT", LEVEL, client_id, True, 60)
            if n % 4 == 3:
                # DISCONNECT right behind CONNECT: the broker may close before any CONNACK.
                conn.send(connect, Disconnect())
            else:
                # PINGREQ is held until the CONNACK ([MQTT-3.1.4-5]), then answered.
                conn.send(connect, PingReq())
                if await conn.expect(ConnAck) != ConnAck(False, 0):
                    refused += 1
                await conn.expect(PingResp)
                conn.send(Disconnect())
            await asyncio.wait_for(conn.closed.wait(), 30.0)
        finally:
            slots.put_nowait(slot)

    await asyncio.gather(*(cycle(n) for n in range(total)))
    return {"cycles": total, "refused": refused, "seconds": time.monotonic() - started}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=("stress", "cycles"))
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--clients", type=int, default=2000)
    parser.add_argument("--group", type=int, default=10)
    parser.add_argument("--messages", type=int, default=2)
    parser.add_argument("--cycles", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=64)
    args = parser.parse_args()
    raise_nofile(args.clients + 256)
    try:
        import uvloop
        runner: Any = uvloop.run
    except ImportError:  # pragma: no cover - uvloop is a dependency
        runner = asyncio.run
    if args.mode == "stress":
        result = runner(stress(args.host, args.port, args.clients, args.group, args.messages))
    else:
        result = runner(cycles(args.host, args.port, args.cycles, args.concurrency))
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
