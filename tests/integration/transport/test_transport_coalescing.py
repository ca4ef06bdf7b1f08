"""Writes are coalesced: one transport write per loop tick, never one per packet.

The probe wraps the connection's asyncio transport and counts ``write``
calls; the thing under test is the connection that decides when to write.
"""

from __future__ import annotations

import asyncio
from typing import Any

from transport_testkit import Broker

from actorbroker.codec import PingReq, PingResp, Publish, encode


class CountingTransport:
    """Delegates to the real transport, recording the size of every write."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.writes: list[int] = []

    def write(self, data: bytes) -> None:
        self.writes.append(len(data))
        self.inner.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_many_sends_in_one_tick_make_one_write(run) -> None:
    async def scenario() -> None:
        async with Broker() as broker:
            client, port = await broker.connected(level=4)
            conn = port.conn
            probe = CountingTransport(conn.transport)
            conn.transport = probe  # type: ignore[assignment]
            writes_before = broker.stats.writes
            messages = [Publish(f"t/{i}", b"x" * i) for i in range(100)]
            for message in messages:
                conn.send([message])          # one call per packet, same tick
            conn.send_bytes(encode(PingResp(), 4))
            got = [await client.recv() for _ in range(101)]
            assert got == [*messages, PingResp()]
            assert len(probe.writes) == 1
            assert probe.writes[0] == sum(len(encode(m, 4)) for m in messages) + 2
            assert broker.stats.writes - writes_before == 1
    run(scenario())


def test_one_write_per_tick_with_sends(run) -> None:
    async def scenario() -> None:
        async with Broker() as broker:
            client, port = await broker.connected(level=5)
            conn = port.conn
            probe = CountingTransport(conn.transport)
            conn.transport = probe  # type: ignore[assignment]
            for tick in range(3):
                for i in range(5):
                    conn.send([Publish("t", bytes([tick, i]))])
                await asyncio.sleep(0)  # end of this loop tick: the flush runs
            got = [await client.recv() for _ in range(15)]
            assert [p.payload for p in got] == [bytes([t, i]) for t in range(3) for i in range(5)]
            assert len(probe.writes) == 3
    run(scenario())


def test_replies_to_one_read_go_out_in_one_write(run) -> None:
    async def scenario() -> None:
        async with Broker() as broker:
            client, port = await broker.connected(level=4)
            conn = port.conn
            probe = CountingTransport(conn.transport)
            conn.transport = probe  # type: ignore[assignment]
            port.separate_sends = True
            reads_before = len(port.inbound)
            await client.send(*[PingReq()] * 50, *[Publish("e", b"%d" % i) for i in range(50)])
            got = [await client.recv() for _ in range(100)]
            assert got[:50] == [PingResp()] * 50
            assert [p.payload for p in got[50:]] == [b"%d" % i for i in range(50)]
            reads = len(port.inbound) - reads_before
            # 100 send() calls; each read is answered within one loop turn: one write at most.
            assert 1 <= len(probe.writes) <= reads
    run(scenario())


class FailingTransport(CountingTransport):
    """A transport whose write raises: a fault no real socket here produces on demand."""

    def write(self, data: bytes) -> None:
        self.writes.append(len(data))
        raise OSError("write failed")


def test_a_tick_of_sends_to_many_connections_makes_one_write_each(run) -> None:
    """Output queued on many connections in one tick (a sparse fan-out) goes out at the
    next tick, one write per connection; a connection whose write fails does not hold
    the others' output back."""
    async def scenario() -> None:
        async with Broker() as broker:
            pairs = [await broker.connected(level=4, client_id=f"c{i}") for i in range(20)]
            probes = []
            for i, (_, port) in enumerate(pairs):
                kind = FailingTransport if i == 7 else CountingTransport
                probes.append(kind(port.conn.transport))
                port.conn.transport = probes[-1]  # type: ignore[assignment]
            for i, (_, port) in enumerate(pairs):
                port.conn.send([Publish("fan", b"%d" % i)])
                port.conn.send([Publish("fan", b"again %d" % i)])
            assert [len(p.writes) for p in probes] == [0] * 20  # nothing before the tick ends
            for i, (client, _) in enumerate(pairs):
                if i == 7:
                    continue
                got = [await client.recv(), await client.recv()]
                assert [p.payload for p in got] == [b"%d" % i, b"again %d" % i]
            assert [len(p.writes) for p in probes] == [1] * 20
    run(scenario())
