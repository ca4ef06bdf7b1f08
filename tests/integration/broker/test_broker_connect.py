"""CONNECT/CONNACK against a running broker: return codes, client ids, session present, logs."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest
from mqtt_testkit import Client, RawClient, broker_config

from actorbroker.app import RunningBroker
from actorbroker.codec import ConnAck, PingReq, PingResp, Subscribe, Subscription, encode
from actorbroker.codec.packets import Connect

Raw = Callable[..., RawClient]


def _connect_bytes(level: int, client_id: bytes = b"c") -> bytes:
    """A CONNECT with any protocol level (the codec only encodes levels it knows)."""
    body = b"\x00\x04MQTT" + bytes([level, 0x02]) + b"\x00\x3c" + len(client_id).to_bytes(2, "big")
    body += client_id
    return bytes([0x10, len(body)]) + body


def test_unknown_protocol_level_gets_0x01_and_is_closed(raw: Raw) -> None:
    r = raw()
    r.send_bytes(_connect_bytes(7))
    assert r.recv() == ConnAck(False, 0x01)  # [MQTT-3.1.2-2]
    r.expect_closed()


@pytest.mark.parametrize(("client_id", "code"), [
    ("x" * 23, 0),
    ("x" * 24, 0x02),   # MQTT 3.1: 1 to 23 characters
    ("", 0x02),
])
def test_mqtt31_client_id_rules(raw: Raw, client_id: str, code: int) -> None:
    r = raw(level=3)
    assert r.connect(client_id) == ConnAck(False, code)
    if code:
        r.expect_closed()
    else:
        r.send(PingReq())
        assert r.recv() == PingResp()


def test_mqtt311_long_client_ids_are_accepted(raw: Raw) -> None:
    assert raw().connect("y" * 200) == ConnAck(False, 0)  # [MQTT-3.1.3-5]: at least 1..23


def test_empty_client_id_with_clean_session_0_is_refused(raw: Raw) -> None:
    r = raw()
    assert r.connect("", clean=False) == ConnAck(False, 0x02)  # [MQTT-3.1.3-8]
    r.expect_closed()


def test_empty_client_id_with_clean_session_1_is_assigned_one(
        broker: RunningBroker, raw: Raw, client: Callable[..., Client]) -> None:
    r = raw()
    assert r.connect("", clean=True) == ConnAck(False, 0)  # [MQTT-3.1.3-6]
    r.send(Subscribe(1, (Subscription("anon/t", 1),)))
    r.recv()  # SUBACK: the assigned session works
    c = client("")  # paho, too
    c.publish("anon/t", b"hi", qos=1)
    packet = r.recv()
    assert packet.topic == "anon/t" and packet.payload == b"hi"  # type: ignore[union-attr]
    sessions = broker.call(lambda: sorted(broker.node.names.sessions))
    assert len([s for s in sessions if s.startswith("auto-")]) == 2


def test_keepalive_above_the_maximum_is_refused(start_broker: Callable[..., RunningBroker],
                                                 tmp_path: Path) -> None:
    running = start_broker(broker_config(tmp_path, max_keepalive=100))
    r = RawClient(running.host, running.port)
    try:
        assert r.connect("k", keepalive=101) == ConnAck(False, 0x02)
        r.expect_closed()
    finally:
        r.close()
    ok = RawClient(running.host, running.port)
    try:
        assert ok.connect("k", keepalive=100) == ConnAck(False, 0)
    finally:
        ok.close()


def test_session_present_only_for_a_resumed_persistent_session(raw: Raw) -> None:
    first = raw()
    assert first.connect("sp", clean=False) == ConnAck(False, 0)  # [MQTT-3.2.2-3]
    first.disconnect()
    again = raw()
    assert again.connect("sp", clean=False) == ConnAck(True, 0)  # [MQTT-3.2.2-2]
    again.disconnect()
    clean = raw()
    assert clean.connect("sp", clean=True) == ConnAck(False, 0)  # [MQTT-3.2.2-1]
    clean.disconnect()
    after_clean = raw()
    assert after_clean.connect("sp", clean=False) == ConnAck(False, 0)


def test_mqtt31_connack_never_says_session_present(raw: Raw) -> None:
    first = raw(level=3)
    first.connect("sp31", clean=False)
    first.disconnect()
    again = raw(level=3)
    assert again.connect("sp31", clean=False) == ConnAck(False, 0)


def test_a_second_connect_on_a_connection_closes_it(raw: Raw) -> None:
    r = raw()
    r.connect("twice")
    r.send_bytes(encode(Connect("MQTT", 4, "twice", True, 60), 4))  # [MQTT-3.1.0-2]
    r.expect_closed()


def test_connect_and_disconnect_are_logged_with_client_id_and_reason(
        raw: Raw, client: Callable[..., Client], broker: RunningBroker,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="actorbroker")
    c = client("logged")
    c.disconnect()
    r = raw()
    r.connect("dropped")
    r.close()
    broker.wait_until(lambda m: m["clients_connected"] == 0)
    lines = [rec.getMessage() for rec in caplog.records if rec.name == "actorbroker.session"]
    assert any("client 'logged' connected from 127.0.0.1:" in line and "MQTT 3.1.1" in line
               for line in lines), lines
    assert any("client 'logged' disconnected" in line and "client sent DISCONNECT" in line
               for line in lines), lines
    assert any("client 'dropped' disconnected" in line and "without DISCONNECT" in line
               for line in lines), lines


def test_session_resumed_is_logged_whenever_session_present_is_1(
        raw: Raw, broker: RunningBroker, caplog: pytest.LogCaptureFixture) -> None:
    """Also for a session without subscriptions (it still had its state kept)."""
    caplog.set_level(logging.INFO, logger="actorbroker")
    r = raw()
    assert not r.connect("plain", clean=False).session_present
    r.disconnect()
    r = raw()
    assert r.connect("plain", clean=False).session_present
    r.disconnect()
    lines = [rec.getMessage() for rec in caplog.records if rec.name == "actorbroker.session"
             and "client 'plain' connected" in rec.getMessage()]
    assert ["session resumed" in line for line in lines] == [False, True], lines


def test_log_lines_name_versions_as_users_know_them(
        raw: Raw, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="actorbroker")
    r = raw()
    assert r.connect("", clean=False).reason_code == 0x02  # [MQTT-3.1.3-8]
    r.expect_closed()
    refused = [rec.getMessage() for rec in caplog.records if "refused client" in rec.getMessage()]
    assert refused and all("(MQTT 3.1.1)" in line for line in refused), refused
    assert "MQTT level" not in caplog.text
