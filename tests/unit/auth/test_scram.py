"""SCRAM-SHA-256/512 (RFC 5802, RFC 7677), the exchange table and the credentials file."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from actorbroker.auth import (
    Authenticators,
    AuthState,
    Continue,
    Credentials,
    Exchange,
    Failure,
    ScramAuthenticator,
    ScramClient,
    ScramError,
    Success,
    authenticators,
    derive,
)
from actorbroker.auth.scram import ScramServer, check_password, saslprep
from actorbroker.codec import ReasonCode
from actorbroker.errors import AuthError


def test_rfc7677_test_vector() -> None:
    """RFC 7677 section 3: user "user", password "pencil", both nonces and the salt fixed."""
    salt = bytes.fromhex("5b6d99689d12358eec6b04143a36e881")  # W22ZaJ0SNY7soEsUEjb6gQ==
    secret = derive("pencil", "SCRAM-SHA-256", salt=salt, iterations=4096)
    server = ScramServer("SCRAM-SHA-256", lambda user: secret if user == "user" else None,
                         decoy_key=b"k", nonce=lambda: b"")
    client = ScramClient("user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    assert client.first() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    # The RFC's server nonce, so that the proofs are the RFC's.
    rfc_first = (b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                 b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    final = client.final(rfc_first)
    assert final == (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                     b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    assert client.verify(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
    assert not client.verify(b"v=AAAA")
    assert isinstance(server.step(client.first()), Continue)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_full_exchange_and_a_wrong_password(mechanism: str) -> None:
    credentials = Credentials()
    credentials.add("alice", "s3cret", mechanisms=[mechanism])
    auth = ScramAuthenticator(mechanism, credentials.lookup)
    for password, ok in (("s3cret", True), ("wrong", False)):
        client = ScramClient("alice", password, mechanism)
        exchange = Exchange(auth, "cid")
        first = exchange.step(client.first())
        assert isinstance(first, Continue) and exchange.state is AuthState.CONTINUING
        final = exchange.step(client.final(first.data))
        if ok:
            assert isinstance(final, Success) and final.username == "alice"
            assert client.verify(final.data)
            assert exchange.state is AuthState.SUCCEEDED
        else:
            assert isinstance(final, Failure) and final.reason_code == ReasonCode.NOT_AUTHORIZED
            assert exchange.state is AuthState.FAILED


def test_an_unknown_user_fails_like_a_wrong_password_and_gets_a_stable_salt() -> None:
    auth = ScramAuthenticator("SCRAM-SHA-256", lambda user, mech: None)
    salts = []
    for _ in range(2):
        client = ScramClient("nobody", "x")
        exchange = Exchange(auth, "cid")
        first = exchange.step(client.first())
        assert isinstance(first, Continue)
        salts.append(first.data.split(b",")[1])
        assert isinstance(exchange.step(client.final(first.data)), Failure)
    assert salts[0] == salts[1]


@pytest.mark.parametrize("first", [
    b"p=tls-unique,,n=u,r=x",  # channel binding asked for
    b"n,,r=abc",               # no user name
    b"garbage",
    b"\xff",
])
def test_malformed_client_first_messages_fail(first: bytes) -> None:
    auth = ScramAuthenticator("SCRAM-SHA-256", lambda user, mech: None)
    assert isinstance(Exchange(auth, "c").step(first), Failure)


def test_a_tampered_nonce_fails() -> None:
    secret = derive("pw")
    auth = ScramAuthenticator("SCRAM-SHA-256", lambda user, mech: secret)
    client = ScramClient("u", "pw")
    exchange = Exchange(auth, "c")
    first = exchange.step(client.first())
    assert isinstance(first, Continue)
    final = client.final(first.data).replace(b"r=", b"r=X", 1)
    assert isinstance(exchange.step(final), Failure)


def test_steps_after_the_end_fail() -> None:
    secret = derive("pw")
    exchange = Exchange(ScramAuthenticator("SCRAM-SHA-256", lambda u, m: secret), "c")
    client = ScramClient("u", "pw")
    first = exchange.step(client.first())
    assert isinstance(first, Continue)
    assert isinstance(exchange.step(client.final(first.data)), Success)
    again = exchange.step(b"n,,n=u,r=x")
    assert isinstance(again, Failure) and again.reason_code == ReasonCode.PROTOCOL_ERROR


def test_saslprep() -> None:
    assert saslprep("I\u00adX") == "IX"          # soft hyphen maps to nothing
    assert saslprep("user") == "user"
    assert saslprep("\u2168") == "IX"            # NFKC
    assert saslprep("a\u00a0b") == "a b"         # non-ASCII space
    with pytest.raises(ScramError):
        saslprep("\u0007")                       # a control character


def test_user_names_with_comma_and_equals_are_escaped() -> None:
    secret = derive("pw")
    auth = ScramAuthenticator("SCRAM-SHA-256", lambda u, m: secret if u == "a,b=c" else None)
    client = ScramClient("a,b=c", "pw")
    assert b"n=a=2Cb=3Dc," in client.first()
    exchange = Exchange(auth, "c")
    first = exchange.step(client.first())
    assert isinstance(first, Continue)
    assert isinstance(exchange.step(client.final(first.data)), Success)


def test_credentials_file_round_trip_without_passwords(tmp_path: Path) -> None:
    path = tmp_path / "scram.txt"
    credentials = Credentials()
    credentials.add("alice", "pw-a", iterations=4096)
    credentials.add("bob", "pw-b")
    credentials.save(path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    text = path.read_text()
    assert "pw-a" not in text and "alice:SCRAM-SHA-256$4096:" in text
    assert "alice:SCRAM-SHA-512$4096:" in text
    loaded = Credentials.load(path)
    assert loaded.users == ["alice", "bob"]
    assert loaded.check_password("alice", b"pw-a") and not loaded.check_password("alice", b"pw-b")
    assert not loaded.check_password("carol", b"x")
    assert loaded.remove("bob") and not loaded.remove("bob")


@pytest.mark.parametrize(("line", "message"), [
    ("alice", "expected user:"),
    ("alice:MD5$1:a$b:c", "unknown mechanism"),
    ("alice:SCRAM-SHA-256$x:a$b:c", "bad iteration"),
    ("alice:SCRAM-SHA-256$4096:!!$b:c", "bad iteration count or base64"),
])
def test_a_bad_credentials_file_names_the_line(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "bad.txt"
    path.write_text(f"# comment\n\n{line}\n")
    with pytest.raises(AuthError, match=rf"bad.txt:3: .*{message}"):
        Credentials.load(path)


def test_a_missing_credentials_file_is_an_auth_error(tmp_path: Path) -> None:
    with pytest.raises(AuthError, match="cannot read"):
        Credentials.load(tmp_path / "none")


@pytest.mark.parametrize("user", ["", "a:b", "a\nb"])
def test_user_names_the_file_cannot_hold_are_refused(user: str) -> None:
    with pytest.raises(ValueError):
        Credentials().add(user, "pw")


def test_authenticators_serve_both_mechanisms_and_passwords() -> None:
    credentials = Credentials()
    credentials.add("u", "pw")
    auth = authenticators(credentials)
    assert auth.methods == ("SCRAM-SHA-256", "SCRAM-SHA-512")
    assert auth.get("PLAIN") is None
    assert auth.check_password("u", b"pw") and not auth.check_password("u", None)
    assert not Authenticators().check_password("u", b"pw")


def test_check_password_of_a_secret() -> None:
    secret = derive("pw", "SCRAM-SHA-512")
    assert check_password(secret, "pw") and not check_password(secret, "PW")
