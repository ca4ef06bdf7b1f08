"""Test support for the security tests: raw clients that log in, password files. Stdlib,
the project's codec and auth."""

from __future__ import annotations

from pathlib import Path

from mqtt_testkit import RawClient

from actorbroker.auth import hash_password
from actorbroker.codec import ConnAck, Connect, Packet, Publish, Will


def write_users(path: Path, users: dict[str, str]) -> Path:
    """A Mosquitto password file ($7$, as actorbroker passwd writes it)."""
    path.write_text("".join(f"{u}:{hash_password(p, iterations=101)}\n"
                            for u, p in users.items()))
    return path


def login(host: str, port: int, client_id: str, user: str | None = None,
          password: str | None = None, *, level: int = 4, clean: bool = True,
          will: Will | None = None) -> tuple[RawClient, ConnAck]:
    """A RawClient that sent CONNECT, and the CONNACK it got."""
    raw = RawClient(host, port, level)
    name = "MQIsdp" if level == 3 else "MQTT"
    raw.send(Connect(name, level, client_id, clean, 60, user,
                     None if password is None else password.encode(), will))
    connack = raw.recv()
    assert isinstance(connack, ConnAck), connack
    return raw, connack


def publishes_until(raw: RawClient, marker: str) -> list[Publish]:
    """The PUBLISHes ``raw`` gets up to and including the one on topic ``marker``."""
    got: list[Publish] = []
    while True:
        packet: Packet = raw.recv()
        if isinstance(packet, Publish):
            got.append(packet)
            if packet.topic == marker:
                return got
