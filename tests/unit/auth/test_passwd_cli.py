"""``actorbroker passwd FILE USER``: adds salted hashes (Mosquitto $7$ or SCRAM), never the password."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from actorbroker.auth import Credentials, PasswordFile


def passwd(*args: str, password: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "actorbroker.cli", "passwd", *args],
                          input=password + "\n", capture_output=True, text=True, timeout=60,
                          check=False)


def test_passwd_adds_replaces_and_deletes(tmp_path: Path) -> None:
    path = tmp_path / "scram.txt"
    assert passwd(str(path), "alice", "--format", "scram", password="first").returncode == 0
    assert passwd(str(path), "bob", password="b").returncode == 0
    assert passwd(str(path), "alice", password="second").returncode == 0
    assert "second" not in path.read_text()
    credentials = Credentials.load(path)
    assert credentials.users == ["alice", "bob"]
    assert credentials.check_password("alice", b"second")
    assert not credentials.check_password("alice", b"first")
    assert passwd(str(path), "bob", "--delete").returncode == 0
    assert Credentials.load(path).users == ["alice"]


def test_passwd_refusals(tmp_path: Path) -> None:
    path = str(tmp_path / "scram.txt")
    for args, password, code, message in [
        (("a:b",), "x", 1, "without ':'"),              # ':' cannot be stored
        (("alice",), "", 1, "empty password"),
        (("alice", "--iterations", "10", "--format", "scram"), "x", 2, "at least 4096"),
        (("nobody", "--delete"), "", 1, "no user 'nobody'"),
    ]:
        done = passwd(path, *args, password=password)
        assert (done.returncode, message in done.stderr) == (code, True), done.stderr


def test_passwd_writes_mosquitto_7_entries_by_default(tmp_path: Path) -> None:
    path = tmp_path / "passwd"
    assert passwd(str(path), "alice", password="first").returncode == 0
    assert passwd(str(path), "bob", "--iterations", "101", password="b").returncode == 0
    lines = path.read_text().splitlines()
    assert [line.split(":")[0] for line in lines] == ["alice", "bob"]
    assert lines[0].split(":", 1)[1].startswith("$7$1000$")  # Mosquitto 2.1's count
    assert lines[1].split(":", 1)[1].startswith("$7$101$")
    assert "first" not in path.read_text()
    assert path.stat().st_mode & 0o777 == 0o600
    users = PasswordFile.load(path)
    assert users.check_password("alice", b"first") and not users.check_password("alice", b"b")


def test_passwd_keeps_a_scram_file_scram(tmp_path: Path) -> None:
    path = tmp_path / "scram.txt"
    assert passwd(str(path), "alice", "--format", "scram", password="a").returncode == 0
    assert passwd(str(path), "bob", password="b").returncode == 0  # the file's own format
    assert Credentials.load(path).users == ["alice", "bob"]
