"""``actorbroker serve`` as a process: real clients, SIGTERM/SIGINT, a port in use."""

from __future__ import annotations

import re
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from mqtt_testkit import Serve, mosquitto_pub, mosquitto_sub

@pytest.fixture
def serve(tmp_path: Path) -> Iterator[list[Serve]]:
    started: list[Serve] = []
    yield started
    for s in started:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.wait()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_serve_talks_to_mosquitto_clients_and_stops_gracefully(
        tmp_path: Path, serve: list[Serve], sig: signal.Signals) -> None:
    broker = Serve(tmp_path, "--data-dir", "data", "--port", "0", "--log-level", "info")
    serve.append(broker)
    port = int(broker.wait_for(r"actorbroker started: listening on 127\.0\.0\.1:(\d+)").group(1))
    assert (tmp_path / "data").is_dir()
    sub = mosquitto_sub("127.0.0.1", port, "-i", "cli-sub", "-t", "cli/#", "-q", "1",
                        "-C", "1", "-v", "-W", "10")
    broker.wait_for(r"client 'cli-sub' connected from 127\.0\.0\.1:\d+ \(MQTT 3\.1\.1")
    # mosquitto_sub subscribes right after CONNACK; a retained message makes the order moot.
    result = mosquitto_pub("127.0.0.1", port, "-i", "cli-pub", "-t", "cli/x", "-m", "hello",
                           "-q", "1", "-r")
    assert result.returncode == 0, result.stderr
    out, err = sub.communicate(timeout=15)
    assert (sub.returncode, out) == (0, "cli/x hello\n"), err
    keeper = mosquitto_sub("127.0.0.1", port, "-i", "keeper", "-t", "never", "-W", "30")
    try:
        broker.wait_for(r"client 'keeper' connected")
        status = broker.stop(sig)
    finally:
        keeper.kill()
        keeper.wait()
    log = "\n".join(broker.log)
    assert status == 0, log
    assert f"received {sig.name}: stopping" in log
    assert "stopped listening on tcp 127.0.0.1:" in log
    assert re.search(r"client 'keeper' disconnected from 127\.0\.0\.1:\d+: server shutting down",
                     log), log
    assert "client 'cli-pub' disconnected" in log and "client sent DISCONNECT" in log
    assert "actorbroker stopped" in log
    # Listeners stop first, then the tree (the session sees its connection go before it stops).
    assert log.index("stopped listening") < log.index("actorbroker stopped")


def test_serve_fails_with_status_1_when_the_port_is_taken(tmp_path: Path,
                                                          serve: list[Serve]) -> None:
    first = Serve(tmp_path, "--data-dir", "data", "--port", "0")
    serve.append(first)
    port = first.wait_for(r"listening on 127\.0\.0\.1:(\d+)").group(1)
    (tmp_path / "second").mkdir()  # its own data dir: the first one holds the commit log's lock
    second = Serve(tmp_path / "second", "--data-dir", "data", "--port", port)
    serve.append(second)
    assert second.proc.wait(20) == 1
    second.wait_for(rf"ERROR   actorbroker: cannot listen on 127\.0\.0\.1:{port}: address already "
                    r"in use \(another broker running\? set --port\)$", timeout=5)
    assert not (tmp_path / "second" / "data").exists()
    assert first.stop() == 0
