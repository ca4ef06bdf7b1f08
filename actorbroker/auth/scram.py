"""Auth layer: SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), server and client. Stdlib, codec and errors only.

Pure computation over the SCRAM messages; no I/O. The server never sees a
password: it keeps per user a :class:`ScramSecret` (salt, iteration count,
StoredKey, ServerKey), made once by :func:`derive`:

    SaltedPassword = PBKDF2(HMAC-H, SASLprep(password), salt, iterations)
    ClientKey = HMAC(SaltedPassword, "Client Key");   StoredKey = H(ClientKey)
    ServerKey = HMAC(SaltedPassword, "Server Key")

The exchange, as carried in MQTT 5 Authentication Data (section 4.12):

    client-first   n,,n=USER,r=CNONCE                      (CONNECT / AUTH 0x19)
    server-first   r=CNONCE+SNONCE,s=SALT,i=ITERATIONS      (AUTH 0x18)
    client-final   c=biws,r=CNONCE+SNONCE,p=PROOF           (AUTH 0x18)
    server-final   v=SERVERSIGNATURE                        (CONNACK / AUTH 0x00)

The server checks ``H(PROOF xor HMAC(StoredKey, AuthMessage)) == StoredKey``
and proves itself with ``HMAC(ServerKey, AuthMessage)``. An unknown user
gets a made-up salt (stable per name) and fails at the proof, like a wrong
password: the exchange does not tell which user names exist. Channel
binding is not offered (gs2 header ``n,,``; ``y,,`` accepted).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import stringprep
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

from actorbroker.codec import ReasonCode

from .exchange import Continue, Failure, Outcome, Success

__all__ = [
    "MECHANISMS",
    "ScramAuthenticator",
    "ScramClient",
    "ScramError",
    "ScramSecret",
    "ScramServer",
    "check_password",
    "derive",
    "saslprep",
]

#: Authentication Method name -> hashlib name.
MECHANISMS = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
DEFAULT_ITERATIONS = 4096  # RFC 7677's minimum
_GS2 = "n,,"


class ScramError(ValueError):
    """A SCRAM message that cannot be parsed, or a proof that does not verify."""


def saslprep(text: str) -> str:
    """SASLprep (RFC 4013) of a user name or password; ScramError if prohibited."""
    mapped = "".join(
        " " if stringprep.in_table_c12(ch) else ch
        for ch in text if not stringprep.in_table_b1(ch)
    )
    normal = unicodedata.normalize("NFKC", mapped)
    for ch in normal:
        if (stringprep.in_table_c12(ch) or stringprep.in_table_c21_c22(ch)
                or stringprep.in_table_c3(ch) or stringprep.in_table_c4(ch)
                or stringprep.in_table_c5(ch) or stringprep.in_table_c6(ch)
                or stringprep.in_table_c7(ch) or stringprep.in_table_c8(ch)
                or stringprep.in_table_c9(ch) or stringprep.in_table_a1(ch)):
            raise ScramError(f"character U+{ord(ch):04X} is not allowed (SASLprep)")
    if any(stringprep.in_table_d1(ch) for ch in normal) and (
            not stringprep.in_table_d1(normal[0]) or not stringprep.in_table_d1(normal[-1])
            or any(stringprep.in_table_d2(ch) for ch in normal)):
        raise ScramError("bidirectional text not allowed here (SASLprep)")
    return normal


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str) -> bytes:
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        raise ScramError(f"not base64: {text[:40]!r}") from None


def _hmac(hash_name: str, key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, hash_name).digest()


@dataclass(frozen=True, slots=True)
class ScramSecret:
    """What the server keeps of one password (never the password)."""

    mechanism: str
    iterations: int
    salt: bytes
    stored_key: bytes
    server_key: bytes


def _salted(hash_name: str, password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(hash_name, saslprep(password).encode("utf-8"), salt, iterations)


def derive(password: str, mechanism: str = "SCRAM-SHA-256", *, salt: bytes | None = None,
           iterations: int = DEFAULT_ITERATIONS) -> ScramSecret:
    """The :class:`ScramSecret` of ``password`` (a fresh 16-byte salt unless given)."""
    hash_name = MECHANISMS[mechanism]
    salt = os.urandom(16) if salt is None else salt
    salted = _salted(hash_name, password, salt, iterations)
    client_key = _hmac(hash_name, salted, b"Client Key")
    return ScramSecret(mechanism, iterations, salt, hashlib.new(hash_name, client_key).digest(),
                       _hmac(hash_name, salted, b"Server Key"))


def check_password(secret: ScramSecret, password: str) -> bool:
    """True if ``password`` is the one ``secret`` was derived from (costs one PBKDF2)."""
    try:
        again = derive(password, secret.mechanism, salt=secret.salt, iterations=secret.iterations)
    except ScramError:
        return False
    return hmac.compare_digest(again.stored_key, secret.stored_key)


def _attributes(message: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for part in message.split(","):
        if len(part) < 2 or part[1] != "=":
            raise ScramError(f"malformed attribute {part[:20]!r}")
        found.setdefault(part[0], part[2:])
    return found


def _username(escaped: str) -> str:
    if "=" in escaped.replace("=2C", "").replace("=3D", ""):
        raise ScramError("bad escape in user name")
    return escaped.replace("=2C", ",").replace("=3D", "=")


class ScramServer:
    """The server side of one SCRAM exchange (a :class:`~.exchange.Mechanism`)."""

    __slots__ = ("_hash", "_mechanism", "_lookup", "_nonce", "_step", "_secret", "_user",
                 "_first_bare", "_server_first", "_decoy")

    def __init__(self, mechanism: str, lookup: Callable[[str], ScramSecret | None], *,
                 decoy_key: bytes, nonce: Callable[[], bytes] = lambda: os.urandom(18)) -> None:
        self._mechanism = mechanism
        self._hash = MECHANISMS[mechanism]
        self._lookup = lookup
        self._nonce = nonce
        self._decoy = decoy_key
        self._step = 0
        self._secret: ScramSecret | None = None
        self._user = ""
        self._first_bare = self._server_first = ""

    def step(self, data: bytes | None) -> Outcome:
        """Answer the client's next message (see the module doc)."""
        try:
            text = (data or b"").decode("utf-8")
            if self._step == 0:
                self._step = 1
                return Continue(self._first(text).encode("utf-8"))
            if self._step == 1:
                self._step = 2
                return self._final(text)
            raise ScramError("message after the exchange ended")
        except (ScramError, UnicodeDecodeError) as exc:
            return Failure(ReasonCode.NOT_AUTHORIZED, f"{self._mechanism}: {exc}")

    def _first(self, text: str) -> str:
        if not (text.startswith("n,") or text.startswith("y,")):
            raise ScramError("channel binding is not supported (gs2 header must be n,, or y,,)")
        _, authzid, bare = (text.split(",", 2) + ["", ""])[:3]
        if authzid and not authzid.startswith("a="):
            raise ScramError("malformed gs2 header")
        attrs = _attributes(bare)
        if "m" in attrs or "n" not in attrs or not attrs.get("r"):
            raise ScramError("client-first-message needs n= and r= (and no m=)")
        self._user = saslprep(_username(attrs["n"]))
        secret = self._lookup(self._user)
        if secret is None:  # a decoy, so that unknown users fail like wrong passwords
            salt = _hmac("sha256", self._decoy, self._user.encode("utf-8"))[:16]
            secret = ScramSecret(self._mechanism, DEFAULT_ITERATIONS, salt, b"", b"")
        self._secret = secret
        self._first_bare = bare
        nonce = attrs["r"] + _b64(self._nonce())
        self._server_first = f"r={nonce},s={_b64(secret.salt)},i={secret.iterations}"
        return self._server_first

    def _final(self, text: str) -> Outcome:
        without_proof, sep, proof_text = text.rpartition(",p=")
        if not sep:
            raise ScramError("client-final-message has no proof")
        attrs = _attributes(without_proof)
        if _unb64(attrs.get("c", "")) not in (b"n,,", b"y,,"):
            raise ScramError("channel binding data does not match the gs2 header")
        if attrs.get("r") != _attributes(self._server_first)["r"]:
            raise ScramError("nonce does not match")
        secret = self._secret
        assert secret is not None
        message = ",".join((self._first_bare, self._server_first, without_proof)).encode("utf-8")
        signature = _hmac(self._hash, secret.stored_key, message)
        proof = _unb64(proof_text)
        if len(proof) != len(signature) or not secret.stored_key:
            raise ScramError(f"authentication of {self._user!r} failed")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(hashlib.new(self._hash, client_key).digest(), secret.stored_key):
            raise ScramError(f"authentication of {self._user!r} failed")
        server_signature = _hmac(self._hash, secret.server_key, message)
        return Success(f"v={_b64(server_signature)}".encode("utf-8"), self._user)


