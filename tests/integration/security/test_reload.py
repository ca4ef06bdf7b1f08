"""SIGHUP never stops ``actorbroker serve``: it reloads the log level, the password and
the ACL files, and says what it did; a broken file keeps the old one (and says why)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from mqtt_testkit import Serve
from security_kit import login, write_users

from actorbroker.codec import SubAck, Subscribe, Subscription


@pytest.fixture
def serve() -> Iterator[list[Serve]]:
    started: list[Serve] = []
    yield started
    for s in started:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.wait()


def test_sighup_reloads_and_the_broker_lives(tmp_path: Path, serve: list[Serve]) -> None:
    users = write_users(tmp_path / "passwd", {"alice": "old"})
    acl = tmp_path / "acl"
    acl.write_text("user alice\ntopic readwrite a/#\n")
    config = tmp_path / "broker.toml"
    config.write_text(f"""
[log]
level = "info"
[[listeners]]
port = 0
[auth]
password_file = "{users}"
acl_file = "{acl}"
login_failure_delay = 0.0
""")
    broker = Serve(tmp_path, "--config", str(config), "--data-dir", "data")
    serve.append(broker)
    port = int(broker.wait_for(r"actorbroker started: listening on 127\.0\.0\.1:(\d+)").group(1))
    alice, ok = login("127.0.0.1", port, "alice", "alice", "old")
    assert ok.reason_code == 0
    alice.send(Subscribe(1, (Subscription("a/x", 0), Subscription("b/x", 0))))
    assert alice.recv() == SubAck(1, (0, 0x80))

    # New password, new ACL, debug logging: one SIGHUP.
    write_users(tmp_path / "passwd", {"alice": "new", "bob": "b"})
    acl.write_text("user alice\ntopic readwrite b/#\n")
    config.write_text(config.read_text().replace('level = "info"', 'level = "debug"'))
    broker.proc.send_signal(signal.SIGHUP)
    broker.wait_for(r"reloaded log level \(SIGHUP\): log level debug")
    broker.wait_for(r"reloaded auth files \(SIGHUP\): password file .* \(2 users\); "
                    r"ACL file .*acl")
    assert broker.proc.poll() is None
    _, refused = login("127.0.0.1", port, "c2", "alice", "old")
    assert refused.reason_code == 0x04
    again, ok = login("127.0.0.1", port, "c3", "alice", "new")
    assert ok.reason_code == 0
    again.send(Subscribe(1, (Subscription("a/x", 0), Subscription("b/x", 0))))
    assert again.recv() == SubAck(1, (0x80, 0))
    again.close()

    # A broken file: the old ones stay, and the log says why.
    acl.write_text("topic nonsense x\n")
    broker.proc.send_signal(signal.SIGHUP)
    broker.wait_for(r"ERROR .*reload of auth files failed \(SIGHUP\), the previous one stays "
                    r"in force: .*acl:1: invalid access 'nonsense'")
    bob, ok = login("127.0.0.1", port, "bob", "bob", "b")
    assert ok.reason_code == 0
    bob.send(Subscribe(1, (Subscription("b/x", 0),)))
    assert bob.recv() == SubAck(1, (0x80,))  # the ACL in force has nothing for bob
    bob.close()
    assert broker.proc.poll() is None
    assert broker.stop() == 0
    alice.close()
