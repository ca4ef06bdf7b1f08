"""The same password and ACL files in Mosquitto and here give the same grants and refusals.

Mosquitto 2 (Debian's ``mosquitto``, started by the test on another loopback port) and this
broker read one password file (written by ``actorbroker passwd``'s code: Mosquitto reading it
checks that format too) and one ACL file built from the example of Mosquitto's documentation
(aclfile.example: the anonymous section, a user section, patterns with %c and %u) plus a
``deny`` rule. Each case is observed the same way on both brokers:

* write: the client publishes at QoS 1 (MQTT 3.1.1: acknowledged either way); an ``admin``
  subscribed to ``#`` sees the message, or not, before its own marker;
* read: ``admin`` publishes to the topic, then to a marker topic the client may read; the
  client, subscribed to both (exact topics), gets the message before the marker, or not;
* Will: a client whose connection drops without DISCONNECT has a Will on a topic it may
  write, or not; ``admin`` sees it, or not, before its marker.

Known difference, asserted as such: a client may never publish into ``$SYS`` here, whatever
the ACL says (Mosquitto lets the example's ``pattern write $SYS/broker/connection/%c/state``
through). Where the grants agree, the SUBACK codes may not: Mosquitto grants every SUBSCRIBE
and filters deliveries, this broker refuses a filter it cannot serve (docs/security.md).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mqtt_testkit import RawClient, broker_config
from security_kit import login, write_users

from actorbroker.app import Broker
from actorbroker.codec import PubAck, Publish, Subscribe, Subscription, Will

MOSQUITTO = shutil.which("mosquitto") or (
    "/usr/sbin/mosquitto" if Path("/usr/sbin/mosquitto").exists() else None)
pytestmark = pytest.mark.skipif(MOSQUITTO is None, reason="mosquitto (apt) is not installed")

ACL = """\
# This affects access control for clients with no username.
topic read $SYS/#
topic read public/#

# This only affects clients with username "roger".
user roger
topic foo/bar
topic deny foo/secret
topic read foo/#

user admin
topic readwrite #

