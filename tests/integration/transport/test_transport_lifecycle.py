"""A connection's life over a real socket: CONNECT, packets, DISCONNECT, refusal, shutdown."""

from __future__ import annotations

import asyncio
import logging

import pytest
from transport_testkit import Broker, TestGateway

from actorbroker.codec import (
    Auth,
    ConnAck,
    Connect,
    Disconnect,
    PingReq,
    PingResp,
    Properties,
    Publish,
    Subscribe,
    SubAck,
    Subscription,
)
from actorbroker.codec.states import ConnectionState
from actorbroker.ports import ConnectionLost, Inbound
from actorbroker.transport import SessionPort


def test_port_zero_gives_a_real_port_and_a_working_connection(run) -> None:
    async def scenario() -> None:
        async with Broker() as broker:
            assert broker.listener.port > 0
            assert broker.listener.sockets[0].getsockname()[1] == broker.listener.port
            client, port = await broker.connected(client_id="alpha", keepalive=30)
            await client.ping()
            conn = port.conn
            assert conn.client_id == "alpha" and conn.protocol_level == 5
            assert conn.peer[0] == "127.0.0.1" and conn.state is ConnectionState.CONNECTED
            assert isinstance(port, SessionPort)
            assert broker.stats.connections_current == 1
            assert broker.stats.connections_accepted == 1
            assert broker.gateway.connects[0].client_id == "alpha"
    run(scenario())


def test_each_read_is_one_inbound_and_disconnect_is_graceful(run) -> None:
    async def scenario() -> None:
        async with Broker() as broker:
            client, port = await broker.connected(level=4)
            sub = Subscribe(1, (Subscription("a/#", 1),))
            await client.send(sub, Publish("a/b", b"1"), Publish("a/c", b"2"))
            assert isinstance(await client.recv(), SubAck)
            await port.wait_until(lambda: len(port.packets) == 3)
            assert port.inbound[0] == Inbound(port.conn.conn_id, (sub, Publish("a/b", b"1"),
                                                                  Publish("a/c", b"2")))
            await client.send(Disconnect())
            assert await client.until_closed() == [Publish("a/b", b"1"), Publish("a/c", b"2")]
            await port.wait_until(lambda: port.lost)
            assert port.lost == [
                ConnectionLost(port.conn.conn_id, "client sent DISCONNECT", True, 0x00)]
            assert port.messages[-1] == port.lost[0]  # last, after the DISCONNECT's Inbound
            assert isinstance(port.packets[-1], Disconnect)
            await broker.listener.close_all()
            assert broker.stats.connections_current == 0
    run(scenario())


def test_eof_without_disconnect_is_abnormal(run) -> None:
    async def scenario() -> None:
        async with Broker() as broker:
            client, port = await broker.connected()
            client.close()
            await port.wait_until(lambda: port.lost)
            assert port.lost[0].graceful is False
            assert port.lost[0].code is None  # nobody decided it: the socket went
            assert len(port.lost) == 1
    run(scenario())


def test_packets_pipelined_after_connect_wait_for_the_connack(run) -> None:
    async def scenario() -> None:
        gateway = TestGateway(defer_connack=True)
        async with Broker(gateway) as broker:
            client = await broker.client(level=4)
            await client.send(Connect("MQTT", 4, "p", True, 0), PingReq(), Publish("t", b"x"))
            port = await gateway.port()
            assert port.conn.state is ConnectionState.AUTHENTICATING
            assert port.inbound == []  # held: the session has not accepted yet
            port.conn.send([ConnAck(False, 0)])
            assert await client.recv() == ConnAck(False, 0)
            await port.wait_until(lambda: port.inbound)
            assert port.inbound[0].packets == (PingReq(), Publish("t", b"x"))
            assert await client.recv() == PingResp()
            assert await client.recv() == Publish("t", b"x")
    run(scenario())


def test_connect_publish_disconnect_in_one_write_delivers_everything(run) -> None:
    async def scenario() -> None:
        async with Broker(TestGateway(sync_connack=True)) as broker:
            client = await broker.client(level=4)
            await client.send(Connect("MQTT", 4, "q", True, 0), Publish("t", b"x"), Disconnect())
            got = await client.until_closed()
            assert got[0] == ConnAck(False, 0)
            port = await broker.gateway.port()
            await port.wait_until(lambda: port.lost)
            assert port.packets == [Publish("t", b"x"), Disconnect()]
            assert port.lost[0].graceful
    run(scenario())


def test_refused_connect_gets_its_connack_and_pipelined_packets_are_dropped(run) -> None:
    async def scenario() -> None:
        async with Broker(TestGateway(refuse=0x87)) as broker:
            client = await broker.client(level=5)
            await client.send(Connect("MQTT", 5, "r", True, 0), Publish("t", b"x"))
            assert await client.until_closed() == [ConnAck(False, 0x87)]
            assert broker.gateway.ports == []
    run(scenario())


