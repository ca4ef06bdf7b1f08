"""Connect timeout and keepalive enforcement ([MQTT-3.1.2-24]), timed on real sockets.

Each test waits for the broker to close the socket (EOF) and then checks
how long that took; nothing sleeps to synchronise.
"""

from __future__ import annotations

import asyncio
import logging

from transport_testkit import Broker

from actorbroker.codec import Disconnect, PingReq, PingResp, Publish


def test_a_socket_that_never_sends_connect_is_closed(run, caplog) -> None:
    async def scenario() -> None:
        async with Broker(connect_timeout=0.3) as broker:
            loop = asyncio.get_running_loop()
            silent = await broker.client()
            partial = await broker.client()
            await partial.send_raw(b"\x10\x20\x00\x04MQ")  # half a CONNECT is not a CONNECT
            start = loop.time()
            assert await silent.until_closed() == []
            assert await partial.until_closed() == []
            assert 0.25 <= loop.time() - start < 2.0
            assert broker.stats.connect_timeouts == 2
            assert broker.gateway.connects == []
            client, _ = await broker.connected(client_id="in-time")  # the listener is fine
            await client.ping()
    with caplog.at_level(logging.INFO, "actorbroker.transport"):
        run(scenario())
    assert "no CONNECT within 0.3s" in caplog.text


def test_keepalive_expiry_v5_sends_disconnect_0x8d(run) -> None:
    async def scenario() -> None:
        async with Broker() as broker:
            loop = asyncio.get_running_loop()
            client, port = await broker.connected(level=5, keepalive=1)
            start = loop.time()
            assert await client.until_closed(timeout=5) == [Disconnect(0x8D)]
            elapsed = loop.time() - start
            assert 1.4 <= elapsed < 2.0, elapsed  # 1.5 x keepalive, not 1 x
            await port.wait_until(lambda: port.lost)
            assert port.lost[0].reason == "keepalive timeout"
            assert port.lost[0].graceful is False  # so the will fires
            assert broker.stats.keepalive_timeouts == 1
    run(scenario())


def test_keepalive_expiry_v3_is_a_plain_close(run) -> None:
    async def scenario() -> None:
        async with Broker() as broker:
            loop = asyncio.get_running_loop()
            client, port = await broker.connected(level=4, keepalive=1)
            start = loop.time()
            assert await client.until_closed(timeout=5) == []
            assert 1.4 <= loop.time() - start < 2.0
            await port.wait_until(lambda: port.lost)
            assert not port.lost[0].graceful
    run(scenario())


def test_any_packet_restarts_the_keepalive_period(run) -> None:
    async def scenario() -> None:
        async with Broker() as broker:
            loop = asyncio.get_running_loop()
            client, port = await broker.connected(level=5, keepalive=1)
            start = loop.time()
            # Pace packets 1.1 s apart: each lands inside the 1.5 s window, not the 1 s one.
            for packet in (PingReq(), Publish("t", b"x")):
                await asyncio.sleep(1.1)
                await client.send(packet)
                assert isinstance(await client.recv(), (PingResp, Publish))
            assert port.lost == []
            last = loop.time()
            assert await client.until_closed(timeout=5) == [Disconnect(0x8D)]
            assert loop.time() - start > 2.2 + 1.4
            assert 1.4 <= loop.time() - last < 2.0
    run(scenario(), timeout=30)


def test_keepalive_zero_disables_and_the_session_can_change_it(run) -> None:
    async def scenario() -> None:
        async with Broker() as broker:
            loop = asyncio.get_running_loop()
            client, port = await broker.connected(level=5, keepalive=0)
            port.conn.set_keepalive(1)  # e.g. a v5 Server Keep Alive
            start = loop.time()
            assert await client.until_closed(timeout=5) == [Disconnect(0x8D)]
            assert 1.4 <= loop.time() - start < 2.0
            other, other_port = await broker.connected(level=5, client_id="o", keepalive=1)
            other_port.conn.set_keepalive(0)
            await asyncio.sleep(1.6)  # the scenario: more than 1.5 x 1 s of silence, keepalive off
            await other.ping()
    run(scenario())


def test_time_paused_by_the_broker_is_not_the_clients_silence(run) -> None:
    async def scenario() -> None:
        async with Broker(max_batches=1) as broker:
            broker.gateway.auto_done = False
            client, port = await broker.connected(level=5, keepalive=1)
            await client.send(PingReq())
            await port.wait_until(lambda: port.inbound)  # one batch outstanding: reading paused
            assert not port.conn.transport.is_reading()
            await asyncio.sleep(2.0)  # longer than 1.5 x keepalive, while the broker is the slow one
            assert port.lost == [] and not port.conn.closed
            port.conn.batch_done()
            assert await client.recv() == PingResp()
            await client.send(PingReq())  # reading resumed
            await port.wait_until(lambda: len(port.inbound) == 2)
            port.conn.batch_done()
    run(scenario())
