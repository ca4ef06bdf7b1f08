"""Limits from the configuration reach the running broker: connections, packet size, connect timeout."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from mqtt_testkit import RawClient, broker_config

from actorbroker.app import RunningBroker
from actorbroker.codec import ConnAck, PingReq, PingResp, Publish


def test_max_connections_per_listener(start_broker: Callable[..., RunningBroker],
                                      tmp_path: Path) -> None:
    config = broker_config(tmp_path)
    listener = dataclasses.replace(config.listeners[0], max_connections=2)
    running = start_broker(dataclasses.replace(config, listeners=(listener,)))
    clients = [RawClient(running.host, running.port) for _ in range(3)]
    try:
        assert clients[0].connect("one") == ConnAck(False, 0)
        assert clients[1].connect("two") == ConnAck(False, 0)
        clients[2].expect_closed()  # accepted and closed at once
        assert running.metrics()["connections_refused"] == 1
    finally:
        for c in clients:
            c.close()


def test_max_packet_size(start_broker: Callable[..., RunningBroker], tmp_path: Path) -> None:
    running = start_broker(broker_config(tmp_path, max_packet_size=100))
    r = RawClient(running.host, running.port)
    try:
        assert r.connect("small") == ConnAck(False, 0)
        r.send(Publish("t", b"x" * 50))
        r.send(PingReq())
        assert r.recv() == PingResp()  # within the limit: fine
        r.send(Publish("t", b"x" * 200))
        r.expect_closed()
        assert running.metrics()["protocol_errors"] == 1
    finally:
        r.close()


def test_connect_timeout(start_broker: Callable[..., RunningBroker], tmp_path: Path) -> None:
    running = start_broker(broker_config(tmp_path, connect_timeout=0.2))
    r = RawClient(running.host, running.port)
    try:
        r.expect_closed(timeout=5)  # no CONNECT sent
        assert running.metrics()["connect_timeouts"] == 1
    finally:
        r.close()
