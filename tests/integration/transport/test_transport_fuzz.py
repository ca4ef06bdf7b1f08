"""Fuzzing the live socket: arbitrary and mutated byte streams against one listener.

Each example opens a connection, sends the bytes, half-closes and reads
until the broker closes. Invariants: the broker always closes a bad
stream (or the EOF) without anything escaping a protocol callback (the
loop's exception handler stays silent); whatever it answers is valid MQTT;
a client connected all along keeps being served, and a new client connects
fine at the end.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from transport_testkit import Broker, RawClient

from actorbroker.codec import (
    Connect,
    Decoder,
    Disconnect,
    PingReq,
    Publish,
    Subscribe,
    Subscription,
    Unsubscribe,
    encode,
)
from actorbroker.transport.gate import sniff_level

PACKETS = [
    PingReq(),
    Publish("a/b", b"payload"),
    Publish("q/1", b"x" * 200, qos=1, packet_id=1),
    Subscribe(2, (Subscription("a/#", 1),)),
    Unsubscribe(3, ("a/#",)),
    Disconnect(),
]


@st.composite
def valid_streams(draw: Any) -> bytes:
    level = draw(st.sampled_from([3, 4, 5]))
    name = "MQIsdp" if level == 3 else "MQTT"
    connect = Connect(name, level, draw(st.text("abc", min_size=1, max_size=8)), True,
                      draw(st.integers(0, 60)))
    rest = draw(st.lists(st.sampled_from(PACKETS), max_size=5))
    return b"".join(encode(p, level) for p in (connect, *rest))


@st.composite
def mutated_streams(draw: Any) -> bytes:
    data = bytearray(draw(valid_streams()))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "insert", "delete", "truncate"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if kind == "flip" and data:
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete" and data:
            del data[at:at + draw(st.integers(1, 8))]
        elif kind == "truncate":
            del data[at:]
    return bytes(data)


streams = st.one_of(
    st.binary(max_size=300),
    st.binary(max_size=64).map(lambda tail: encode(Connect("MQTT", 5, "f", True, 0), 5) + tail),
    st.binary(max_size=64).map(lambda tail: encode(Connect("MQTT", 4, "f", True, 0), 4) + tail),
    mutated_streams(),
    valid_streams(),
)


async def _one(broker: Broker, data: bytes) -> None:
    client = await RawClient.open(broker.listener.port)
    try:
        client.writer.write(data)
        await client.writer.drain()
        client.writer.write_eof()
        received = b""
        while chunk := await asyncio.wait_for(client.reader.read(65536), 5):
            received += chunk
    except ConnectionResetError:
        return  # closed while we were still writing: closed all the same
    finally:
        client.close()
    level = sniff_level(data)
    decoder = Decoder(level if level in (3, 4, 5) else 4)
    decoder.feed(received)  # raises if the broker wrote anything but whole valid packets
    assert decoder.buffered == 0


def test_live_listener_survives_fuzzed_streams(run) -> None:
    loop_errors: list[dict[str, Any]] = []
    seen: list[bytes] = []
    broker = Broker(connect_timeout=2.0)

    async def start() -> RawClient:
        asyncio.get_running_loop().set_exception_handler(lambda _, ctx: loop_errors.append(ctx))
        await broker.__aenter__()
        healthy, _ = await broker.connected(level=5, client_id="healthy")
        return healthy

    healthy = run(start())

    @settings(max_examples=150, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow])
    @given(streams)
    def example(data: bytes) -> None:
        run(_one(broker, data), timeout=10)
        seen.append(data)
        assert loop_errors == []

    async def finish() -> None:
        await healthy.ping()
        fresh, _ = await broker.connected(level=4, client_id="fresh")
        await fresh.ping()
        assert set(c.client_id for c in broker.listener.connections.values()) == {"healthy", "fresh"}
        await broker.__aexit__(None, None, None)

    try:
        example()
        run(finish())
    finally:
        if broker.listener.connections:
            run(broker.__aexit__(None, None, None))
    assert loop_errors == []
    assert len(seen) >= 100
    assert broker.stats.protocol_errors > 10
