"""Auth layer: the SCRAM credentials file. Stdlib, codec and errors only.

One line per user and mechanism, never a password (Mosquitto's password
file layout, PostgreSQL's SCRAM secret format)::

    # comments and blank lines are ignored
    alice:SCRAM-SHA-256$4096:<salt>$<StoredKey>:<ServerKey>
    alice:SCRAM-SHA-512$4096:<salt>$<StoredKey>:<ServerKey>

salt, StoredKey and ServerKey in base64. User names may not contain ':'
(as in Mosquitto) nor line breaks. ``actorbroker passwd FILE USER`` adds
or replaces a user (both mechanisms), writing the file with mode 0600.
:class:`Credentials` serves both the SCRAM exchange (``lookup``) and plain
user name / password checks (``check_password``, one PBKDF2 per check).
"""

from __future__ import annotations

import base64
import binascii
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from actorbroker.errors import AuthError

from .exchange import Authenticators
from .scram import DEFAULT_ITERATIONS, MECHANISMS, ScramAuthenticator, ScramSecret, check_password
from .scram import derive as derive_secret

__all__ = ["Credentials", "authenticators"]

_HEADER = ("# actorbroker SCRAM credentials (actorbroker passwd FILE USER);"
           " user:MECHANISM$iterations:salt$StoredKey:ServerKey\n")


def _parse(line: str) -> tuple[str, ScramSecret]:
    user, sep, secret = line.partition(":")
    if not sep or not user:
        raise ValueError("expected user:MECHANISM$iterations:salt$StoredKey:ServerKey")
    mechanism, _, rest = secret.partition("$")
    if mechanism not in MECHANISMS:
        raise ValueError(f"unknown mechanism {mechanism!r} (known: {', '.join(MECHANISMS)})")
    head, _, keys = rest.partition("$")
    iterations, _, salt = head.partition(":")
    stored, _, server = keys.partition(":")
    try:
        count = int(iterations)
        parts = [base64.b64decode(x.encode("ascii"), validate=True) for x in (salt, stored, server)]
    except (ValueError, binascii.Error, UnicodeEncodeError):
        raise ValueError("bad iteration count or base64") from None
    if count < 1 or not all(parts):
        raise ValueError("iterations, salt and keys must not be empty")
    return user, ScramSecret(mechanism, count, *parts)


def _format(user: str, secret: ScramSecret) -> str:
    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode("ascii")
    return (f"{user}:{secret.mechanism}${secret.iterations}:{b64(secret.salt)}"
            f"${b64(secret.stored_key)}:{b64(secret.server_key)}")


class Credentials:
    """SCRAM secrets by (user, mechanism)."""

    def __init__(self, secrets: dict[tuple[str, str], ScramSecret] | None = None) -> None:
        self._secrets = dict(secrets or {})

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Credentials:
        """Read a credentials file; AuthError naming the file and line if it is bad."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise AuthError(f"cannot read the credentials file {os.fspath(path)!r}: {exc}") from exc
        secrets: dict[tuple[str, str], ScramSecret] = {}
        for number, line in enumerate(text.splitlines(), 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            try:
                user, secret = _parse(line)
            except ValueError as exc:
                raise AuthError(f"{os.fspath(path)}:{number}: {exc}") from None
            secrets[(user, secret.mechanism)] = secret
        return cls(secrets)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the file atomically with mode 0600."""
        target = Path(path)
        lines = [_format(user, secret) for (user, _), secret in sorted(self._secrets.items())]
        fd, temp = tempfile.mkstemp(dir=target.parent or ".", prefix=f".{target.name}.")
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(_HEADER + "".join(line + "\n" for line in lines))
            os.replace(temp, target)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise

    def add(self, user: str, password: str, *, iterations: int = DEFAULT_ITERATIONS,
            mechanisms: Iterable[str] = tuple(MECHANISMS)) -> None:
        """Add or replace ``user`` (ValueError for a name the file cannot hold)."""
        if not user or ":" in user or "\n" in user or "\r" in user:
            raise ValueError("a user name must be non-empty, without ':' or line breaks")
        for mechanism in mechanisms:
            self._secrets[(user, mechanism)] = derive_secret(
                password, mechanism, iterations=iterations)

    def remove(self, user: str) -> bool:
        """Remove ``user``; False if absent."""
        keys = [key for key in self._secrets if key[0] == user]
        for key in keys:
            del self._secrets[key]
        return bool(keys)

    def lookup(self, user: str, mechanism: str) -> ScramSecret | None:
        """The secret of ``user`` for ``mechanism``, if any."""
        return self._secrets.get((user, mechanism))

    @property
    def users(self) -> list[str]:
        """The user names, sorted."""
        return sorted({user for user, _ in self._secrets})

    def check_password(self, username: str, password: bytes) -> bool:
        """True if ``password`` (UTF-8) is ``username``'s."""
        secret = self._secrets.get((username, "SCRAM-SHA-256")) or next(
            (s for (u, _), s in self._secrets.items() if u == username), None)
        if secret is None:
            return False
        try:
            text = password.decode("utf-8")
        except UnicodeDecodeError:
            return False
        return check_password(secret, text)


def authenticators(credentials: Credentials) -> Authenticators:
    """SCRAM-SHA-256 and SCRAM-SHA-512 over ``credentials``, and its password check."""
    return Authenticators(
        [ScramAuthenticator(mechanism, credentials.lookup) for mechanism in MECHANISMS],
        credentials,
    )
