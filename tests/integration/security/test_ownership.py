"""A session belongs to the user who made it (docs/security.md): bob, with a valid
password, connecting with alice's client id gets nothing of hers, before and after a
restart; use_username_as_clientid; the owner is let go when the session ends."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from mqtt_testkit import broker_config
from security_kit import login, write_users

from actorbroker.actors.storage.requests import StorageStatus
from actorbroker.app import Broker, RunningBroker
from actorbroker.codec import (Connect, Disconnect, PubAck, Publish, ReasonCode, SubAck, Subscribe,
                               Subscription, encode)
from actorbroker.config import Config
from actorbroker.durable.snapshot import SNAPSHOT_NAME


def _config(tmp_path: Path, **options: object) -> Config:
    users = write_users(tmp_path / "passwd", {"alice": "a", "bob": "b", "carol": "c"})
    return broker_config(tmp_path, password_file=str(users), login_failure_delay=0.0,
                         **options)


def _alice_with_three_queued(broker: RunningBroker) -> None:
    alice, ok = login(broker.host, broker.port, "alice-phone", "alice", "a", clean=False)
    assert ok.reason_code == 0
    alice.send(Subscribe(1, (Subscription("alice/private", 1),)))
    assert alice.recv() == SubAck(1, (1,))
    alice.disconnect()
    carol, _ = login(broker.host, broker.port, "carol", "carol", "c")
    for n in (1, 2, 3):
        carol.send(Publish("alice/private", f"secret {n}".encode(), 1, packet_id=n))
        assert carol.recv() == PubAck(n)
    carol.disconnect()


def _bob_is_refused(broker: RunningBroker) -> None:
    bob, refused = login(broker.host, broker.port, "alice-phone", "bob", "b", clean=False)
    assert refused.reason_code == 0x05 and not refused.session_present
    bob.expect_closed()
    bob5, refused5 = login(broker.host, broker.port, "alice-phone", "bob", "b", level=5,
                           clean=False)
    assert refused5.reason_code == ReasonCode.NOT_AUTHORIZED
    bob5.expect_closed()


def _alice_gets_her_three(broker: RunningBroker) -> None:
    alice, ok = login(broker.host, broker.port, "alice-phone", "alice", "a", clean=False)
    assert ok.reason_code == 0 and ok.session_present
    got = [alice.recv() for _ in range(3)]
    assert [p.payload for p in got if isinstance(p, Publish)] == [
        b"secret 1", b"secret 2", b"secret 3"]
    alice.close()


@pytest.mark.parametrize("restart", ["snapshot", "log", "checkpoint"])
def test_the_hijack_is_refused_before_and_after_a_restart(tmp_path: Path, restart: str) -> None:
    """The owner comes back from the snapshot, from the log's SessionConnected records, or
    from a checkpoint's restated ones (the snapshot removed for the last two)."""
    config = _config(tmp_path, checkpoint_bytes=1 if restart == "checkpoint" else 0)
    with Broker.run_in_thread(config) as broker:
        _alice_with_three_queued(broker)
        _bob_is_refused(broker)
        if restart == "checkpoint":
            assert _status(broker)["checkpoint"] is not None
    if restart != "snapshot":
        (Path(config.node.data_dir or "") / SNAPSHOT_NAME).unlink()
    with Broker.run_in_thread(config) as broker:
        _bob_is_refused(broker)
        _alice_gets_her_three(broker)
        _bob_is_refused(broker)  # still hers, connected or not


def _status(broker: RunningBroker) -> dict[str, Any]:
    storage = broker.node.names.storage()
    assert storage is not None
    figures: dict[str, Any] = storage.ask(StorageStatus(), timeout=10)
    return figures


def test_a_clean_session_lets_its_client_id_go(tmp_path: Path) -> None:
    with Broker.run_in_thread(_config(tmp_path)) as broker:
        alice, ok = login(broker.host, broker.port, "shared-id", "alice", "a")
        assert ok.reason_code == 0
        bob, refused = login(broker.host, broker.port, "shared-id", "bob", "b")
        assert refused.reason_code == 0x05  # hers while it lasts
        alice.disconnect()
        # Once her clean session has ended, the id is free (its actor ends it: poll).
        broker.wait_until(lambda _: broker.call(
            lambda: broker.node.owners.owner("shared-id")) is None)
        bob, ok = login(broker.host, broker.port, "shared-id", "bob", "b")
        assert ok.reason_code == 0
        bob.close()


