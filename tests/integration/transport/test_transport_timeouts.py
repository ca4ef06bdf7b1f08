"""Connect timeout and keepalive enforcement ([MQTT-3.1.2-24]), timed on real sockets.

Each test waits for the broker to close the socket (EOF) and then checks
how long that took; nothing sleeps to synchronise.

The keepalive is 2 s so that the two readings the tests tell apart, 1.5 x
(3 s, the rule) and 2 x (4 s), are a second apart: an upper bound halfway
between them still catches a broker that waits too long, and leaves a
loaded two-core machine 0.9 s of scheduling slack.
"""

from __future__ import annotations

import asyncio
import logging

from transport_testkit import Broker

from actorbroker.codec import Disconnect, PingReq, PingResp, Publish

KEEPALIVE = 2


def assert_one_and_a_half_keepalives(elapsed: float) -> None:
    """Closed after 1.5 x the keepalive ([MQTT-3.1.2-24]), not 1 x, nor 2 x."""
    assert 1.5 * KEEPALIVE - 0.1 <= elapsed < 1.5 * KEEPALIVE + 0.9, elapsed


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
            client, port = await broker.connected(level=5, keepalive=KEEPALIVE)
            start = loop.time()
            assert await client.until_closed(timeout=10) == [Disconnect(0x8D)]
            assert_one_and_a_half_keepalives(loop.time() - start)
            await port.wait_until(lambda: port.lost)
            assert port.lost[0].reason == "keepalive timeout"
            assert port.lost[0].graceful is False  # so the will fires
            assert port.lost[0].code == 0x8D
            assert broker.stats.keepalive_timeouts == 1
    run(scenario())


def test_keepalive_expiry_v3_is_a_plain_close(run) -> None:
    async def scenario() -> None:
        async with Broker() as broker:
            loop = asyncio.get_running_loop()
            client, port = await broker.connected(level=4, keepalive=KEEPALIVE)
            start = loop.time()
            assert await client.until_closed(timeout=10) == []
            assert_one_and_a_half_keepalives(loop.time() - start)
            await port.wait_until(lambda: port.lost)
            assert not port.lost[0].graceful
    run(scenario())


def test_any_packet_restarts_the_keepalive_period(run) -> None:
    async def scenario() -> None:
        async with Broker() as broker:
            loop = asyncio.get_running_loop()
            client, port = await broker.connected(level=5, keepalive=KEEPALIVE)
            start = loop.time()
            # Pace packets 1.2 keepalives apart: each lands inside the 1.5 x window, not the
            # 1 x one (the pause is the client's behaviour under test, not a synchronisation).
            for packet in (PingReq(), Publish("t", b"x")):
                await asyncio.sleep(1.2 * KEEPALIVE)
                await client.send(packet)
                assert isinstance(await client.recv(), (PingResp, Publish))
            assert port.lost == []
            last = loop.time()
            assert await client.until_closed(timeout=10) == [Disconnect(0x8D)]
            assert loop.time() - start > 2 * 1.2 * KEEPALIVE + 1.4 * KEEPALIVE
            assert_one_and_a_half_keepalives(loop.time() - last)
    run(scenario(), timeout=40)


def test_keepalive_zero_disables_and_the_session_can_change_it(run) -> None:
    async def scenario() -> None:
        async with Broker() as broker:
            loop = asyncio.get_running_loop()
            client, port = await broker.connected(level=5, keepalive=0)
            port.conn.set_keepalive(KEEPALIVE)  # e.g. a v5 Server Keep Alive
            start = loop.time()
            assert await client.until_closed(timeout=10) == [Disconnect(0x8D)]
            assert_one_and_a_half_keepalives(loop.time() - start)
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
