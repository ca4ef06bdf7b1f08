"""ws and wss listeners: paho over WebSocket, and a raw client that cuts frames as it likes.

MQTT is a byte stream inside binary frames: a packet may span frames
(fragments, and frames cut across TCP writes) and a frame may hold several
packets. The broker answers pings, refuses text frames ([MQTT-6.0.0-1]),
other paths and clients without the ``mqtt`` subprotocol, and completes
the close handshake.
"""

from __future__ import annotations

import logging
import socket
import ssl
from collections.abc import Callable

import pytest
from listeners_kit import port_of
from mqtt_testkit import Client
from pki import Authority
from websockets.frames import Close, Opcode
from ws_client import WsClient

from actorbroker.app import RunningBroker
from actorbroker.codec import (
    ConnAck,
    Connect,
    PingReq,
    PingResp,
    PubAck,
    Publish,
    SubAck,
    Subscribe,
    Subscription,
)

Broker = Callable[..., RunningBroker]


def context(pki: Authority) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=pki.ca)


@pytest.mark.parametrize("kind", ["ws", "wss"])
def test_paho_over_websocket(secure_broker: Broker, pki: Authority, kind: str) -> None:
    broker = secure_broker("tcp", kind)
    port = port_of(broker, kind)
    ws = Client("127.0.0.1", port, f"paho-{kind}", transport="websockets")
    if kind == "wss":
        ws.paho.tls_set(ca_certs=pki.ca)
    plain = Client("127.0.0.1", port_of(broker, "tcp"), f"plain-{kind}")
    try:
        assert ws.connect().rc == 0 and plain.connect().rc == 0
        assert ws.subscribe("web/#", 2) == [2]
        plain.subscribe("back/#", 1)
        for qos in (0, 1, 2):
            plain.publish(f"web/{qos}", b"y" * 100_000, qos)  # larger than one socket read
            message = ws.expect()
            assert (message.topic, len(message.payload), message.qos) == (f"web/{qos}", 100_000,
                                                                          qos)
            ws.publish(f"back/{qos}", b"from the browser side", qos)
            assert plain.expect().payload == b"from the browser side"
        ws.disconnect()
    finally:
        ws.close()
        plain.close()


def _connect(client_id: str) -> Connect:
    return Connect("MQTT", 4, client_id, True, 30)


@pytest.mark.parametrize("kind", ["ws", "wss"])
def test_packets_split_across_frames_and_packed_into_one(secure_broker: Broker, pki: Authority,
                                                        kind: str) -> None:
    broker = secure_broker(kind)
    raw = WsClient(port_of(broker, kind), context=context(pki) if kind == "wss" else None)
    try:
        assert raw.open and raw.response is not None
        assert raw.response.headers["Sec-WebSocket-Protocol"] == "mqtt"
        # CONNECT in three fragments, their bytes written 3 at a time.
        raw.send(_connect("frames"), cuts=(1, 9), chunk=3)
        assert raw.recv_packets(1) == [ConnAck(False, 0)]
        # SUBSCRIBE, a QoS 1 PUBLISH to it and PINGREQ in one frame; then a PUBLISH whose
        # header ends one fragment and whose payload spans two more.
        raw.send(Subscribe(1, (Subscription("f/t", 1),)), Publish("f/t", b"one", 1, packet_id=2),
                 PingReq())
        first = raw.recv_packets(4)  # the SUBACK waits for the subscription; the rest need not
        assert SubAck(1, (1,)) in first and PubAck(2) in first and PingResp() in first
        assert [p.payload for p in first if isinstance(p, Publish)] == [b"one"]
        raw.send(Publish("f/t", b"two" * 1000, 1, packet_id=3), cuts=(2, 1500))
        second = raw.recv_packets(2)
        assert PubAck(3) in second
        assert [p.payload for p in second if isinstance(p, Publish)] == [b"two" * 1000]
    finally:
        raw.close()


