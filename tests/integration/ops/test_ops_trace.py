"""``[log] trace``: every packet of matching clients in the log, sizes not payloads; a served
broker with real paho clients."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from mqtt_testkit import Client, Serve

from actorbroker.codec import Connect, Publish, Subscribe, Subscription, Will
from actorbroker.transport.trace import describe, traced

STARTED = r"actorbroker started: listening on 127\.0\.0\.1:(\d+)"


@pytest.fixture
def serve() -> Iterator[list[Serve]]:
    started: list[Serve] = []
    yield started
    for s in started:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.wait()


def _exchange(port: int, client_id: str, secret: bytes) -> None:
    client = Client("127.0.0.1", port, client_id)
    try:
        assert client.connect().rc == 0
        client.subscribe(f"tr/{client_id}", 1)
        client.publish(f"tr/{client_id}", secret, qos=1)  # waits for the PUBACK
        assert client.expect().payload == secret
        client.disconnect()
    finally:
        client.close()


def test_traced_clients_packets_are_logged_without_payloads(tmp_path: Path,
                                                             serve: list[Serve]) -> None:
    (tmp_path / "broker.toml").write_text('[log]\ntrace = ["traced-*", "other"]\n')
    broker = Serve(tmp_path, "-c", "broker.toml", "--data-dir", "data", "--port", "0")
    serve.append(broker)
    port = int(broker.wait_for(STARTED).group(1))
    _exchange(port, "plain-1", b"UNTRACED-PAYLOAD-1234")
    broker.wait_for(r"client 'plain-1' disconnected from")
    _exchange(port, "traced-1", b"SECRET-PAYLOAD-5678")
    broker.wait_for(r"client 'traced-1' disconnected from")
    assert broker.stop() == 0
    log = "\n".join(broker.log)
    traces = [line for line in broker.log if " actorbroker.trace: " in line]
    said = [line.split("actorbroker.trace: ", 1)[1] for line in traces]
    assert all(line.startswith("INFO    ", 25) for line in traces)
    assert said[0].startswith("client 'traced-1' in CONNECT level=4 clean=1 keepalive=60 "
                              "will=none")
    assert "client 'traced-1' out CONNACK reason=0x00" in said
    assert "client 'traced-1' in SUBSCRIBE id=1 filters='tr/traced-1':qos1" in said
    assert "client 'traced-1' out SUBACK id=1 reasons=0x01" in said
    assert "client 'traced-1' in PUBLISH id=2 topic='tr/traced-1' qos=1 retain=0 dup=0 " \
           "size=19" in said
    assert "client 'traced-1' out PUBACK id=2 reason=0x00" in said
    delivered = [s for s in said if re.fullmatch(
        r"client 'traced-1' out PUBLISH id=\d+ topic='tr/traced-1' qos=1 retain=0 dup=0 "
        r"size=19", s)]
    assert len(delivered) == 1
    assert re.search(r"client 'traced-1' in PUBACK id=\d+", "\n".join(said))
    assert said[-1] == "client 'traced-1' in DISCONNECT reason=0x00"
    assert not [s for s in said if "plain-1" in s]  # untraced: nothing
    assert "SECRET-PAYLOAD" not in log and "UNTRACED-PAYLOAD" not in log


def test_trace_patterns_and_descriptions() -> None:
    assert traced(("sensor-*",), "sensor-7") and not traced(("sensor-*",), "Sensor-7")
    assert traced(("a?", "b"), "b") and not traced(("a?",), "abc") and not traced((), "x")
    connect = Connect("MQTT", 5, "c", True, 30, username="u", password=b"hunter2",
                      will=Will("w/t", b"will-secret"))
    shown = describe(connect)
    assert shown == "CONNECT level=5 clean=1 keepalive=30 will='w/t'"
    assert "hunter2" not in shown and "will-secret" not in shown
    assert describe(Publish("t", b"x" * 3, qos=0)) == \
        "PUBLISH topic='t' qos=0 retain=0 dup=0 size=3"
    assert describe(Subscribe(9, (Subscription("a/#", 2), Subscription("b", 0)))) == \
        "SUBSCRIBE id=9 filters='a/#':qos2,'b':qos0"
