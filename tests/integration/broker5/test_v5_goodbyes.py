"""The broker's last word reaches a client that is still sending: every close that
says why (DISCONNECT, refusing CONNACK) shuts down writing and drains the input
before closing, so the kernel sends FIN, not a reset.

Each test sends, behind the packet that ends the connection, a QoS 0 PUBLISH of
8 MiB: more than the broker reads before it decides to close, so input is still
unread when it does. A reset then fails the client's writes (the Paho suite's
client, answering PUBRECs with PUBRELs, died of it before reading DISCONNECT
0x93): each test's sending must succeed, and the reason code must be read after.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from mqtt5_testkit import connect5, expect_disconnect
from mqtt_testkit import RawClient, broker_config

from actorbroker.app import RunningBroker
from actorbroker.codec import (ConnAck, Connect, Disconnect, Packet, Properties, PubRec,
                               Publish, ReasonCode, encode)

Raws = Callable[..., RawClient]

_FLOOD = 8 * 1024 * 1024


@pytest.fixture
def broker(start_broker: Callable[..., RunningBroker], tmp_path: Path) -> RunningBroker:
    """Packets up to 16 MiB: the flood must pass the size limit (what is tested is the FIN)."""
    return start_broker(broker_config(tmp_path, max_packet_size=16 * 1024 * 1024))


def _with_flood(level: int, *packets: Packet) -> bytes:
    """``packets`` encoded, then a QoS 0 PUBLISH of ``_FLOOD`` bytes of payload."""
    header = encode(Publish("flood", b"", 0), level)
    length = len(header) - 2 + _FLOOD  # topic (and v5 properties) plus the payload
    varint = bytearray()
    while True:
        byte, length = length % 128, length // 128
        varint.append(byte | (0x80 if length else 0))
        if not length:
            break
    return (b"".join(encode(p, level) for p in packets) + bytes([header[0]]) + varint
            + header[2:] + bytes(_FLOOD))


def test_receive_maximum_exceeded_0x93_reaches_a_client_that_keeps_sending(raw: Raws) -> None:
    r = raw(5)
    connack = connect5(r, "flood-qos2")
    assert isinstance(connack, ConnAck) and connack.properties.receive_maximum == 20
    # The Paho suite's test_flow_control2: Receive Maximum + 1 QoS 2 PUBLISHes at once.
    r.send_bytes(_with_flood(5, *(Publish("t", b"", 2, packet_id=n) for n in range(1, 22))))
    got = [r.recv() for _ in range(21)]
    assert got[:20] == [PubRec(n) for n in range(1, 21)]
    assert isinstance(got[20], Disconnect)
    assert got[20].reason_code == ReasonCode.RECEIVE_MAXIMUM_EXCEEDED
    r.expect_closed()


def test_a_protocol_error_0x81_reaches_a_client_that_keeps_sending(raw: Raws) -> None:
    r = raw(5)
    assert isinstance(connect5(r, "malformed"), ConnAck)
    r.send_bytes(b"\x36\x03\x00\x01t" + _with_flood(5))  # PUBLISH with QoS 3: malformed
    assert expect_disconnect(r).reason_code == ReasonCode.MALFORMED_PACKET


def test_a_refusing_v5_connack_reaches_a_client_that_keeps_sending(raw: Raws) -> None:
    r = raw(5)
    r.send_bytes(_with_flood(5, Connect("MQTT", 5, "who", True, 60, properties=Properties(
        authentication_method="NO-SUCH-METHOD"))))
    connack = r.recv()
    assert isinstance(connack, ConnAck)
    assert connack.reason_code == ReasonCode.BAD_AUTHENTICATION_METHOD
    r.expect_closed()


def test_a_refusing_v3_connack_reaches_a_client_that_keeps_sending(raw: Raws) -> None:
    r = raw(4)
    r.send_bytes(_with_flood(4, Connect("MQTT", 4, "", False, 60)))
    assert r.recv() == ConnAck(False, 0x02)  # [MQTT-3.1.3-8]: empty id with clean session 0
    r.expect_closed()


def test_a_disconnect_raising_the_session_expiry_from_0_is_0x82(raw: Raws) -> None:
    r = raw(5)
    assert isinstance(connect5(r, "from-zero"), ConnAck)  # no interval: 0
    r.send(Disconnect(properties=Properties(session_expiry_interval=60)))
    disconnect = expect_disconnect(r)
    assert disconnect.reason_code == ReasonCode.PROTOCOL_ERROR  # [MQTT-3.14.2-2]


def test_a_disconnect_changing_a_nonzero_session_expiry_is_accepted(
        broker: RunningBroker, raw: Raws) -> None:
    r = raw(5)
    assert isinstance(connect5(r, "from-ten", clean=True, session_expiry_interval=10), ConnAck)
    r.send(Disconnect(properties=Properties(session_expiry_interval=60)))
    r.expect_closed()  # no DISCONNECT from the broker: the connection just ends
    again = raw(5)
    connack = connect5(again, "from-ten", clean=False, session_expiry_interval=10)
    assert isinstance(connack, ConnAck) and connack.session_present
