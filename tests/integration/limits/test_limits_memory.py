"""Memory an unauthenticated or vanished client can pin: bounded, and given back at once.

A subprocess broker (its own /proc/PID/status) is attacked over real
sockets: huge announced CONNECTs are refused on their fixed header, before
their body is buffered; unfinished packets of closed connections are freed
by reference counting, without waiting for a garbage collection (the
broker tunes its collector so that a quiet broker may not run one for a
long time). In-process, with the collector off, no connection object
survives its socket, and no session actor its clean session.
"""

from __future__ import annotations

import gc
import socket
import threading
import time
from collections.abc import Callable

from attack_kit import send_zeros
from mqtt_testkit import RawClient, broker_config
from served_kit import Served

from actorbroker.actors.session import SessionActor
from actorbroker.app import Broker
from actorbroker.codec import ConnAck, Connect, Disconnect, Publish, encode
from actorbroker.codec.primitives import encode_varint
from actorbroker.transport.connection import MqttConnection

MB = 1024 * 1024


def _flood(host: str, port: int, first: bytes, total: int) -> bool:
    """Send ``first`` then zeros up to ``total`` bytes; True if the broker closed the socket.

    The broker reads and discards for a moment after it decided to close (so
    that a goodbye is not lost to a reset), so most of the bytes may go out.
    """
    with socket.create_connection((host, port), timeout=10) as sock:
        try:
            send_zeros(sock, first, total)
            return sock.recv(1) == b""
        except OSError:  # reset or broken pipe: the broker closed
            return True


def _header(ptype_flags: int, remaining: int) -> bytes:
    return bytes([ptype_flags]) + encode_varint(remaining)


def test_four_200_mb_connects_are_refused_on_their_header(served: Callable[..., Served]) -> None:
    broker = served()
    baseline = broker.rss
    connect = encode(Connect("MQTT", 4, "big", True, 0), 4)
    # A CONNECT announcing 200 MB: its real start, then zeros as the rest of its body.
    first = _header(0x10, 200 * MB) + connect[2:]
    closed: list[bool] = []
    threads = [threading.Thread(target=lambda: closed.append(
        _flood(broker.host, broker.port, first, 200 * MB))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert closed == [True] * 4
    grew = broker.peak - baseline
    print(f"4 x 200 MB CONNECT: peak RSS {baseline / MB:.1f} MB + {grew / MB:.1f} MB,"
          f" after {broker.rss / MB:.1f} MB")
    assert grew < 16 * MB
    assert broker.rss - baseline < 8 * MB
    refused = [line for line in broker.log_lines()
               if "exceeds the limit before authentication 65536" in line]
    assert len(refused) == 4


def test_closed_connections_give_their_buffers_back_at_once(served: Callable[..., Served]) -> None:
    """32 clients each leave 900 KB of an unfinished PUBLISH and vanish: RSS comes back."""
    broker = served()
    baseline = broker.rss
    size = 1000 * 1024  # under the 1 MiB default
    publish = encode(Publish("t", b""), 4)
    head = _header(0x30, size) + publish[2:] + bytes(900 * 1024)
    clients = []
    for i in range(32):
        r = RawClient(broker.host, broker.port)
        assert r.connect(f"partial-{i}", keepalive=0) == ConnAck(False, 0)
        r.send_bytes(head)
        clients.append(r)
    broker.wait_until(lambda: broker.rss - baseline > 20 * MB, what="the buffers filling RSS")
    high = broker.rss
    for r in clients:
        r.close()
    broker.wait_until(lambda: broker.rss - baseline < 8 * MB, timeout=15,
                      what=f"RSS back near {baseline / MB:.0f} MB (was {high / MB:.0f} MB)")
    print(f"32 x 900 KB unfinished: RSS {baseline / MB:.1f} -> {high / MB:.1f}"
          f" -> {broker.rss / MB:.1f} MB")


def test_no_connection_object_outlives_its_socket_without_a_collection(
        tmp_path: object) -> None:
    """Reference counting alone frees every MqttConnection and every SessionActor of an
    ended clean session (with the commit log, the durable part of the session pointed back
    at its actor): no cycle on the connection path."""
    config = broker_config(tmp_path, connect_timeout=0.3)
    with Broker.run_in_thread(config) as running:
        def cycle(i: int) -> None:
            level = 5 if i % 2 else 4
            r = RawClient(running.host, running.port, level)
            try:
                match i % 4:
                    case 0:  # a clean goodbye
                        r.connect(f"c{i}")
                        r.send(Disconnect())
                        r.expect_closed()
                    case 1:  # the client vanishes, mid-packet
                        r.connect(f"c{i}")
                        r.send_bytes(_header(0x30, 5000) + bytes(100))
                    case 2:  # a protocol violation
                        r.connect(f"c{i}")
                        r.send_bytes(b"\x00\x00")
                        r.expect_closed()
                    case 3:  # no CONNECT at all: the connect timeout
                        r.expect_closed()
            finally:
                r.close()

        cycle(0)  # anything made once per process (caches, pools) is made now
        running.wait_until(lambda m: m["connections_current"] == 0)
        gc.collect()
        gc.disable()
        try:
            for i in range(40):
                cycle(i)
            running.wait_until(lambda m: m["connections_current"] == 0)
            # The session actors drop their Connection when told ConnectionLost, and stop
            # when their clean session ends: poll for it.
            deadline = time.monotonic() + 10
            while (left := sum(type(o) in (MqttConnection, SessionActor)
                               for o in gc.get_objects())) and time.monotonic() < deadline:
                time.sleep(0.05)
            kinds = {type(o).__name__ for o in gc.get_objects()
                     if type(o) in (MqttConnection, SessionActor)}
            assert left == 0, f"{left} objects ({kinds}) wait for a garbage collection"
        finally:
            gc.enable()
