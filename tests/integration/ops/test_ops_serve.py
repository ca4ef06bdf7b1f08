"""``actorbroker serve --http-port`` and ``actorbroker ctl`` as processes, with real clients;
the configuration refuses an HTTP listener off the loopback without a token."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mqtt_testkit import Serve, mosquitto_sub

from actorbroker.config import loads
from actorbroker.errors import InvalidConfigError

CTL = [str(Path(sys.executable).with_name("actorbroker")), "ctl"]


def ctl(url: str, *args: str, token_file: Path | None = None) -> subprocess.CompletedProcess[str]:
    extra = ["--token-file", str(token_file)] if token_file else []
    return subprocess.run([*CTL, "--url", url, *extra, *args], capture_output=True, text=True,
                          timeout=30, check=False)


@pytest.fixture
def serve() -> Iterator[list[Serve]]:
    started: list[Serve] = []
    yield started
    for s in started:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.wait()


def test_ctl_against_a_served_broker(tmp_path: Path, serve: list[Serve]) -> None:
    broker = Serve(tmp_path, "--data-dir", "data", "--port", "0", "--http-port", "0")
    serve.append(broker)
    url = broker.wait_for(r"serving HTTP \(metrics, admin API\) on (http://127\.0\.0\.1:\d+)"
                          ).group(1)
    port = broker.wait_for(r"actorbroker started: listening on 127\.0\.0\.1:(\d+)").group(1)
    sub = mosquitto_sub("127.0.0.1", int(port), "-i", "ctl-sub", "-t", "ctl/#", "-q", "1",
                        "-W", "30", "-V", "mqttv5")
    try:
        broker.wait_for(r"client 'ctl-sub' connected")
        listed = ctl(url, "clients")
        assert listed.returncode == 0, listed.stderr
        assert listed.stdout.splitlines()[0].split()[:2] == ["ctl-sub", "online"]
        assert listed.stdout.splitlines()[-1] == "1 client(s)"
        one = ctl(url, "client", "ctl-sub")
        assert '"filter": "ctl/#"' in one.stdout
        tree = ctl(url, "tree")
        assert tree.returncode == 0 and "registry" in tree.stdout and "StorageActor" in tree.stdout
        top = ctl(url, "top", "--iterations", "2", "--interval", "0.1")
        assert top.returncode == 0 and top.stdout.count("\x1b[H\x1b[2J") == 2
        assert "CLIENT" in top.stdout and "TOPIC" in top.stdout and "msgs/s in" in top.stdout
        assert ctl(url, "sessions").stdout.splitlines()[-1] == "1 session(s)"
        assert ctl(url, "retained").stdout.splitlines()[-1] == "0 retained message(s)"
        kicked = ctl(url, "kick", "ctl-sub")
        assert (kicked.returncode, kicked.stdout) == (0, "kicked ctl-sub\n")
        broker.wait_for(r"client 'ctl-sub' disconnected from .*kicked by an operator")
        sub.communicate(timeout=10)  # it exits: the server closed its connection
        missing = ctl(url, "kick", "ctl-sub")
        assert missing.returncode == 1 and "404" in missing.stderr
    finally:
        sub.kill()
        sub.wait()
    assert broker.stop() == 0
    assert "stopped serving HTTP" in "\n".join(broker.log)


def test_ctl_says_why_it_cannot_reach_the_broker(tmp_path: Path) -> None:
    unreachable = ctl("http://127.0.0.1:1", "clients")
    assert unreachable.returncode == 3 and "cannot reach http://127.0.0.1:1" in unreachable.stderr


def test_serve_with_a_token_file_and_ctl_with_the_same(tmp_path: Path, serve: list[Serve]
                                                       ) -> None:
    token = tmp_path / "token"
    token.write_text("0123456789abcdef-token\n")
    (tmp_path / "broker.toml").write_text(
        f'[http]\nenabled = true\nport = 0\ntoken_file = "{token}"\n')
    broker = Serve(tmp_path, "-c", "broker.toml", "--data-dir", "data", "--port", "0")
    serve.append(broker)
    url = broker.wait_for(r"serving HTTP \(metrics, admin API\) on (http://\S+)").group(1)
    refused = ctl(url, "sessions")
    assert refused.returncode == 1 and "401" in refused.stderr
    allowed = ctl(url, "sessions", token_file=token)
    assert allowed.returncode == 0 and allowed.stdout == "0 session(s)\n", allowed.stderr
    broker.wait_for(r"WARNING actorbroker\.http: http: refused GET /api/v1/sessions from "
                    r"127\.0\.0\.1: no bearer token")
    assert broker.stop() == 0


def test_serve_refuses_a_token_file_it_cannot_use(tmp_path: Path, serve: list[Serve]) -> None:
    (tmp_path / "short").write_text("abc\n")
    (tmp_path / "broker.toml").write_text('[http]\nenabled = true\nport = 0\n'
                                          'token_file = "short"\n')
    broker = Serve(tmp_path, "-c", "broker.toml", "--data-dir", "data", "--port", "0")
    serve.append(broker)
    assert broker.finish() == 1
    assert "the token must have at least 16 characters" in "\n".join(broker.log)


def test_off_the_loopback_only_with_a_token_file() -> None:
    with pytest.raises(InvalidConfigError) as refused:
        loads('[http]\nenabled = true\nbind = "0.0.0.0"\n', source="broker.toml")
    [error] = refused.value.errors
    assert (error.line, error.key) == (3, "http.bind")
    assert "reachable from other hosts: set [http] token_file" in str(error)
    assert loads('[http]\nenabled = true\nbind = "0.0.0.0"\ntoken_file = "t"\n').http.bind \
        == "0.0.0.0"
    assert not loads('[http]\nbind = "0.0.0.0"\n').http.enabled  # off: nothing is exposed
    assert loads('[http]\nenabled = true\nbind = "::1"\n').http.bind == "::1"


def test_serve_http_port_turns_the_listener_on(tmp_path: Path) -> None:
    config = loads('[http]\nbind = "127.0.0.1"\n').with_overrides(http_port=9999)
    assert (config.http.enabled, config.http.port) == (True, 9999)
    with pytest.raises(InvalidConfigError):
        loads("").with_overrides(http_port=70000)
