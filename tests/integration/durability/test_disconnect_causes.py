"""Why a durable session's connection ended, as the commit log says: real sockets, one way out each.

The cause comes from the reason code of whoever decided the close (the
client's DISCONNECT, the transport's keepalive or decoder, the session core,
the server's shutdown) and travels in ``ConnectionLost.code``; a socket that
just went has none. An operator's kick is in tests/integration/ops/test_ops_api.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from crash_broker import committed_records
from durability_kit import durable_config, raw, running
from mqtt_testkit import RawClient

from actorbroker.app import RunningBroker
from actorbroker.codec import Connect, Disconnect, Properties, Publish
from actorbroker.persistence.records import DisconnectCause as C
from actorbroker.persistence.records import SessionDisconnected

CID = "cause-1"


def _gone(data: Path, client_id: str, count: int = 1,
          timeout: float = 10.0) -> SessionDisconnected:
    """The ``count``-th SessionDisconnected of ``client_id`` in the committed log, polled for
    (the storage actor writes it; there is nothing to wait on across threads)."""
    deadline = time.monotonic() + timeout
    while True:
        found = [r for r in committed_records(data)
                 if isinstance(r, SessionDisconnected) and r.client_id == client_id]
        if len(found) >= count:
            return found[count - 1]
        assert time.monotonic() < deadline, f"{count} SessionDisconnected of {client_id!r}?"
        time.sleep(0.01)


def _connect(broker: RunningBroker, level: int, *, keepalive: int = 60,
             client_id: str = CID) -> RawClient:
    """A durable session: Clean Session 0 (3.1.1), or a Session Expiry Interval (5)."""
    client = raw(broker, level)
    expiry = Properties(session_expiry_interval=600) if level == 5 else Properties()
    client.send(Connect("MQTT", level, client_id, False, keepalive, properties=expiry))
    assert client.recv().reason_code == 0
    return client


def _disconnect(client: RawClient) -> None:
    client.send(Disconnect())
    client.expect_closed()


def _drop(client: RawClient) -> None:
    client.close()


def _keepalive(client: RawClient) -> None:
    client.expect_closed(timeout=5.0)  # keepalive 1: closed after 1.5 s of silence


def _malformed(client: RawClient) -> None:
    client.send_bytes(b"\x36\x00")  # [MQTT-3.3.1-4] a PUBLISH with both QoS bits set
    client.expect_closed()


def _topic_with_wildcard(client: RawClient) -> None:
    client.send(Publish("a/#", b"x", qos=0))  # [MQTT-3.3.2-2]
    client.expect_closed()


CASES: dict[str, tuple[Callable[[RawClient], None], int, C, int | None]] = {
    # way out: (what the client does, keepalive, cause, reason code; None: any of the cause)
    "client DISCONNECT": (_disconnect, 60, C.CLIENT_DISCONNECT, 0x00),
    "socket closed": (_drop, 60, C.CONNECTION_LOST, 0x00),
    "keepalive": (_keepalive, 1, C.KEEPALIVE_TIMEOUT, 0x8D),
    "malformed packet": (_malformed, 60, C.PROTOCOL_ERROR, 0x81),
    "topic name invalid": (_topic_with_wildcard, 60, C.PROTOCOL_ERROR, None),
}


@pytest.mark.parametrize("level", [4, 5])
@pytest.mark.parametrize("case", list(CASES))
def test_the_log_says_why_the_connection_ended(tmp_path: Path, case: str, level: int) -> None:
    act, keepalive, cause, code = CASES[case]
    data = tmp_path / "data"
    with running(durable_config(data)) as broker:
        client = _connect(broker, level, keepalive=keepalive)
        try:
            act(client)
            gone = _gone(data, CID)
        finally:
            client.close()
    assert gone.cause == cause, (case, gone)
    assert code is None or gone.reason_code == code, (case, gone)
    assert gone.expiry_interval > 0  # durable: the session lives on


@pytest.mark.parametrize("level", [4, 5])
def test_a_server_shutdown_is_journaled_as_one(tmp_path: Path, level: int) -> None:
    data = tmp_path / "data"
    with running(durable_config(data)) as broker:
        client = _connect(broker, level)
    try:
        client.expect_closed()
    finally:
        client.close()
    gone = _gone(data, CID)
    assert (gone.cause, gone.reason_code) == (C.SERVER_SHUTDOWN, 0x8B)


def test_after_a_take_over_the_new_connection_has_its_own_cause(tmp_path: Path) -> None:
    """The Close that took the old connection over is not the new one's: the new
    connection's socket dropping later is journaled as a lost connection."""
    data = tmp_path / "data"
    with running(durable_config(data)) as broker:
        old = _connect(broker, 5)
        new = _connect(broker, 5)
        try:
            old.expect_closed()
            new.close()
            gone = _gone(data, CID)
        finally:
            old.close()
            new.close()
    assert (gone.cause, gone.reason_code) == (C.CONNECTION_LOST, 0)
