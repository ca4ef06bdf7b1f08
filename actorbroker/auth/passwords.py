"""Auth layer: Mosquitto's password file (``$7$``, ``$6$``, ``$argon2id$``). Stdlib, errors and argon2-cffi only.

One ``user:hash`` line per user, as ``mosquitto_passwd`` writes it; lines
starting with ``#`` and blank lines are ignored. The hashes Mosquitto reads:

    $7$ITERATIONS$SALT$HASH   PBKDF2-HMAC-SHA512(password, salt, iterations), 64 bytes
                              (Mosquitto 2.0 writes 101 iterations and a 12-byte salt,
                              2.1 writes 1,000 and a 64-byte salt)
    $6$SALT$HASH              SHA-512(password + salt), once (not sha512-crypt)
    $argon2id$v=19$m=..,t=..,p=..$SALT$HASH
                              Argon2id in its standard encoding (Mosquitto 2.1)

SALT and HASH are standard base64 with padding; Mosquitto accepts salts of
12 or 64 bytes and hashes of 64 bytes only, and so do we (a file Mosquitto
refuses is refused here too, naming the line). The password is the CONNECT's
password bytes as they are (Mosquitto hashes them without normalising).

Checks compare in constant time (:func:`hmac.compare_digest`). A user who is
not in the file is checked against a decoy entry made like the file's most
common kind of entry, so that an unknown user costs what a wrong password
costs and the answer's timing does not tell which user names exist.

:class:`PasswordFile` also serves SCRAM-SHA-512 from ``$7$`` entries: their
hash is SCRAM's SaltedPassword (RFC 5802 ``Hi()`` is PBKDF2 with the same
hash, salt and count), so the same users authenticate either way.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import tempfile
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from actorbroker.errors import AuthError

from .scram import ScramSecret

__all__ = ["PBKDF2_ITERATIONS", "PasswordEntry", "PasswordFile", "hash_password"]

#: What ``actorbroker passwd`` writes: Mosquitto 2.1's iteration count with 2.0's 12-byte
#: salt, the one shape both versions read (2.0 refuses 64-byte salts: a file made here then
#: works in either, tested against Debian's Mosquitto 2.0.11).
PBKDF2_ITERATIONS = 1000
SALT_BYTES = 12
_HASH_BYTES = 64
_SALT_SIZES = (12, 64)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        raise ValueError(f"the {what} is not base64") from None


@dataclass(frozen=True, slots=True)
class PasswordEntry:
    """One user's hash as the file holds it."""

    kind: str                # "7", "6" or "argon2id"
    encoded: str             # the hash field as written
    iterations: int = 0      # $7$ only
    salt: bytes = b""        # $7$ and $6$
    digest: bytes = b""      # $7$ and $6$

    @classmethod
    def parse(cls, encoded: str) -> PasswordEntry:
        """The entry of a hash field; ValueError saying what is wrong."""
        if encoded.startswith("$argon2id$"):
            if _argon2() is None:
                raise ValueError("an $argon2id$ hash needs the argon2-cffi package")
            return cls("argon2id", encoded)
        parts = encoded.split("$")
        if encoded.startswith("$7$") and len(parts) == 5:
            try:
                iterations = int(parts[2])
            except ValueError:
                raise ValueError("the $7$ iteration count is not a number") from None
            if iterations < 1:
                raise ValueError("the $7$ iteration count must be at least 1")
            salt, digest = _unb64(parts[3], "salt"), _unb64(parts[4], "hash")
            kind = "7"
        elif encoded.startswith("$6$") and len(parts) == 4:
            iterations = 0
            salt, digest = _unb64(parts[2], "salt"), _unb64(parts[3], "hash")
            kind = "6"
        else:
            raise ValueError("not a Mosquitto password hash ($7$, $6$ or $argon2id$): "
                             "plain-text passwords are not accepted (hash them with "
                             "actorbroker passwd or mosquitto_passwd -U)")
        if len(salt) not in _SALT_SIZES:
            raise ValueError(f"a salt of {len(salt)} bytes (Mosquitto's are 12 or 64)")
        if len(digest) != _HASH_BYTES:
            raise ValueError(f"a hash of {len(digest)} bytes (SHA-512 gives 64)")
        return cls(kind, encoded, iterations, salt, digest)

    @property
    def shape(self) -> tuple[str, int, int, str]:
        """What its check costs: kind, iterations, salt size (and argon2 parameters)."""
        params = self.encoded.split("$")[3] if self.kind == "argon2id" else ""
        return (self.kind, self.iterations, len(self.salt), params)

    def verify(self, password: bytes) -> bool:
        """True if ``password`` hashes to this entry (constant-time comparison)."""
        if self.kind == "7":
            again = hashlib.pbkdf2_hmac("sha512", password, self.salt, self.iterations)
            return hmac.compare_digest(again, self.digest)
        if self.kind == "6":
            return hmac.compare_digest(hashlib.sha512(password + self.salt).digest(), self.digest)
        argon2 = _argon2()
        assert argon2 is not None  # parse refused the entry otherwise
        try:
            return bool(argon2.PasswordHasher().verify(self.encoded, password))
        except argon2.exceptions.VerificationError:
            return False
        except argon2.exceptions.InvalidHashError:
            return False

    def scram(self) -> ScramSecret | None:
        """The SCRAM-SHA-512 secret this entry holds ($7$ only), else None."""
        if self.kind != "7":
            return None
        client_key = hmac.new(self.digest, b"Client Key", "sha512").digest()
        return ScramSecret("SCRAM-SHA-512", self.iterations, self.salt,
                           hashlib.sha512(client_key).digest(),
                           hmac.new(self.digest, b"Server Key", "sha512").digest())


