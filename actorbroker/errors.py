"""Project-wide errors that do not come from a peer's bytes. Imports the stdlib only.

A peer that breaks the protocol raises :class:`actorbroker.codec.ProtocolError`
(it carries the reason code to send back). Everything else the broker can
refuse or fail at is a :class:`BrokerError`:

* :class:`ConfigError`: one thing wrong with a configuration, with its file and
  1-based line when known; :class:`InvalidConfigError` gathers every one found
  in a file, so that an operator fixes them all in one pass;
* :class:`StorageError`: the commit log, session store or retained store
  cannot do what was asked (disk full, a quarantined segment, a bad snapshot);
* :class:`AuthError`: the password file or the ACLs cannot be used;
* :class:`ClusterError`: etcd or a peer node cannot be reached or disagrees.

A bug (misusing an API) stays a ``ValueError``/``TypeError`` and crashes its
actor; its supervisor restarts it.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "AuthError",
    "BrokerError",
    "ClusterError",
    "ConfigError",
    "CorruptRecordError",
    "DiskFullError",
    "InvalidConfigError",
    "LogLockedError",
    "StorageError",
    "StorageIOError",
]


class BrokerError(Exception):
    """Base of every error of the broker that is not a peer's protocol error."""


class ConfigError(BrokerError):
    """One thing wrong with a configuration.

    ``source`` names where the value came from (a file path, or
    ``"command line"``), ``line`` is 1-based within that file (None when the
    error is not tied to a line, e.g. an unreadable file), and ``key`` is the
    option in dotted form, e.g. ``"limits.max_qos"`` or ``"listeners[1].port"``.
    ``str()`` gives ``SOURCE:LINE: message``, the form compilers use.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        line: int | None = None,
        key: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.source = source
        self.line = line
        self.key = key

    def __str__(self) -> str:
        where = [str(part) for part in (self.source, self.line) if part is not None]
        return ":".join([*where, f" {self.message}"]) if where else self.message

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.message!r}, source={self.source!r}, "
            f"line={self.line!r}, key={self.key!r})"
        )

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, ConfigError)
        return (self.message, self.source, self.line, self.key) == (
            other.message, other.source, other.line, other.key,
        )

    def __hash__(self) -> int:
        return hash((self.message, self.source, self.line, self.key))

    def __reduce__(self) -> tuple[object, ...]:
        # Keyword-only arguments do not survive the default exception pickling.
        return (_rebuild_config_error, (type(self), self.message, self.source, self.line, self.key))


def _rebuild_config_error(
    cls: type[ConfigError], message: str, source: str | None, line: int | None, key: str | None
) -> ConfigError:
    return cls(message, source=source, line=line, key=key)


class InvalidConfigError(ConfigError):
    """A configuration with at least one error; ``errors`` holds all of them.

    The errors are in the order an operator reads the file: by line, then
    errors without a line. ``str()`` lists one per line.
    """

    def __init__(self, errors: Iterable[ConfigError], *, source: str | None = None) -> None:
        found = tuple(errors)
        if not found:
            raise ValueError("InvalidConfigError needs at least one ConfigError")
        self.errors: tuple[ConfigError, ...] = tuple(
            sorted(found, key=lambda e: (e.line is None, e.line or 0))
        )
        count = len(self.errors)
        summary = f"{count} error{'s' if count != 1 else ''} in configuration"
        super().__init__(summary, source=source)

    def __str__(self) -> str:
        return "\n".join(str(error) for error in self.errors)

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_invalid, (self.errors, self.source))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, InvalidConfigError):
            return NotImplemented
        return (self.errors, self.source) == (other.errors, other.source)

    def __hash__(self) -> int:
        return hash((self.errors, self.source))


def _rebuild_invalid(errors: tuple[ConfigError, ...], source: str | None) -> InvalidConfigError:
    return InvalidConfigError(errors, source=source)


class StorageError(BrokerError):
    """The commit log, a session store or the retained store failed."""


class AuthError(BrokerError):
    """The password file or the ACLs cannot be loaded or used."""


class ClusterError(BrokerError):
    """etcd or a peer node cannot be reached, or the cluster state is inconsistent."""


# Storage errors (actorbroker.persistence). Each carries the MQTT 5 reason code
# a refused QoS>0 PUBLISH is answered with (PUBACK/PUBREC), as ``reason_code``.


class DiskFullError(StorageError):
    """No room to append: the file system is full (ENOSPC, EDQUOT) or the log
    reached storage.max_disk_bytes. QoS>0 publishes are refused with 0x97
    (Quota exceeded) until writing works again; the log stays consistent."""

    reason_code = 0x97


class StorageIOError(StorageError):
    """Any other failed write or fsync (EIO, EROFS, ...). QoS>0 publishes are
    refused with 0x80 (Unspecified error); the log stays consistent."""

    reason_code = 0x80


class CorruptRecordError(StorageError):
    """A frame passed its CRC but its record body cannot be decoded (a bug in
    the writer, or damage the CRC missed)."""

    reason_code = 0x80


class LogLockedError(StorageError):
    """Another process holds the commit log directory open for writing."""

    reason_code = 0x80
