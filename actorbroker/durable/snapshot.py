"""Durability layer: signed dill snapshots of the durable state, for a fast restart. Stdlib and dill only.

A snapshot is the folded state at a log offset, pickled with dill, so that
a restart loads it and replays the log from that offset instead of from
the latest checkpoint. Unpickling runs code, so a snapshot is loaded only
when its HMAC-SHA256 verifies with the node's key, *before* ``dill.loads``
sees a byte; one from another version, with a bad signature, or cut short
is ignored with a warning and the log is replayed instead. The log stays
the truth: deleting the snapshot (or the key) only costs start-up time.

Files in the data directory:

* ``snapshot.key``: 32 random bytes, created with mode 0600 (``O_EXCL``); a
  key file that others may read or write is refused (no snapshot is then
  written or loaded);
* ``snapshot.dill``: written to a temporary file, fsynced and renamed:

  ========  ===========================================================
  bytes     field
  ========  ===========================================================
  0-3       magic ``ABSN``
  4-5       format, u16 (1)
  6-13      log offset the state was folded up to, u64
  14-15     length n of the version string, u16
  16-       version string (UTF-8): actorbroker's and the state's
  ..+32     HMAC-SHA256 over every byte before it and the payload
  ..        payload: ``dill.dumps(state)``
  ========  ===========================================================
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import secrets
import stat
import struct
from pathlib import Path
from typing import Any

import dill  # type: ignore[import-untyped]

__all__ = ["KEY_NAME", "SNAPSHOT_NAME", "SnapshotKeyError", "load_key", "read_snapshot",
           "write_snapshot"]

KEY_NAME = "snapshot.key"
SNAPSHOT_NAME = "snapshot.dill"
_MAGIC = b"ABSN"
_FORMAT = 1
_HEAD = struct.Struct(">4sHQH")
_KEY_BYTES = 32
_log = logging.getLogger("actorbroker.persistence")


class SnapshotKeyError(OSError):
    """The key file cannot be made or is not private (mode 0600) to this user."""


def load_key(data_dir: str | os.PathLike[str]) -> bytes:
    """The node's snapshot key; created (mode 0600) when missing. SnapshotKeyError if unsafe."""
    path = Path(data_dir) / KEY_NAME
    Path(data_dir).mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    else:
        try:
            os.write(fd, secrets.token_bytes(_KEY_BYTES))
            os.fsync(fd)
        finally:
            os.close(fd)
    info = path.stat()
    if stat.S_IMODE(info.st_mode) & 0o077 or info.st_uid != os.geteuid():
        raise SnapshotKeyError(f"{path} must be owned by this user with mode 0600 "
                               f"(it is {stat.S_IMODE(info.st_mode):04o}): snapshots are off")
    key = path.read_bytes()
    if len(key) < _KEY_BYTES:
        raise SnapshotKeyError(f"{path} holds {len(key)} bytes, not {_KEY_BYTES}")
    return key


def _sign(key: bytes, head: bytes, payload: bytes) -> bytes:
    mac = hmac.new(key, head, hashlib.sha256)
    mac.update(payload)
    return mac.digest()


def write_snapshot(data_dir: str | os.PathLike[str], key: bytes, state: Any, offset: int,
                   version: str) -> Path:
    """Pickle ``state`` (folded up to ``offset``) and write it signed; return the path."""
    directory = Path(data_dir)
    payload = dill.dumps(state, protocol=dill.HIGHEST_PROTOCOL)
    text = version.encode()
    head = _HEAD.pack(_MAGIC, _FORMAT, offset, len(text)) + text
    path = directory / SNAPSHOT_NAME
    temp = directory / (SNAPSHOT_NAME + ".tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        view = memoryview(head + _sign(key, head, payload) + payload)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temp, path)
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return path


def read_snapshot(data_dir: str | os.PathLike[str], key: bytes, version: str
                  ) -> tuple[Any, int] | None:
    """(state, offset) of a valid snapshot; None (with a warning) for a missing or bad one.

    The signature is checked before anything is unpickled.
    """
    path = Path(data_dir) / SNAPSHOT_NAME
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        _log.warning("snapshot %s unreadable (%s): replaying the log instead", path, exc)
        return None
    problem = _check(data, key, version)
    if isinstance(problem, str):
        _log.warning("snapshot %s ignored: %s; replaying the log instead", path, problem)
        return None
    offset, start = problem
    try:
        return dill.loads(memoryview(data)[start:]), offset
    except Exception as exc:  # signed by us, yet unreadable: a bug, not an attack
        _log.warning("snapshot %s could not be loaded (%r): replaying the log instead", path, exc)
        return None


def _check(data: bytes, key: bytes, version: str) -> str | tuple[int, int]:
    """(offset, payload start) when ``data`` is a snapshot signed with ``key`` for ``version``."""
    if len(data) < _HEAD.size:
        return "shorter than its header"
    magic, fmt, offset, length = _HEAD.unpack_from(data, 0)
    if magic != _MAGIC or fmt != _FORMAT:
        return f"not a snapshot of format {_FORMAT}"
    text_end = _HEAD.size + length
    mac_end = text_end + hashlib.sha256().digest_size
    if len(data) < mac_end:
        return "cut short"
    signature = data[text_end:mac_end]
    expected = _sign(key, data[:text_end], data[mac_end:])
    if not hmac.compare_digest(signature, expected):
        return "bad signature (not written with this node's key, or altered)"
    found = data[_HEAD.size:text_end].decode("utf-8", "replace")
    if found != version:
        return f"written by {found!r}, this is {version!r}"
    return offset, mac_end