class ScramAuthenticator:
    """An :class:`~.exchange.Authenticator` for one SCRAM mechanism over a credentials lookup."""

    __slots__ = ("_mechanism", "_lookup", "_decoy")

    def __init__(self, mechanism: str, lookup: Callable[[str, str], ScramSecret | None]) -> None:
        if mechanism not in MECHANISMS:
            raise ValueError(f"unknown SCRAM mechanism {mechanism!r}")
        self._mechanism = mechanism
        self._lookup = lookup
        self._decoy = os.urandom(32)

    @property
    def method(self) -> str:
        return self._mechanism

    def begin(self, client_id: str) -> ScramServer:
        mechanism = self._mechanism
        return ScramServer(mechanism, lambda user: self._lookup(user, mechanism),
                           decoy_key=self._decoy)


class ScramClient:
    """The client side of one SCRAM exchange (for tests and tools)."""

    def __init__(self, username: str, password: str, mechanism: str = "SCRAM-SHA-256", *,
                 nonce: str | None = None) -> None:
        self._hash = MECHANISMS[mechanism]
        self._password = password
        escaped = saslprep(username).replace("=", "=3D").replace(",", "=2C")
        self._bare = f"n={escaped},r={nonce or _b64(os.urandom(18))}"
        self._message = b""
        self._salted = b""

    def first(self) -> bytes:
        """client-first-message."""
        return (_GS2 + self._bare).encode("utf-8")

    def final(self, server_first: bytes) -> bytes:
        """client-final-message answering ``server_first``."""
        text = server_first.decode("utf-8")
        attrs = _attributes(text)
        nonce = attrs.get("r", "")
        if not nonce.startswith(_attributes(self._bare)["r"]):
            raise ScramError("the server's nonce does not extend ours")
        self._salted = _salted(self._hash, self._password, _unb64(attrs.get("s", "")),
                               int(attrs.get("i", "0")))
        without_proof = f"c={_b64(_GS2.encode())},r={nonce}"
        self._message = ",".join((self._bare, text, without_proof)).encode("utf-8")
        client_key = _hmac(self._hash, self._salted, b"Client Key")
        stored_key = hashlib.new(self._hash, client_key).digest()
        signature = _hmac(self._hash, stored_key, self._message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        return f"{without_proof},p={_b64(proof)}".encode("utf-8")

    def verify(self, server_final: bytes | None) -> bool:
        """True if ``server_final`` proves the server knows our ServerKey."""
        if not server_final or not self._message:
            return False
        attrs = _attributes(server_final.decode("utf-8"))
        server_key = _hmac(self._hash, self._salted, b"Server Key")
        expected = _hmac(self._hash, server_key, self._message)
        return hmac.compare_digest(_unb64(attrs.get("v", "")), expected)
