"""Who gets in: per-address connection and rate limits, and refusal under overload.

Real sockets from two loopback addresses (127.0.0.1 and 127.0.0.2): the
limits of one address leave the other alone. Overload is real too: a
memory limit below what the broker holds, and an event loop blocked for
longer than max_loop_lag; CONNECTs are then refused with 0x89 (v5) or 0x03
(v3), and the broker accepts again once the load is gone.
"""

from __future__ import annotations

import dataclasses
import logging
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from mqtt_testkit import RawClient, broker_config

from actorbroker.app import RunningBroker
from actorbroker.codec import ConnAck, Connect, Decoder, PingReq, PingResp, encode

Start = Callable[..., RunningBroker]
OTHER = "127.0.0.2"  # Linux routes all of 127/8 to the loopback


def _listener_config(tmp_path: Path, **listener: object) -> object:
    config = broker_config(tmp_path)
    first = dataclasses.replace(config.listeners[0], **listener)
    return dataclasses.replace(config, listeners=(first,))


def _try_connect(running: RunningBroker, client_id: str, source: str = "127.0.0.1",
                 level: int = 4) -> tuple[socket.socket, ConnAck | None]:
    """A socket from ``source``; its CONNACK, or None if the broker closed it first."""
    sock = socket.create_connection((running.host, running.port), timeout=5,
                                    source_address=(source, 0))
    try:
        sock.sendall(encode(Connect("MQTT", level, client_id, True, 0), level))
        data = b""
        decoder = Decoder(level)
        while not (packets := decoder.feed(data)):
            data = sock.recv(4096)
            if not data:
                return sock, None
    except ConnectionResetError:
        return sock, None
    assert isinstance(packets[0], ConnAck)
    return sock, packets[0]


def test_connections_per_address(start_broker: Start, tmp_path: Path) -> None:
    running = start_broker(_listener_config(tmp_path, max_connections_per_ip=3))
    held = [_try_connect(running, f"a{i}") for i in range(3)]
    try:
        assert [c for _, c in held] == [ConnAck(False, 0)] * 3
        extra, connack = _try_connect(running, "a3")
        extra.close()
        assert connack is None  # closed before any MQTT was read
        other, connack = _try_connect(running, "b0", OTHER)
        other.close()
        assert connack == ConnAck(False, 0)  # another address is not affected
        held.pop()[0].close()
        running.wait_until(lambda m: m["connections_current"] == 2)
        again, connack = _try_connect(running, "a4")
        again.close()
        assert connack == ConnAck(False, 0)  # a place freed up
        assert running.metrics()["connections_refused"] == 1
    finally:
        for sock, _ in held:
            sock.close()


def test_connect_rate_per_address(start_broker: Start, tmp_path: Path) -> None:
    running = start_broker(_listener_config(tmp_path, max_connect_rate_per_ip=5.0))
    started = time.monotonic()
    results = []
    for i in range(20):
        sock, connack = _try_connect(running, f"r{i}")
        sock.close()
        results.append(connack is not None)
    took = time.monotonic() - started
    # A burst of 5, then 5 a second for as long as the loop took.
    assert 5 <= sum(results) <= 5 + int(5 * took) + 1, (results, took)
    assert not all(results)
    other, connack = _try_connect(running, "other", OTHER)
    other.close()
    assert connack == ConnAck(False, 0)


def test_over_max_memory_connects_are_refused_busy(start_broker: Start, tmp_path: Path,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="actorbroker.transport")
    running = start_broker(broker_config(tmp_path, max_memory=1024 * 1024))  # below any RSS
    deadline = time.monotonic() + 5
    while not running.metrics()["overload_refusals"]:  # the first sample comes within 0.25 s
        assert time.monotonic() < deadline, "no CONNECT refused"
        _try_connect(running, "probe")[0].close()
    refused = {}
    for level in (4, 5):
        sock, connack = _try_connect(running, f"v{level}", level=level)
        sock.close()
        assert connack is not None
        refused[level] = connack.reason_code
    assert refused == {4: 0x03, 5: 0x89}  # Server unavailable / Server busy
    assert any("overloaded, refusing new connections: resident memory" in r.getMessage()
               for r in caplog.records)


def test_a_lagging_event_loop_refuses_then_recovers(start_broker: Start, tmp_path: Path) -> None:
    # 0.5 s: a machine busy with other jobs lags 0.2 s now and then by itself.
    running = start_broker(broker_config(tmp_path, max_loop_lag=0.5))
    served = RawClient(running.host, running.port)
    assert served.connect("before", keepalive=0) == ConnAck(False, 0)
    blocked = threading.Event()

    def block() -> None:
        blocked.set()
        time.sleep(1.5)  # the overload itself: the loop can run nothing else meanwhile

    blocker = threading.Thread(target=running.call, args=(block,))
    blocker.start()
    try:
        assert blocked.wait(5)
        sock, connack = _try_connect(running, "during", level=5)  # read once the loop is back
        sock.close()
        assert connack is not None and connack.reason_code == 0x89
        served.send(PingReq())
        assert served.recv() == PingResp()  # a client already connected is served
        deadline = time.monotonic() + 20
        while True:  # the next sample under the limit clears it
            sock, connack = _try_connect(running, "after")
            sock.close()
            if connack == ConnAck(False, 0) or time.monotonic() > deadline:
                break
        assert connack == ConnAck(False, 0)
        assert running.metrics()["overload_refusals"] >= 1
    finally:
        blocker.join(10)
        served.close()
