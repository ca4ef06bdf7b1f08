"""Protocol violations close only the offending connection, with the right goodbye.

v5: DISCONNECT with the codec's reason code once CONNACK has gone out, a
CONNACK with it before; v3: a plain close. Each case also checks the log
line (peer, client id, rule id) and that another client is still served.
"""

from __future__ import annotations

import dataclasses
import logging

import pytest
from transport_testkit import Broker, RawClient

from actorbroker.codec import (
    NO_PROPERTIES,
    ConnAck,
    Connect,
    Decoder,
    Disconnect,
    Packet,
    PingReq,
    ProtocolError,
    encode,
)


def _codec_verdict(*chunks: bytes) -> ProtocolError:
    """What a fresh server-side decoder says about these bytes (the expected reason)."""
    decoder = Decoder()
    with pytest.raises(ProtocolError) as info:
        for chunk in chunks:
            decoder.feed(chunk)
    return info.value


CONNECT5 = encode(Connect("MQTT", 5, "bad", True, 0), 5)
CONNECT4 = encode(Connect("MQTT", 4, "bad", True, 0), 4)
#: A v5 CONNECT carrying Payload Format Indicator, a property CONNECT may not have.
BAD_PROPERTY_CONNECT5 = b"\x10\x10\x00\x04MQTT\x05\x02\x00\x00\x02\x01\x00\x00\x01x"
#: A v5 CONNECT with the reserved connect flag set.
RESERVED_FLAG_CONNECT5 = b"\x10\x0e\x00\x04MQTT\x05\x03\x00\x00\x00\x00\x01x"
RESERVED_FLAG_CONNECT4 = b"\x10\x0d\x00\x04MQTT\x04\x03\x00\x00\x00\x01x"
RESERVED_TYPE = b"\x00\x00"
SERVER_ONLY = encode(ConnAck(False, 0), 5)

CASES = [
    # (id, level, bytes after a successful CONNECT or None for "instead of", expected v5 goodbye)
    ("v5-reserved-type-after-connack", 5, RESERVED_TYPE, Disconnect),
    ("v5-second-connect", 5, CONNECT5, Disconnect),
    ("v5-connack-from-client", 5, SERVER_ONLY, Disconnect),
    ("v5-bad-connect-property", 5, None, ConnAck),
    ("v5-reserved-connect-flag", 5, None, ConnAck),
    ("v4-reserved-type-after-connack", 4, RESERVED_TYPE, None),
    ("v4-second-connect", 4, CONNECT4, None),
    ("v4-reserved-connect-flag", 4, None, None),
]
INSTEAD = {"v5-bad-connect-property": BAD_PROPERTY_CONNECT5,
           "v5-reserved-connect-flag": RESERVED_FLAG_CONNECT5,
           "v4-reserved-connect-flag": RESERVED_FLAG_CONNECT4}


@pytest.mark.parametrize(("name", "level", "after", "goodbye"), CASES, ids=[c[0] for c in CASES])
def test_violation_closes_only_that_connection(run, caplog, name, level, after, goodbye) -> None:
    async def scenario() -> None:
        async with Broker() as broker:
            healthy, _ = await broker.connected(level=5, client_id="healthy")
            bad = await broker.client(level=level)
            if after is None:
                wire = INSTEAD[name]
                expected = _codec_verdict(wire)
                await bad.send_raw(wire)
            else:
                connect = CONNECT5 if level == 5 else CONNECT4
                expected = _codec_verdict(connect, after) if after != SERVER_ONLY else None
                await bad.send_raw(connect)
                assert await bad.recv() == ConnAck(False, 0)
                await bad.send_raw(after)
            got = await bad.until_closed()
            if goodbye is None:
                assert got == []  # v3: a plain close
            else:
                code = expected.reason_code if expected is not None else 0x82
                assert [_bare(p) for p in got] == [
                    goodbye(False, code) if goodbye is ConnAck else goodbye(code)]
                # After its CONNECT a v5 client allows Reason Strings unless it says otherwise.
                told = got[0].properties.reason_string  # type: ignore[union-attr]
                assert bool(told) is (after is not None), got
            assert broker.stats.protocol_errors == 1
            await healthy.ping()  # everyone else is served on
            if after is not None:
                port = await broker.gateway.port(1)
                await port.wait_until(lambda: port.lost)
                assert port.lost[0].graceful is False
                if expected is not None:
                    assert port.lost[0].reason == str(expected)
                    assert port.lost[0].code == expected.reason_code
            rules[name] = str(expected) if expected is not None else "flows from server to client"

    rules: dict[str, str] = {}
    with caplog.at_level(logging.WARNING, "actorbroker.transport"):
        run(scenario())
    line = next(r.getMessage() for r in caplog.records if "protocol error" in r.getMessage())
    assert "127.0.0.1:" in line
    assert rules[name] in line  # the codec's message, with its rule id when it has one
    if "second-connect" in name:
        assert "[MQTT-3.1.0-2]" in line
    if after is not None:
        assert "client 'bad'" in line


def test_first_packet_not_connect_is_a_plain_close(run, caplog) -> None:
    async def scenario() -> None:
        async with Broker() as broker:
            client = await broker.client(level=5)
            await client.send(PingReq())
            assert await client.until_closed() == []
            assert broker.gateway.connects == []
    with caplog.at_level(logging.WARNING, "actorbroker.transport"):
        run(scenario())
    assert "[MQTT-3.1.0-1]" in caplog.text


def test_unsupported_protocol_level_gets_connack_0x01(run) -> None:
    async def scenario() -> None:
        async with Broker() as broker:
            client = await broker.client(level=4)
            await client.send_raw(b"\x10\x0d\x00\x04MQTT\x06\x02\x00\x00\x00\x01x")  # level 6
            data = await client.reader.read(100)
            assert data == b"\x20\x02\x00\x01"  # [MQTT-3.1.2-2]: unacceptable protocol level
            assert await client.reader.read(100) == b""
    run(scenario())


def test_packet_too_large(run) -> None:
    async def scenario() -> None:
        async with Broker(max_packet_size=100) as broker:
            v5, port = await broker.connected(level=5, client_id="five")
            await v5.send_raw(b"\x30\xc8\x01")  # PUBLISH of 203 bytes: refused from its header
            assert [_bare(p) for p in await v5.until_closed()] == [Disconnect(0x95)]
            v4, _ = await broker.connected(level=4, client_id="four")
            await v4.send_raw(b"\x30\xc8\x01")
            assert await v4.until_closed() == []
            big = await broker.client(level=5)
            await big.send(Connect("MQTT", 5, "x" * 120, True, 0))
            assert await big.until_closed() == [ConnAck(False, 0x95)]
            assert broker.stats.protocol_errors == 3
            await port.wait_until(lambda: port.lost)
            assert "[MQTT-3.2.2-15]" in port.lost[0].reason
    run(scenario())


def test_healthy_client_unaffected_by_many_bad_ones(run) -> None:
    async def scenario() -> None:
        async with Broker() as broker:
            healthy, _ = await broker.connected(level=4, client_id="healthy")
            bad: list[RawClient] = []
            for i in range(30):
                client = await broker.client(level=5)
                await client.send_raw(CONNECT5 + bytes([i % 16, 0]))  # reserved type 0
                bad.append(client)
            for client in bad:
                await client.until_closed()
            await healthy.ping()
            assert broker.stats.protocol_errors == 30
    run(scenario())


def _bare(packet: Packet) -> Packet:
    """``packet`` without its properties (a Reason String), for comparing codes."""
    return dataclasses.replace(packet, properties=NO_PROPERTIES)  # type: ignore[call-arg,type-var]