def test_ping_pong_and_the_close_handshake(secure_broker: Broker) -> None:
    broker = secure_broker("ws")
    raw = WsClient(port_of(broker, "ws"))
    try:
        raw.send(_connect("pinger"))
        assert raw.recv_packets(1) == [ConnAck(False, 0)]
        raw.ws.send_ping(b"are you there")
        raw.flush()
        pong = raw.recv_frame()
        assert (pong.opcode, pong.data) == (Opcode.PONG, b"are you there")
        raw.ws.send_close(1000, "bye")
        raw.flush()
        frames = raw.until_closed()  # the echo, then the broker closes the socket
        assert [f.opcode for f in frames] == [Opcode.CLOSE]
        assert Close.parse(frames[0].data).code == 1000
        broker.wait_until(lambda m: m["clients_connected"] == 0)
    finally:
        raw.close()


def test_a_text_frame_closes_the_connection(secure_broker: Broker) -> None:
    broker = secure_broker("ws")
    raw = WsClient(port_of(broker, "ws"))
    try:
        raw.send(_connect("texter"))
        assert raw.recv_packets(1) == [ConnAck(False, 0)]
        raw.ws.send_text(b"\x30\x05\x00\x01t")  # a PUBLISH, but in a text frame
        raw.flush()
        frames = raw.until_closed()
        assert [Close.parse(f.data).code for f in frames if f.opcode is Opcode.CLOSE] == [1003]
    finally:
        raw.close()


@pytest.mark.parametrize("frame", [
    b"\x82\x02\xc0\x00",                                       # a PINGREQ, not masked
    b"\x83\x82\x00\x00\x00\x00\xc0\x00",                       # a reserved opcode
    b"\xc2\x82\x00\x00\x00\x00\xc0\x00",                       # RSV1, no extension
    b"\x82\xff" + (1 << 62).to_bytes(8, "big") + b"\x00" * 4,    # 2**62 bytes announced
], ids=["unmasked", "opcode", "rsv1", "huge"])
def test_a_broken_frame_closes_and_the_log_names_the_rule(
        secure_broker: Broker, caplog: pytest.LogCaptureFixture, frame: bytes) -> None:
    # Found by bench/fuzz.py --kind ws: these lines named no rule, unlike MQTT's.
    broker = secure_broker("ws")
    raw = WsClient(port_of(broker, "ws"))
    try:
        raw.send(_connect("framer"))
        assert raw.recv_packets(1) == [ConnAck(False, 0)]
        with caplog.at_level(logging.WARNING, "actorbroker.transport"):
            raw.sock.sendall(frame)
            raw.until_closed()
            broker.wait_until(lambda m: m["clients_connected"] == 0)
    finally:
        raw.close()
    lines = [line for line in (r.getMessage() for r in caplog.records)
             if "WebSocket protocol error" in line]
    assert len(lines) == 1, lines
    assert ("(RFC 6455 section 10.4," if frame[1] == 0xFF else "(RFC 6455 section 5,") in lines[0]


def test_the_broker_closes_with_a_close_frame(secure_broker: Broker) -> None:
    broker = secure_broker("ws")
    raw = WsClient(port_of(broker, "ws"))
    try:
        raw.send(_connect("violator"))
        assert raw.recv_packets(1) == [ConnAck(False, 0)]
        raw.send(_connect("again"))  # a second CONNECT is a protocol violation
        frames = raw.until_closed()
        assert [f.opcode for f in frames] == [Opcode.CLOSE]
    finally:
        raw.close()


def test_upgrades_that_are_refused(secure_broker: Broker) -> None:
    broker = secure_broker("ws")
    port = port_of(broker, "ws")
    wrong_path = WsClient(port, "/other")
    assert wrong_path.response is not None and wrong_path.response.status_code == 404
    assert wrong_path.until_closed() == []
    no_subprotocol = WsClient(port, subprotocols=None)
    assert no_subprotocol.response is not None
    assert no_subprotocol.response.status_code == 400
    other = WsClient(port, subprotocols=("wamp",))
    assert other.response is not None and other.response.status_code == 400
    old = WsClient(port, "/mqtt?client=1", subprotocols=("mqttv3.1",))  # old MQTT.js
    assert old.open and old.response is not None
    assert old.response.headers["Sec-WebSocket-Protocol"] == "mqttv3.1"
    for client in (wrong_path, no_subprotocol, other, old):
        client.close()


