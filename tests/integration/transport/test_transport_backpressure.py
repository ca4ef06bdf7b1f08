"""Backpressure both ways, and the listener's connection limit.

Out: a subscriber that stops reading makes its connection ``congested``
(the session drops QoS 0 and counts), never slows anyone else, and costs
bounded memory. In: a session that falls behind stops the transport from
reading its publisher after ``max_batches`` outstanding Inbounds, so TCP
pushes back on the publisher.
"""

from __future__ import annotations

import asyncio
import logging
import socket

from transport_testkit import Broker, RawClient, TestGateway

from actorbroker.codec import Connect, Publish, encode


async def _stubborn_reader(port: int) -> RawClient:
    """A v4 client with a tiny receive buffer, connected; the caller decides when it reads."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
    reader, writer = await asyncio.open_connection(sock=sock, limit=4096)
    client = RawClient(reader, writer, 4)
    await client.connect("stubborn")
    return client


def test_a_subscriber_that_stops_reading_is_congested_and_bounded(run) -> None:
    async def scenario() -> None:
        async with Broker(high_water=64 * 1024) as broker:
            other, _ = await broker.connected(level=5, client_id="other")
            slow = await _stubborn_reader(broker.listener.port)
            port = await broker.gateway.wait_until(
                lambda: next((p for p in broker.gateway.ports if p.conn.client_id == "stubborn"), None))
            conn = port.conn
            message = Publish("flood", b"x" * 1000)
            size = len(encode(message, 4))
            sent = dropped = peak = 0
            for i in range(20_000):  # a session fanning out QoS 0 messages, yielding now and then
                if conn.congested:
                    dropped += 1
                else:
                    conn.send([message])
                    sent += 1
                peak = max(peak, conn.buffered_bytes)
                if i % 16 == 15:
                    await asyncio.sleep(0)
                if dropped > 2000:
                    break
            assert dropped > 2000 and conn.congested
            assert peak <= 64 * 1024 + size, peak  # the high-water mark plus one packet
            await other.ping()  # nobody else is slowed down
            assert port.drained == []
            # The subscriber reads again: everything sent arrives, then Drained is told.
            got = 0
            while got < sent:
                packet = await slow.recv()
                assert packet == message
                got += 1
            await port.wait_until(lambda: port.drained)
            assert not conn.congested and len(port.drained) == 1
    run(scenario(), timeout=60)


def test_a_session_that_ignores_congestion_gets_the_connection_closed(run, caplog) -> None:
    async def scenario() -> None:
        async with Broker(high_water=16 * 1024, max_output=128 * 1024) as broker:
            slow = await _stubborn_reader(broker.listener.port)
            port = await broker.gateway.port()
            conn = port.conn
            message = Publish("flood", b"y" * 1000)
            peak = 0
            for i in range(100_000):
                conn.send([message])  # never looks at conn.congested
                peak = max(peak, conn.buffered_bytes)
                if conn.closed:
                    break
                if i % 16 == 15:
                    await asyncio.sleep(0)
            assert conn.closed
            assert peak <= 128 * 1024 + 16 * 1010
            await port.wait_until(lambda: port.lost)
            assert port.lost[0].reason == "output buffer overflow" and not port.lost[0].graceful
            assert port.lost[0].code is None  # no code of MQTT says it
            assert broker.stats.output_overflows == 1
            slow.close()
    with caplog.at_level(logging.WARNING, "actorbroker.transport"):
        run(scenario(), timeout=60)
    assert "bytes of output waiting: closing" in caplog.text


def test_a_slow_session_pauses_reading_after_max_batches(run) -> None:
    async def scenario() -> None:
        async with Broker(TestGateway(auto_done=False, echo=False), max_batches=4) as broker:
            client, port = await broker.connected(level=4)
            transport = port.conn.transport
            for i in range(4):
                await client.send(Publish("p", b"%d" % i))
                await port.wait_until(lambda: len(port.inbound) == i + 1)  # noqa: B023 (awaited here)
                assert transport.is_reading() == (i < 3)
            assert broker.stats.read_pauses == 1
            # The publisher keeps going: 16 MB it cannot get rid of, TCP pushes back.
            message = Publish("p", b"z" * 1000)
            count = 16_000
            client.writer.write(encode(message, 4) * count)
            assert client.writer.transport.get_write_buffer_size() > 0
            # Each batch_done lets exactly one more read in; never more than 4 outstanding.
            done = 0
            while len(port.packets) < 4 + count:
                await port.wait_until(lambda: len(port.inbound) - done == 4)  # noqa: B023 (awaited here)
                assert not transport.is_reading()
                port.conn.batch_done()
                done += 1
            assert port.packets[4:] == [message] * count
            assert broker.stats.read_pauses > 1
            await client.writer.drain()
    run(scenario(), timeout=60)


def test_a_credit_never_given_back_expires_after_credit_timeout(run) -> None:
    async def scenario() -> None:
        async with Broker(TestGateway(auto_done=False, echo=False), max_batches=2,
                          credit_timeout=0.2) as broker:
            client, port = await broker.connected(level=4)
            transport = port.conn.transport
            for i in range(2):
                await client.send(Publish("p", b"%d" % i))
                await port.wait_until(lambda: len(port.inbound) == i + 1)  # noqa: B023 (awaited here)
            assert not transport.is_reading()
            # Nobody takes the holds (a credit lost with a crashed actor's inbox): reading
            # resumes once the oldest credit is older than credit_timeout.
            await client.send(Publish("p", b"2"))
            await port.wait_until(lambda: len(port.inbound) == 3)
            first = port.inbound[0].credit
            # uvloop's clock and timers move in 1 ms steps: 0.2 s can read as 0.19999...
            assert asyncio.get_running_loop().time() - first.born >= 0.2 - 0.002
            # The oldest expired; the second too unless it was read later than the
            # expiry check's margin (a loaded machine spaces the two reads).
            assert broker.stats.credits_expired in (1, 2)
            first.take()  # a hold given back late changes nothing
            await client.send(Publish("p", b"3"))
            await port.wait_until(lambda: len(port.inbound) == 4)
            assert not transport.is_reading()  # the new credits count, not the late take
    run(scenario(), timeout=60)


def test_max_connections_accepts_then_closes_the_extra_socket(run, caplog) -> None:
    async def scenario() -> None:
        async with Broker(max_connections=2) as broker:
            await broker.connected(client_id="a")
            b, port_b = await broker.connected(client_id="b")
            extra = await broker.client()
            await extra.send(Connect("MQTT", 5, "c", True, 0))
            assert await extra.until_closed() == []  # no CONNACK: closed on accept
            assert broker.stats.connections_refused == 1
            assert [c.client_id for c in broker.gateway.connects] == ["a", "b"]
            b.close()
            await port_b.wait_until(lambda: port_b.lost)
            c, _ = await broker.connected(client_id="c")  # room again
            await c.ping()
            assert broker.stats.connections_current == 2
    with caplog.at_level(logging.WARNING, "actorbroker.transport"):
        run(scenario())
    assert "2 connections, the maximum" in caplog.text


def test_closing_when_the_peer_never_reads_aborts_after_close_timeout(run) -> None:
    async def scenario() -> None:
        async with Broker(close_timeout=0.5, high_water=16 * 1024) as broker:
            slow = await _stubborn_reader(broker.listener.port)
            port = await broker.gateway.port()
            conn = port.conn
            while not conn.congested:
                conn.send([Publish("f", b"x" * 1000)])
                await asyncio.sleep(0)
            loop = asyncio.get_running_loop()
            start = loop.time()
            await broker.listener.close_all(timeout=10)  # returns once the socket is gone
            assert 0.45 <= loop.time() - start < 3.0
            assert broker.listener.connections == {}
            assert port.lost[0].graceful  # close() was asked for, however it ended
            slow.close()
    run(scenario())