def _argon2() -> Any:
    """argon2-cffi, None if it is not installed (only $argon2id$ entries need it)."""
    try:
        import argon2
        import argon2.exceptions
    except ImportError:
        return None
    return argon2


def hash_password(password: str | bytes, *, iterations: int = PBKDF2_ITERATIONS,
                  salt: bytes | None = None) -> str:
    """A Mosquitto ``$7$`` hash of ``password`` (a fresh 12-byte salt unless given)."""
    data = password.encode("utf-8") if isinstance(password, str) else password
    salt = os.urandom(SALT_BYTES) if salt is None else salt
    digest = hashlib.pbkdf2_hmac("sha512", data, salt, iterations)
    return f"$7${iterations}${_b64(salt)}${_b64(digest)}"


def _decoy(entries: Iterable[PasswordEntry]) -> PasswordEntry:
    """An entry no password matches, shaped like the most common entry (see the module doc)."""
    shapes = Counter(entry.shape for entry in entries)
    kind, iterations, salt_size, params = (
        shapes.most_common(1)[0][0] if shapes else ("7", PBKDF2_ITERATIONS, SALT_BYTES, ""))
    secret = os.urandom(32)
    if kind == "argon2id":
        argon2 = _argon2()
        assert argon2 is not None
        fields = dict(p.split("=", 1) for p in params.split(","))
        hasher = argon2.PasswordHasher(time_cost=int(fields["t"]), memory_cost=int(fields["m"]),
                                       parallelism=int(fields["p"]), hash_len=_HASH_BYTES,
                                       salt_len=salt_size or SALT_BYTES)
        return PasswordEntry("argon2id", hasher.hash(secret))
    salt = os.urandom(salt_size)
    if kind == "6":
        return PasswordEntry("6", "", 0, salt, hashlib.sha512(secret + salt).digest())
    return PasswordEntry.parse(hash_password(secret, iterations=iterations, salt=salt))


class PasswordFile:
    """The users of a Mosquitto password file (loop thread: reads only after loading)."""

    __slots__ = ("path", "_entries", "_decoy")

    def __init__(self, entries: dict[str, PasswordEntry] | None = None, path: str = "") -> None:
        self.path = path
        self._entries = dict(entries or {})
        self._decoy = _decoy(self._entries.values())

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> PasswordFile:
        """Read ``path``; AuthError naming the file and line of the first bad entry."""
        name = os.fspath(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise AuthError(f"cannot read the password file {name!r}: {exc}") from exc
        entries: dict[str, PasswordEntry] = {}
        for number, line in enumerate(text.splitlines(), 1):
            line = line.rstrip("\r\n")
            if not line.strip() or line.startswith("#"):
                continue
            user, sep, encoded = line.partition(":")
            if not sep or not user:
                raise AuthError(f"{name}:{number}: expected user:hash")
            try:
                entries[user] = PasswordEntry.parse(encoded.strip())
            except ValueError as exc:
                raise AuthError(f"{name}:{number}: user {user!r}: {exc}") from None
        return cls(entries, name)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the file atomically with mode 0600, one ``user:hash`` line per user."""
        target = Path(path)
        fd, temp = tempfile.mkstemp(dir=target.parent or ".", prefix=f".{target.name}.")
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write("".join(f"{user}:{entry.encoded}\n"
                                  for user, entry in sorted(self._entries.items())))
            os.replace(temp, target)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise

    def set(self, user: str, password: str, *, iterations: int = PBKDF2_ITERATIONS) -> None:
        """Add or replace ``user`` with a ``$7$`` hash (ValueError for a name the file cannot hold)."""
        if not user or ":" in user or any(c in user for c in "\r\n"):
            raise ValueError("a user name must be non-empty, without ':' or line breaks")
        self._entries[user] = PasswordEntry.parse(hash_password(password, iterations=iterations))

    def remove(self, user: str) -> bool:
        """Remove ``user``; False if absent."""
        return self._entries.pop(user, None) is not None

    @property
    def users(self) -> list[str]:
        """The user names, sorted."""
        return sorted(self._entries)

    def check_password(self, username: str, password: bytes) -> bool:
        """True if ``password`` is ``username``'s; an unknown user costs a decoy check."""
        entry = self._entries.get(username)
        if entry is None:
            self._decoy.verify(password)
            return False
        return entry.verify(password)

    def lookup(self, user: str, mechanism: str) -> ScramSecret | None:
        """SCRAM-SHA-512 from a ``$7$`` entry; nothing for other mechanisms or kinds."""
        entry = self._entries.get(user)
        if entry is None or mechanism != "SCRAM-SHA-512":
            return None
        return entry.scram()

    def __contains__(self, user: object) -> bool:
        return user in self._entries