# This affects all clients.
pattern write $SYS/broker/connection/%c/state
pattern readwrite clients/%u/#
pattern read devices/%c/cmd
"""
USERS = {"roger": "r", "bob": "b", "admin": "x"}
PASSWORDS: dict[str | None, str | None] = {None: None, **USERS}

#: (user, client id, topic) -> may publish, in both brokers.
WRITES = [
    ("roger", "r1", "foo/bar", True),
    ("roger", "r1", "foo/secret", False),
    ("roger", "r1", "foo/other", False),          # read only
    ("roger", "r1", "clients/roger/x", True),     # pattern %u
    ("roger", "r1", "devices/r1/cmd", False),      # pattern, read only
    (None, "a1", "public/x", False),
    (None, "a1", "clients/x", False),             # %u: no user name, no pattern
    ("bob", "b1", "clients/bob/status", True),
    ("bob", "b1", "foo/bar", False),
]
#: (user, client id, topic, marker the client may read, + the case's number) -> may read.
READS = [
    ("roger", "r1", "foo/bar", "clients/roger/m", True),
    ("roger", "r1", "foo/other", "clients/roger/m", True),
    ("roger", "r1", "foo/secret", "clients/roger/m", False),
    ("roger", "r1", "public/news", "clients/roger/m", False),
    ("roger", "devA", "devices/devA/cmd", "clients/roger/m", True),
    ("roger", "devA", "devices/devB/cmd", "clients/roger/m", False),
    (None, "a1", "public/news", "public/m", True),
    (None, "a1", "foo/bar", "public/m", False),
    ("bob", "b1", "clients/bob/inbox", "clients/bob/m", True),
    ("bob", "b1", "clients/roger/inbox", "clients/bob/m", False),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def mosquitto(tmp_path: Path) -> Iterator[tuple[str, int]]:
    """Mosquitto on a free loopback port with the test's password and ACL files."""
    write_users(tmp_path / "passwd", USERS)
    (tmp_path / "acl").write_text(ACL)
    port = _free_port()
    conf = tmp_path / "mosquitto.conf"
    # "user root": run as root (CI), it would otherwise switch to the user mosquitto,
    # which cannot read pytest's private temporary directory.
    conf.write_text(f"listener {port} 127.0.0.1\nallow_anonymous true\nuser root\n"
                    f"password_file {tmp_path / 'passwd'}\nacl_file {tmp_path / 'acl'}\n"
                    "persistence false\n")
    assert MOSQUITTO is not None
    proc = subprocess.Popen([MOSQUITTO, "-c", str(conf)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 10
        while True:  # ready once it accepts connections
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                assert time.monotonic() < deadline, "mosquitto did not start"
                time.sleep(0.05)
        yield "127.0.0.1", port
    finally:
        proc.terminate()
        proc.wait(10)


def _until(raw: RawClient, marker: bytes) -> list[bytes]:
    """Payloads ``raw`` gets up to the one equal to ``marker`` (PUBACKs of QoS 1 skipped)."""
    got: list[bytes] = []
    while True:
        packet = raw.recv()
        if isinstance(packet, Publish):
            got.append(packet.payload)
            if packet.qos:
                raw.send(PubAck(packet.packet_id or 0))
            if packet.payload == marker:
                return got


def outcomes(host: str, port: int) -> dict[str, bool | int]:
    """Every case's outcome on the broker at ``host:port``."""
    found: dict[str, bool | int] = {}
    admin, ok = login(host, port, "admin", "admin", USERS["admin"])
    assert ok.reason_code == 0
    admin.send(Subscribe(1, (Subscription("#", 1),)))
    admin.recv()
    for n, (user, cid, topic, _) in enumerate(WRITES):
        client, ok = login(host, port, cid, user, PASSWORDS[user])
        assert ok.reason_code == 0, (user, ok)
        client.send(Publish(topic, b"w%d" % n, 1, packet_id=1))
        assert client.recv() == PubAck(1)
        client.close()
        # Markers on topics of their own: MQTT orders messages per topic only, and a topic
        # used again and again gets a topic actor here, whose path may overtake another's.
        admin.send(Publish(f"sync/{n}", b"s%d" % n, 1, packet_id=n + 10))
        found[f"write {user} {cid} {topic}"] = b"w%d" % n in _until(admin, b"s%d" % n)
    for n, (user, cid, topic, marker, _) in enumerate(READS):
        client, ok = login(host, port, cid, user, PASSWORDS[user])
        marker = f"{marker}{n}"
        client.send(Subscribe(1, (Subscription(topic, 0), Subscription(marker, 0))))
        client.recv()  # SUBACK: the codes differ by design, the deliveries may not
        admin.send(Publish(topic, b"r%d" % n, 1, packet_id=100 + n),
                   Publish(marker, b"m%d" % n, 1, packet_id=200 + n))
        found[f"read {user} {cid} {topic}"] = b"r%d" % n in _until(client, b"m%d" % n)
        client.close()
    # Anonymous first: its Will (refused) would come before roger's (allowed) if at all.
    for n, user in enumerate((None, "roger")):
        client, ok = login(host, port, f"willer{n}", user, PASSWORDS[user],
                           will=Will("foo/bar", b"will%d" % n, 0, False))
        assert ok.reason_code == 0
        client.close()  # without DISCONNECT: the Will is due, if the ACL lets it through
    got = _until(admin, b"will1")
    admin.send(Publish("sync/w", b"sw", 1, packet_id=300))
    got += _until(admin, b"sw")
    found["will None foo/bar"] = b"will0" in got
    found["will roger foo/bar"] = b"will1" in got
    admin.close()
    return found


def test_the_same_grants_and_refusals_as_mosquitto(tmp_path: Path,
                                                   mosquitto: tuple[str, int]) -> None:
    theirs = outcomes(*mosquitto)
    config = broker_config(tmp_path, password_file=str(tmp_path / "passwd"),
                           acl_file=str(tmp_path / "acl"), allow_anonymous=True,
                           login_failure_delay=0.0)
    with Broker.run_in_thread(config) as broker:
        ours = outcomes(broker.host, broker.port)
    expected = {f"write {u} {c} {t}": may for u, c, t, may in WRITES}
    expected |= {f"read {u} {c} {t}": may for u, c, t, _, may in READS}
    for case, may in expected.items():
        assert (theirs[case], ours[case]) == (may, may), case
    assert theirs["will roger foo/bar"] is ours["will roger foo/bar"] is True
    assert theirs["will None foo/bar"] is ours["will None foo/bar"] is False
