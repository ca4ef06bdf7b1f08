"""A client on the wrong kind of listener: one log line naming the listener and the peer, then closed.

A TLS ClientHello on a tcp or ws listener, plain MQTT (or HTTP) on a tls or
wss listener, and a socket that says nothing on a TLS listener.
"""

from __future__ import annotations

import logging
import socket
import ssl
import time
from collections.abc import Callable

import pytest
from listeners_kit import port_of
from mqtt_testkit import RawClient
from pki import Authority

from actorbroker.app import RunningBroker
from actorbroker.codec import Connect

Broker = Callable[..., RunningBroker]


def closed(sock: socket.socket) -> bool:
    """True once the broker closed ``sock``: EOF, or a reset (it left our bytes unread)."""
    try:
        return sock.recv(100) == b""
    except ConnectionResetError:
        return True


def _lines_about(caplog: pytest.LogCaptureFixture, peer: str) -> list[str]:
    """The broker's log lines at WARNING or above that name ``peer``."""
    return [r.getMessage() for r in caplog.records
            if r.levelno >= logging.WARNING and peer in r.getMessage()]


@pytest.mark.parametrize("kind", ["tcp", "ws"])
def test_a_client_hello_on_a_plain_listener(secure_broker: Broker, pki: Authority, kind: str,
                                            caplog: pytest.LogCaptureFixture) -> None:
    broker = secure_broker(kind)
    port = port_of(broker, kind)
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    peer = f"127.0.0.1:{sock.getsockname()[1]}"
    with caplog.at_level(logging.INFO):
        with pytest.raises((ssl.SSLError, ConnectionError)):
            ssl.create_default_context(cafile=pki.ca).wrap_socket(sock, server_hostname="localhost")
        sock.close()
        broker.wait_until(lambda m: True)  # a round trip through the broker's loop
    lines = _lines_about(caplog, peer)
    plain, wanted = ("MQTT", "tls") if kind == "tcp" else ("WebSocket", "wss")
    assert lines == [(f"listener {kind} 127.0.0.1:{port}: TLS handshake (ClientHello) from "
                      f"{peer} on a plain {plain} listener: closing (the client wants a "
                      f"{wanted} listener)")]


@pytest.mark.parametrize("kind", ["tls", "wss"])
def test_plain_mqtt_on_a_tls_listener(secure_broker: Broker, kind: str,
                                      caplog: pytest.LogCaptureFixture) -> None:
    broker = secure_broker(kind)
    port = port_of(broker, kind)
    with caplog.at_level(logging.INFO):
        raw = RawClient("127.0.0.1", port)
        peer = f"127.0.0.1:{raw.sock.getsockname()[1]}"
        raw.send(Connect("MQTT", 4, "no-tls", True, 30))
        raw.expect_closed()
        raw.close()
        http = socket.create_connection(("127.0.0.1", port), timeout=5)
        http_peer = f"127.0.0.1:{http.getsockname()[1]}"
        http.sendall(b"GET /mqtt HTTP/1.1\r\nHost: localhost\r\n\r\n")
        assert closed(http)
        http.close()
    assert _lines_about(caplog, peer) == [
        (f"listener {kind} 127.0.0.1:{port}: plain MQTT (CONNECT) from {peer} on a TLS "
         "listener: closing (the client must use TLS)")]
    assert _lines_about(caplog, http_peer) == [
        (f"listener {kind} 127.0.0.1:{port}: not TLS (first byte 0x47) from {http_peer} on a "
         "TLS listener: closing (the client must use TLS)")]


def test_silence_on_a_tls_listener_is_bounded(secure_broker: Broker, pki: Authority,
                                              caplog: pytest.LogCaptureFixture) -> None:
    broker = secure_broker("tls", connect_timeout=0.5, max_connections=1)
    port = port_of(broker, "tls")
    with caplog.at_level(logging.INFO, "actorbroker.transport"):
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        peer = f"127.0.0.1:{sock.getsockname()[1]}"
        assert closed(sock)  # by the broker, well within the socket's 5 s
        sock.close()
    assert [r.getMessage() for r in caplog.records if peer in r.getMessage()] == [
        f"listener tls 127.0.0.1:{port}: no TLS handshake from {peer} within 0.5s, closing"]
    # The listener forgot it: at max_connections = 1, the next client gets in.
    raw = RawClient("127.0.0.1", port)
    raw.sock = ssl.create_default_context(cafile=pki.ca).wrap_socket(raw.sock,
                                                                     server_hostname="localhost")
    assert raw.connect("after-silence").reason_code == 0
    raw.close()


def test_stopping_drops_handshakes_under_way(secure_broker: Broker,
                                             caplog: pytest.LogCaptureFixture) -> None:
    broker = secure_broker("tls", "ws", "wss")
    socks = [socket.create_connection(("127.0.0.1", port_of(broker, kind)), timeout=5)
             for kind in ("tls", "ws", "wss")]
    midway = socket.create_connection(("127.0.0.1", port_of(broker, "tls")), timeout=5)
    midway.sendall(b"\x16\x03\x01")  # a ClientHello's first bytes, then nothing
    socks.append(midway)
    half = socket.create_connection(("127.0.0.1", port_of(broker, "ws")), timeout=5)
    half.sendall(b"GET /mqtt HTTP/1.1\r\n")  # an upgrade that never ends
    socks.append(half)
    broker.wait_until(lambda m: True)  # every socket accepted by now (one loop round trip)
    with caplog.at_level(logging.WARNING):
        started = time.monotonic()
        broker.run(broker.broker.stop())
        took = time.monotonic() - started
    assert took < 3.0, took  # not close_timeout + 1 s waiting for sockets nobody closes
    assert all(closed(sock) for sock in socks)
    for sock in socks:
        sock.close()
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
