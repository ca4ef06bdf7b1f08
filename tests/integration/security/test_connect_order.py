"""The order of the CONNECT acceptance rules, on a real socket: the first rule a CONNECT
breaks decides its CONNACK, at MQTT 3.1, 3.1.1 and 5.

Each row is a CONNECT that breaks one rule and every rule after it (so a rule checked
too late, or too early, shows as another code), sent to a broker where all the rules
are switched on. MQTT 5 CONNACKs carry the refusal's Reason String: it names the rule
where two rules share a code (0x87). The order is the table of
actorbroker/session/connect.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from mqtt_testkit import RawClient, broker_config
from security_kit import write_users

from actorbroker.app import RunningBroker
from actorbroker.codec import ConnAck, Connect, Properties, Will
from actorbroker.config import Config

Start = Callable[..., RunningBroker]

LONG_ID = "alice-" + "x" * 30  # longer than max_client_id_length and than 3.1's 23
BAD_WILL = Will("w/t", b"bye", 2)  # above max_qos = 1
SLOW = 200  # a keepalive above max_keepalive = 100


@dataclass(frozen=True)
class Row:
    """A CONNECT (``user``/``password`` None: none sent) and what each level gets:
    ``v3`` the 3.x return code (None: closed without CONNACK), ``v5`` the reason code
    and a piece of the Reason String."""

    name: str
    client_id: str
    user: str | None = None
    password: str | None = None
    will: Will | None = None
    keepalive: int = 60
    method: str | None = None  # MQTT 5 Authentication Method (v5 rows only)
    v3: int | None = 0
    v5: tuple[int, str] = (0, "")
    levels: tuple[int, ...] = (3, 4, 5)


# Every CONNECT below but the last breaks the rules after the one it is named after too.
STRICT = [
    Row("client id", LONG_ID, "alice", "wrong", BAD_WILL, SLOW,
        v3=0x02, v5=(0x85, "[MQTT-3.1.3-5]")),
    Row("will", "bob-1", "alice", "wrong", BAD_WILL, SLOW, v3=None, v5=(0x9B, "[MQTT-3.2.2-12]")),
    # MQTT 5 is told a Server Keep Alive instead: the password decides.
    Row("keepalive", "bob-1", "alice", "wrong", keepalive=SLOW,
        v3=0x02, v5=(0x86, "bad user name or password")),
    Row("password", "bob-1", "alice", "wrong", v3=0x04, v5=(0x86, "bad user name or password")),
    Row("anonymous", "bob-1", v3=0x05, v5=(0x87, "anonymous")),
    Row("client id pattern", "bob-1", "alice", "a", v3=0x05, v5=(0x87, "client_id_patterns")),
    Row("owner", "shared-1", "bob", "b", v3=0x05, v5=(0x87, "another user's session")),
    Row("owner after password", "shared-1", "bob", "wrong",
        v3=0x04, v5=(0x86, "bad user name or password")),
    # An Authentication Method skips the password and anonymous checks, not the patterns.
    Row("pattern before method", "bob-1", None, None, method="NOPE",
        v5=(0x87, "client_id_patterns"), levels=(5,)),
    Row("method", "alice-2", "alice", "wrong", method="NOPE",
        v5=(0x8C, "'NOPE' not served"), levels=(5,)),
    Row("client id before method", LONG_ID, method="NOPE",
        v5=(0x85, "[MQTT-3.1.3-5]"), levels=(5,)),
    Row("accepted", "alice-3", "alice", "a"),
]

# After ten failed logins from 127.0.0.1 the address is blocked for 32 s (auth/throttle.py):
# the rows before the throttle still answer first, and a right password is refused unchecked.
THROTTLED = [
    Row("client id before throttle", LONG_ID, "alice", "a", v3=0x02, v5=(0x85, "[MQTT-3.1.3-5]")),
    Row("keepalive before throttle", "alice-5", "alice", "a", keepalive=SLOW,
        v3=0x02, v5=(0x86, "too many failed logins")),
    Row("throttle", "alice-5", "alice", "a", v3=0x04, v5=(0x86, "too many failed logins")),
    Row("anonymous, nothing to throttle", "alice-5", v3=0x05, v5=(0x87, "anonymous")),
    Row("a method skips the throttle", "alice-5", "alice", "a", method="NOPE",
        v5=(0x8C, "'NOPE' not served"), levels=(5,)),
]

# server_moved refuses every CONNECT first, a good one too.
MOVED = [
    Row("moved", LONG_ID, "alice", "wrong", BAD_WILL, SLOW, v3=0x03, v5=(0x9D, "moved")),
    Row("moved, good login", "alice-3", "alice", "a", v3=0x03, v5=(0x9D, "moved")),
]

# use_username_as_clientid: after the client id length, before the patterns.
BY_USER = [
    Row("client id before user name", LONG_ID, v3=0x02, v5=(0x85, "[MQTT-3.1.3-5]")),
    Row("user name as client id", "anything", v3=0x05, v5=(0x87, "use_username_as_clientid")),
    Row("accepted", "ignored", "alice", "a"),
]


def _connect(broker: RunningBroker, level: int, row: Row, client_id: str | None = None,
             clean: bool = True) -> tuple[int | None, str, str | None]:
    """(reason code, Reason String, Server Reference) of the CONNACK; code None if the
    connection was closed without one."""
    raw = RawClient(broker.host, broker.port, level)
    try:
        properties = Properties(authentication_method=row.method) if row.method else Properties()
        raw.send(Connect("MQIsdp" if level == 3 else "MQTT", level,
                         row.client_id if client_id is None else client_id, clean,
                         row.keepalive, row.user,
                         None if row.password is None else row.password.encode(), row.will,
                         properties))
        try:
            connack = raw.recv()
        except (EOFError, ConnectionResetError):
            return None, "", None
        assert isinstance(connack, ConnAck), connack
        if connack.reason_code == 0:
            raw.disconnect()
        else:
            raw.expect_closed()
        return (connack.reason_code, connack.properties.reason_string or "",
                connack.properties.server_reference)
    finally:
        raw.close()


def _observe(broker: RunningBroker, rows: list[Row]) -> list[str]:
    """What differs from the table, one line per (row, level)."""
    wrong = []
    for row in rows:
        for level in row.levels:
            code, reason, reference = _connect(broker, level, row)
            if level == 5:
                want_code, want_reason = row.v5
                ok = code == want_code and want_reason in reason
                if want_code == 0x9D:
                    ok = ok and reference == "elsewhere.example:1883"
            else:
                ok = code == row.v3
            if not ok:
                wrong.append(f"{row.name} at level {level}: got {code!r} {reason!r}")
    return wrong


def _config(tmp_path: Path, **options: object) -> Config:
    users = write_users(tmp_path / "passwd", {"alice": "a", "bob": "b"})
    return broker_config(tmp_path / "broker", password_file=str(users),
                         login_failure_delay=0.0, max_client_id_length=23, max_qos=1,
                         max_keepalive=100, **options)


@pytest.mark.parametrize("table", ["strict", "moved", "by user"])
def test_connect_rules_order(tmp_path: Path, start_broker: Start, table: str) -> None:
    if table == "by user":
        broker = start_broker(_config(tmp_path, use_username_as_clientid=True,
                                      allow_anonymous=True))
        assert _observe(broker, BY_USER) == []
        return
    moved = {"server_reference": "elsewhere.example:1883", "redirect": "server_moved"}
    broker = start_broker(_config(tmp_path, allow_anonymous=False,
                                  client_id_patterns=["%u", "%u-*", "shared-*"],
                                  **(moved if table == "moved" else {})))
    if table == "moved":
        assert _observe(broker, MOVED) == []
        return
    # alice owns "shared-1" (a session that outlives its connection) before bob tries it.
    owner = Row("alice", "shared-1", "alice", "a")
    assert _connect(broker, 4, owner, clean=False)[0] == 0
    # The good logins between its rows keep 127.0.0.1 under the throttle's 5 free failures.
    assert _observe(broker, STRICT) == []
    wrong = Row("wrong", "alice-5", "alice", "wrong")
    for _ in range(10):
        assert _connect(broker, 4, wrong)[0] == 0x04
    assert _observe(broker, THROTTLED) == []