def test_a_connection_closed_before_its_session_attached_lets_its_client_id_go(
        tmp_path: Path) -> None:
    """CONNECT and DISCONNECT in one write, anonymous: the connection is closed before the
    session actor attaches it, and that actor retired with its owner left claimed, one
    entry per client id for ever (63 bytes a connection: the live fuzzer's RSS growth)."""
    with Broker.run_in_thread(broker_config(tmp_path)) as broker:
        for i in range(50):
            with socket.create_connection((broker.host, broker.port), timeout=10) as sock:
                sock.sendall(encode(Connect("MQTT", 4, f"brief-{i}", True, 30), 4)
                             + encode(Disconnect(), 4))
                while sock.recv(4096):  # until the broker closes
                    pass
        broker.wait_until(lambda _: broker.call(lambda: len(broker.node.owners)) == 0)


def test_use_username_as_clientid(tmp_path: Path) -> None:
    with Broker.run_in_thread(_config(tmp_path, use_username_as_clientid=True)) as broker:
        bob, ok = login(broker.host, broker.port, "alice", "bob", "b", clean=False)
        assert ok.reason_code == 0
        bob.send(Subscribe(1, (Subscription("x", 1),)))
        assert bob.recv() == SubAck(1, (1,))
        assert broker.call(lambda: set(broker.node.names.sessions)) == {"bob"}
        bob.close()
        anonymous, refused = login(broker.host, broker.port, "c")
        assert refused.reason_code == 0x05


def test_unchecked_user_names_do_not_own_sessions(tmp_path: Path) -> None:
    """Without a user file anyone may send any user name: it does not tie the session."""
    with Broker.run_in_thread(broker_config(tmp_path)) as broker:
        first, ok = login(broker.host, broker.port, "dev", "x", "p", clean=False)
        assert ok.reason_code == 0
        first.disconnect()
        second, ok = login(broker.host, broker.port, "dev", "y", "q", clean=False)
        assert ok.reason_code == 0 and ok.session_present
        second.close()


def test_a_takeover_user_drains_a_session_that_stays_its_owners(tmp_path: Path) -> None:
    """carol is a takeover user: she connects as alice's client id and gets her queued
    messages (bob still cannot); after a restart the session is still alice's."""
    config = _config(tmp_path, takeover_users=["carol"])
    with Broker.run_in_thread(config) as broker:
        _alice_with_three_queued(broker)
        _bob_is_refused(broker)
        carol, ok = login(broker.host, broker.port, "alice-phone", "carol", "c", clean=False)
        assert ok.reason_code == 0 and ok.session_present
        got = [carol.recv() for _ in range(3)]
        assert [p.payload for p in got if isinstance(p, Publish)] == [
            b"secret 1", b"secret 2", b"secret 3"]
        for packet in got:
            assert isinstance(packet, Publish) and packet.packet_id is not None
            carol.send(PubAck(packet.packet_id))
        carol.disconnect()
        _bob_is_refused(broker)
    (Path(config.node.data_dir or "") / SNAPSHOT_NAME).unlink()  # from the log's records
    with Broker.run_in_thread(config) as broker:
        _bob_is_refused(broker)
        alice, ok = login(broker.host, broker.port, "alice-phone", "alice", "a", clean=False)
        assert ok.reason_code == 0 and ok.session_present  # hers, not carol's
        alice.close()


@pytest.mark.parametrize("level, refused", [(4, 0x05), (5, ReasonCode.NOT_AUTHORIZED)])
def test_client_id_patterns(tmp_path: Path, level: int, refused: int) -> None:
    config = _config(tmp_path, client_id_patterns=["%u", "%u-*", "lab-??"],
                     allow_anonymous=True)
    with Broker.run_in_thread(config) as broker:
        for client_id, user, password, code in (
                ("alice", "alice", "a", 0), ("alice-kitchen", "alice", "a", 0),
                ("lab-07", "bob", "b", 0), ("lab-07", None, None, 0),
                ("bob-x", "alice", "a", refused), ("alice", "bob", "b", refused),
                ("alicex", "alice", "a", refused), ("lab-007", "bob", "b", refused),
                ("alice", None, None, refused),  # anonymous: only the patterns without %u
                ("", "bob", "b", 0)):  # assigned by the broker: not checked
            client, connack = login(broker.host, broker.port, client_id, user, password,
                                    level=level)
            assert connack.reason_code == code, (client_id, user, connack)
            if code:
                client.expect_closed()
            client.close()
