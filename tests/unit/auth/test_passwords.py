"""Mosquitto password files: $7$, $6$ and $argon2id$ entries, decoys, SCRAM from $7$."""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import argon2
import pytest

from actorbroker.auth import PasswordEntry, PasswordFile, ScramAuthenticator, ScramClient, Security
from actorbroker.auth import Success, hash_password
from actorbroker.errors import AuthError


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_7_entries_of_both_mosquitto_versions() -> None:
    for iterations, salt_size in ((101, 12), (1000, 64)):  # 2.0's and 2.1's defaults
        salt = os.urandom(salt_size)
        digest = hashlib.pbkdf2_hmac("sha512", b"s3cret", salt, iterations)
        entry = PasswordEntry.parse(f"$7${iterations}${_b64(salt)}${_b64(digest)}")
        assert entry.verify(b"s3cret")
        assert not entry.verify(b"s3cret ")
        assert not entry.verify(b"")


def test_6_entry_is_one_sha512_of_password_then_salt() -> None:
    salt = os.urandom(12)
    entry = PasswordEntry.parse(f"$6${_b64(salt)}${_b64(hashlib.sha512(b'pw' + salt).digest())}")
    assert entry.verify(b"pw") and not entry.verify(b"pW")


def test_argon2id_entry_as_mosquitto_2_1_writes_it() -> None:
    encoded = argon2.PasswordHasher(time_cost=1, memory_cost=47104, parallelism=1,
                                    hash_len=64, salt_len=64).hash("pw")
    entry = PasswordEntry.parse(encoded)
    assert entry.verify(b"pw") and not entry.verify(b"px")


@pytest.mark.parametrize("encoded, message", [
    ("plain", "plain-text passwords are not accepted"),
    ("$7$x$AAAA$AAAA", "iteration count is not a number"),
    ("$7$0$" + _b64(b"s" * 12) + "$" + _b64(b"h" * 64), "at least 1"),
    ("$7$10$" + _b64(b"s" * 13) + "$" + _b64(b"h" * 64), "a salt of 13 bytes"),
    ("$6$" + _b64(b"s" * 12) + "$" + _b64(b"h" * 32), "a hash of 32 bytes"),
    ("$6$!!!$" + _b64(b"h" * 64), "not base64"),
])
def test_bad_entries_are_refused_with_the_reason(encoded: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        PasswordEntry.parse(encoded)


def test_file_errors_name_the_line(tmp_path: Path) -> None:
    path = tmp_path / "pw"
    path.write_text(f"# comment\n\nalice:{hash_password('a')}\nbob:plain\n")
    with pytest.raises(AuthError, match=r"pw:4: user 'bob'"):
        PasswordFile.load(path)


def test_unknown_users_are_checked_against_a_decoy_of_the_same_kind(tmp_path: Path) -> None:
    users = PasswordFile({"alice": PasswordEntry.parse(hash_password("a", iterations=101))})
    assert users.check_password("alice", b"a")
    assert not users.check_password("nobody", b"a")
    decoy = users._decoy  # what an unknown user is checked against
    assert decoy.shape == users._entries["alice"].shape


def test_scram_sha512_from_a_7_entry() -> None:
    """A $7$ hash is SCRAM-SHA-512's SaltedPassword: the same user logs in either way."""
    users = PasswordFile({"alice": PasswordEntry.parse(hash_password("pw", iterations=101))})
    server = ScramAuthenticator("SCRAM-SHA-512", users.lookup).begin("c1")
    client = ScramClient("alice", "pw", "SCRAM-SHA-512")
    first = server.step(client.first())
    outcome = server.step(client.final(first.data))  # type: ignore[union-attr]
    assert isinstance(outcome, Success) and client.verify(outcome.data)
    assert users.lookup("alice", "SCRAM-SHA-256") is None


@pytest.mark.skipif(shutil.which("mosquitto_passwd") is None, reason="mosquitto_passwd missing")
def test_a_file_made_by_mosquitto_passwd(tmp_path: Path) -> None:
    path = tmp_path / "pw"
    subprocess.run(["mosquitto_passwd", "-c", "-b", str(path), "alice", "wonder land"],
                   check=True, timeout=30)
    subprocess.run(["mosquitto_passwd", "-b", str(path), "bob", "pässwörd"], check=True,
                   timeout=30)
    users = PasswordFile.load(path)
    assert users.check_password("alice", b"wonder land")
    assert users.check_password("bob", "pässwörd".encode())
    assert not users.check_password("bob", b"passwort")


def test_security_prefers_the_password_file_and_falls_back_to_scram(tmp_path: Path) -> None:
    from actorbroker.auth import Credentials
    pw, scram = tmp_path / "pw", tmp_path / "scram"
    pw.write_text(f"alice:{hash_password('from-pw')}\n")
    credentials = Credentials()
    credentials.add("alice", "from-scram")
    credentials.add("carol", "c")
    credentials.save(scram)
    security = Security(password_file=str(pw), scram_file=str(scram))
    assert security.check_password("alice", b"from-pw")
    assert not security.check_password("alice", b"from-scram")
    assert security.check_password("carol", b"c")
    assert not security.check_password("dave", b"c")


def test_security_reload_is_all_or_nothing(tmp_path: Path) -> None:
    pw, acl = tmp_path / "pw", tmp_path / "acl"
    pw.write_text(f"alice:{hash_password('a')}\n")
    acl.write_text("topic read x\n")
    security = Security(password_file=str(pw), acl_file=str(acl))
    assert not security.changed()
    pw.write_text(f"alice:{hash_password('b')}\n")
    acl.write_text("topic sideways x\n")  # broken
    assert security.changed()
    with pytest.raises(AuthError, match="acl:1: invalid access 'sideways'"):
        security.reload()
    assert security.check_password("alice", b"a")  # the old files stay in force
    assert not security.changed()  # not retried until the files change again
    acl.write_text("topic read y\n")
    assert security.changed()
    security.reload()
    assert security.check_password("alice", b"b")
