"""``[log] format`` and ``[log] levels`` on ``actorbroker serve`` processes, with real clients."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from mqtt_testkit import Client, Serve

STARTED = r"actorbroker started: listening on 127\.0\.0\.1:(\d+)"


@pytest.fixture
def serve() -> Iterator[list[Serve]]:
    started: list[Serve] = []
    yield started
    for s in started:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.wait()


def _connect(port: int, client_id: str) -> Client:
    client = Client("127.0.0.1", port, client_id)
    assert client.connect().rc == 0
    return client


def test_json_lines_every_one_parses(tmp_path: Path, serve: list[Serve]) -> None:
    (tmp_path / "broker.toml").write_text('[log]\nformat = "json"\n')
    broker = Serve(tmp_path, "-c", "broker.toml", "--data-dir", "data", "--port", "0")
    serve.append(broker)
    port = int(broker.wait_for(STARTED).group(1))
    client = _connect(port, "json-1\n\"x\"")  # a newline and quotes: still one line
    client.disconnect()
    broker.wait_for(r'"message": "client .*json-1.* disconnected from')
    broker.proc.send_signal(signal.SIGUSR1)
    broker.wait_for(r"busiest mailboxes")
    assert broker.stop() == 0
    records = [json.loads(line) for line in broker.log]  # every line: JSON, or this fails
    assert len(records) > 10
    for record in records:
        assert set(record) >= {"time", "level", "logger", "message"}
        assert record["time"].endswith("Z") and record["level"] in ("INFO", "WARNING")
    about = [r for r in records if "client_id" in r]
    assert {r["message"].split(" ")[2] for r in about} == {"connected", "disconnected"}
    for record in about:
        assert record["client_id"] == "json-1\n\"x\""
        assert record["peer"].startswith("127.0.0.1:") and record["logger"] == "actorbroker.session"
    assert any(r["logger"] == "actorbroker.dump" for r in records)


def test_text_stays_the_default(tmp_path: Path, serve: list[Serve]) -> None:
    broker = Serve(tmp_path, "--data-dir", "data", "--port", "0")
    serve.append(broker)
    broker.wait_for(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z INFO    actorbroker: " + STARTED)
    assert broker.stop() == 0


def test_levels_per_logger_at_start_and_on_sighup(tmp_path: Path, serve: list[Serve]) -> None:
    config = tmp_path / "broker.toml"
    config.write_text('[log]\nlevel = "info"\nlevels = { "actorbroker.session" = "warning" }\n')
    broker = Serve(tmp_path, "-c", "broker.toml", "--data-dir", "data", "--port", "0")
    serve.append(broker)
    port = int(broker.wait_for(STARTED).group(1))
    # The session logs "connected" before it sends the CONNACK: a line that the level let
    # through would come before the dump that follows.
    quiet = _connect(port, "quiet")
    broker.proc.send_signal(signal.SIGUSR1)
    broker.wait_for(r"supervision tree \(SIGUSR1\)")
    assert not [line for line in broker.log if "actorbroker.session" in line]

    config.write_text('[log]\nlevel = "info"\nlevels = { "actorbroker.transport" = "debug" }\n')
    broker.proc.send_signal(signal.SIGHUP)
    broker.wait_for(r"reloaded log level \(SIGHUP\): log level info; actorbroker\.transport "
                    r"debug \(from .*broker\.toml\)")
    loud = _connect(port, "loud")  # the session's own level is gone: it follows "info" again
    broker.wait_for(r"INFO    actorbroker\.session: client 'loud' connected from 127\.0\.0\.1:")

    config.write_text('[log]\nlevels = { "actorbroker.session" = "loud" }\n')
    broker.proc.send_signal(signal.SIGHUP)  # refused: what is in force stays
    broker.wait_for(r"ERROR .*reload of log level failed \(SIGHUP\), the previous one stays "
                    r"in force: .*log\.levels gives actorbroker\.session the level 'loud'")
    quiet.disconnect()
    broker.wait_for(r"client 'quiet' disconnected from")
    loud.disconnect()
    assert broker.stop() == 0


def test_log_level_flag_outlasts_sighup_levels_do_not(tmp_path: Path, serve: list[Serve]
                                                     ) -> None:
    config = tmp_path / "broker.toml"
    config.write_text('[log]\nlevel = "error"\n')
    broker = Serve(tmp_path, "-c", "broker.toml", "--log-level", "info", "--data-dir", "data",
                   "--port", "0")
    serve.append(broker)
    broker.wait_for(STARTED)  # --log-level info beats the file's "error"
    config.write_text('[log]\nlevel = "error"\nlevels = { "actorbroker.trace" = "warning" }\n')
    broker.proc.send_signal(signal.SIGHUP)
    broker.wait_for(r"reloaded log level \(SIGHUP\): log level info; actorbroker\.trace warning")
    assert broker.stop() == 0
    assert "received SIGTERM: stopping" in "\n".join(broker.log)  # INFO still shown