def test_an_empty_path_takes_any(secure_broker: Broker) -> None:
    broker = secure_broker("ws", path="")
    raw = WsClient(port_of(broker, "ws"), "/any/where")
    try:
        assert raw.open
        raw.send(_connect("anywhere"))
        assert raw.recv_packets(1) == [ConnAck(False, 0)]
    finally:
        raw.close()


def test_a_frame_over_the_limit_closes_with_1009(secure_broker: Broker) -> None:
    broker = secure_broker("ws", max_packet_size=1000)  # frames: up to 64 KiB all the same
    raw = WsClient(port_of(broker, "ws"))
    try:
        raw.send(_connect("big"))
        assert raw.recv_packets(1) == [ConnAck(False, 0)]
        raw.ws.send_binary(bytes(70_000))  # refused on its header, before any MQTT byte
        raw.flush()
        codes = [Close.parse(f.data).code for f in raw.until_closed() if f.opcode is Opcode.CLOSE]
        assert codes == [1009]
    finally:
        raw.close()


def test_handshakes_that_never_come_right(secure_broker: Broker,
                                          caplog: pytest.LogCaptureFixture) -> None:
    broker = secure_broker("ws", connect_timeout=0.5)
    port = port_of(broker, "ws")
    with caplog.at_level(logging.INFO, "actorbroker.transport"):
        silent = socket.create_connection(("127.0.0.1", port), timeout=5)
        garbage = socket.create_connection(("127.0.0.1", port), timeout=5)
        garbage.sendall(b"\x10\x0c\x00\x04MQTT\x04\x02\x00\x1e\x00\x00")  # MQTT, not HTTP
        junk = socket.create_connection(("127.0.0.1", port), timeout=5)
        junk.sendall(b"HELLO\r\n\r\n")  # not an HTTP request
        headers = socket.create_connection(("127.0.0.1", port), timeout=5)
        headers.sendall(b"GET /mqtt HTTP/1.1\r\n" + b"X-Filler: y\r\n" * 200 + b"\r\n")
        answers = [_read_all(s) for s in (silent, garbage, junk, headers)]
        for sock in (silent, garbage, junk, headers):
            sock.close()
    assert answers[:3] == [b"", b"", b""]
    assert answers[3].startswith(b"HTTP/1.1 431 ")  # too many header fields
    lines = [r.getMessage() for r in caplog.records]
    assert any("no WebSocket handshake from" in line and "within 0.5s" in line for line in lines)
    assert any("plain MQTT (CONNECT) from" in line and "on a WebSocket listener" in line
               for line in lines)
    assert any("not a WebSocket handshake from" in line for line in lines)
    # The listener still serves.
    raw = WsClient(port)
    raw.send(_connect("after"))
    assert raw.recv_packets(1) == [ConnAck(False, 0)]
    raw.close()


def _read_all(sock: socket.socket) -> bytes:
    """Everything the broker sends until it closes (a reset counts as the end)."""
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except ConnectionResetError:
        pass
    return data


def test_wss_with_the_certificate_as_user_name(secure_broker: Broker, pki: Authority,
                                               caplog: pytest.LogCaptureFixture) -> None:
    broker = secure_broker("wss", require_certificate=True, use_identity_as_username=True,
                           allow_anonymous=False)
    tls = context(pki)
    tls.load_cert_chain(pki.alice.cert, pki.alice.key)
    with caplog.at_level(logging.INFO, "actorbroker.session"):
        raw = WsClient(port_of(broker, "wss"), context=tls)
        raw.send(Connect("MQTT", 4, "wss-alice", True, 30, username="nobody", password=b"x"))
        assert raw.recv_packets(1) == [ConnAck(False, 0)]
        raw.close()
    assert any("client 'wss-alice' connected" in r.getMessage()
               and "user 'alice'" in r.getMessage() for r in caplog.records)
