"""Auth layer: the node's user store and ACL, loaded from files and reloadable. Stdlib, codec and errors only.

:class:`Security` holds what ``[auth]`` names: the Mosquitto password file,
the SCRAM credentials file and the ACL file. Both user files form one user
store: a CONNECT's user name and password are checked against the password
file when the user is in it, else against the SCRAM file; SCRAM-SHA-512
reads ``$7$`` entries of the password file (their hash is SCRAM's salted
password) and the SCRAM file's own secrets; SCRAM-SHA-256 reads the SCRAM
file only. So users brought over from Mosquitto can authenticate with SCRAM
too, without a second file.

:meth:`Security.reload` reads every configured file again and swaps them in
only when all of them could be read: a file that fails keeps the previous
ones in force (AuthError says why). :meth:`Security.changed` tells whether a
file's modification time or size moved since it was read (the broker polls
it). Readers (the gateway, the sessions) take the current objects at each
use, on the loop thread; the swap is one attribute write each.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


from .acl import AclFile
from .credentials import Credentials
from .exchange import Authenticators
from .passwords import PasswordFile
from .scram import MECHANISMS, ScramAuthenticator, ScramSecret

__all__ = ["Security"]


@dataclass(frozen=True, slots=True)
class _Stamp:
    mtime_ns: int
    size: int


def _stamp(path: str) -> _Stamp | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return _Stamp(stat.st_mtime_ns, stat.st_size)


class Security:
    """The user store and the ACL of one node (see the module doc)."""

    def __init__(self, *, password_file: str = "", scram_file: str = "", acl_file: str = "",
                 allow_anonymous: bool = True) -> None:
        self.password_file = password_file
        self.scram_file = scram_file
        self.acl_file = acl_file
        self.allow_anonymous = allow_anonymous
        self.passwords: PasswordFile | None = None
        self.scram: Credentials | None = None
        self.acl: AclFile | None = None
        self._stamps: dict[str, _Stamp | None] = {}
        self.reload()  # AuthError: the broker does not start

    @property
    def has_files(self) -> bool:
        """True when a file is configured (there is something to reload)."""
        return bool(self._paths())

    @property
    def has_users(self) -> bool:
        """True when a user file is configured (user names and passwords are checked)."""
        return bool(self.password_file or self.scram_file)

    def authenticators(self) -> Authenticators | None:
        """SCRAM methods and the password check over this store (None without user files)."""
        if not self.has_users:
            return None
        return Authenticators([ScramAuthenticator(m, self.lookup) for m in MECHANISMS], self)

    def check_password(self, username: str, password: bytes) -> bool:
        """True if ``password`` is ``username``'s in the password file, else the SCRAM file."""
        passwords, scram = self.passwords, self.scram
        if passwords is not None and (username in passwords or scram is None):
            return passwords.check_password(username, password)
        if scram is not None:
            return scram.check_password(username, password)
        return False

    def lookup(self, user: str, mechanism: str) -> ScramSecret | None:
        """The SCRAM secret of ``user`` for ``mechanism``: the password file's, else the SCRAM file's."""
        secret = None if self.passwords is None else self.passwords.lookup(user, mechanism)
        if secret is None and self.scram is not None:
            secret = self.scram.lookup(user, mechanism)
        return secret

    def reload(self) -> list[str]:
        """Read every configured file again; what was loaded, for the log.

        All or nothing: AuthError (naming the file and line) leaves the
        files in force as they were.
        """
        # Taken first and kept even if the load fails: polling retries a broken file
        # once it changes again, not every time it looks.
        self._stamps = {path: _stamp(path) for path in self._paths()}
        passwords = PasswordFile.load(self.password_file) if self.password_file else None
        scram = Credentials.load(self.scram_file) if self.scram_file else None
        acl = AclFile.load(self.acl_file) if self.acl_file else None
        self.passwords, self.scram, self.acl = passwords, scram, acl
        loaded = []
        if passwords is not None:
            loaded.append(f"password file {self.password_file} ({len(passwords.users)} users)")
        if scram is not None:
            loaded.append(f"SCRAM credentials {self.scram_file} ({len(scram.users)} users)")
        if acl is not None:
            loaded.append(f"ACL file {self.acl_file}")
        return loaded

    def changed(self) -> bool:
        """True if a configured file was modified (or appeared, or went) since it was last read."""
        return any(_stamp(path) != stamp for path, stamp in self._stamps.items())

    def _paths(self) -> list[str]:
        return [p for p in (self.password_file, self.scram_file, self.acl_file) if p]