def test_session_refusal_closes_after_the_connack(run) -> None:
    async def scenario() -> None:
        async with Broker(TestGateway(defer_connack=True)) as broker:
            client = await broker.client(level=4)
            await client.send(Connect("MQTT", 4, "s", True, 0), Publish("t", b"x"))
            port = await broker.gateway.port()
            port.conn.send([ConnAck(False, 5)])  # v3 "not authorized", no close() call
            assert await client.until_closed() == [ConnAck(False, 5)]
            await port.wait_until(lambda: port.lost)
            assert port.inbound == []  # [MQTT-3.1.4-5]
    run(scenario())


def test_v5_auth_passes_before_connack_other_packets_do_not(run) -> None:
    async def scenario() -> None:
        async with Broker(TestGateway(defer_connack=True)) as broker:
            client = await broker.client(level=5)
            props = Properties(authentication_method="SCRAM")
            await client.send(Connect("MQTT", 5, "a", True, 0, properties=props))
            port = await broker.gateway.port()
            await client.send(Auth(0x19, props))
            await port.wait_until(lambda: port.inbound)
            assert port.packets == [Auth(0x19, props)]
            await client.send(Publish("t", b"x"))
            got = await client.until_closed()
            assert got == [ConnAck(False, 0x82, Properties(  # [MQTT-3.1.2-30], with a Reason String
                reason_string="[MQTT-3.1.2-30] PUBLISH before the server accepted the CONNECT"
                              " (only AUTH or DISCONNECT until CONNACK)"))]
            await port.wait_until(lambda: port.lost)
            assert "[MQTT-3.1.2-30]" in port.lost[0].reason and not port.lost[0].graceful
    run(scenario())


def test_close_all_sends_v5_server_shutting_down_and_plain_close_to_v3(run) -> None:
    async def scenario() -> None:
        async with Broker() as broker:
            v5, p5 = await broker.connected(level=5, client_id="five")
            v4, p4 = await broker.connected(level=4, client_id="four")
            await broker.listener.close()
            with pytest.raises(OSError):
                await asyncio.open_connection("127.0.0.1", broker.listener.port)
            await broker.listener.close_all()
            assert await v5.until_closed() == [Disconnect(0x8B)]
            assert await v4.until_closed() == []
            assert broker.listener.connections == {}
            assert p5.lost[0].graceful and p4.lost[0].graceful
    run(scenario())


def test_close_is_idempotent_and_send_after_close_is_a_no_op(run) -> None:
    async def scenario() -> None:
        async with Broker() as broker:
            client, port = await broker.connected(level=5)
            conn = port.conn
            conn.send([Publish("bye", b"1")])
            conn.close(0x98, "admin")
            conn.close(0x8B)
            conn.send([Publish("late", b"2")])
            conn.batch_done()
            conn.set_keepalive(5)
            assert conn.closed
            assert await client.until_closed() == [Publish("bye", b"1"), Disconnect(0x98)]
            await port.wait_until(lambda: port.lost)
            # The first close decided it: its code, not the second's.
            assert port.lost == [ConnectionLost(conn.conn_id, "admin", True, 0x98)]
    run(scenario())


class _Exploding(TestGateway):
    def connect(self, conn, packet):  # type: ignore[no-untyped-def]
        raise KeyError("bug in the gateway")


def test_a_failing_gateway_closes_only_that_connection(run, caplog) -> None:
    async def scenario() -> None:
        async with Broker(_Exploding()) as broker:
            client = await broker.client(level=5)
            await client.send(Connect("MQTT", 5, "x", True, 0))
            assert await client.until_closed() == [ConnAck(False, 0x80)]
            assert broker.listener.port  # still listening
            other = await broker.client(level=5)
            await other.send(Connect("MQTT", 5, "y", True, 0))
            assert await other.until_closed() == [ConnAck(False, 0x80)]
    with caplog.at_level(logging.ERROR, "actorbroker.transport"):
        run(scenario())
    assert "gateway.connect failed" in caplog.text and "KeyError" in caplog.text


def test_a_dead_session_port_closes_the_connection(run) -> None:
    async def scenario() -> None:
        async with Broker() as broker:
            client, port = await broker.connected(level=5)
            port.dead = True
            await client.send(PingReq())
            assert await client.until_closed() == [Disconnect(0x80)]
            await broker.listener.close_all()  # returns once every connection is gone
            assert broker.listener.connections == {}
            assert broker.stats.connections_current == 0
    run(scenario())
