"""Top layer: what the broker checks and binds before it starts its tree, and how a failed start reads. May import everything.

An operator whose broker does not start wants one line: what failed, on
which address or path, and the likely fix, e.g.::

    cannot listen on 127.0.0.1:1883: address already in use (another broker running? set --port)

and nothing left on disk by the attempt. :func:`preflight` therefore runs
before any actor: it checks that the data directory can be used (not locked
by another broker, writable, or creatable) without creating it, that every
TLS listener's certificate, key, CA and CRL files load, and binds
every listener's sockets, which the listeners then take over, so a port in
use fails the start before the commit log is opened. A part of the tree that
still fails to start (the log cannot be read, say) is summed up by
:func:`root_cause`, and :meth:`Preflight.failed` removes the data directory
if this start created it. ``serve`` holds the tracebacks the actors log
meanwhile (:func:`held_tracebacks`) and shows them at ``--log-level debug``.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from actorbroker.config import Config
from actorbroker.errors import BrokerError
from actorbroker.persistence.log import LOCK_NAME
from actorbroker.transport import TlsOptions, bind_listener, tls_problem
from supervisors import Crash, ExitReason

__all__ = ["BrokerStartError", "Preflight", "held_tracebacks", "preflight", "root_cause",
           "tls_file_problems"]

#: Why a bind failed, in words, and what usually fixes it.
_LISTEN_HINTS = {
    errno.EADDRINUSE: ("address already in use", "another broker running? set --port"),
    errno.EADDRNOTAVAIL: ("address not available", "not an address of this host? set --bind"),
    errno.EACCES: ("permission denied", "ports below 1024 need privileges; set --port"),
}


class BrokerStartError(BrokerError):
    """The broker could not start; the message is one line for the operator."""


@dataclass
class Preflight:
    """What :func:`preflight` prepared: bound sockets per listener, the directory it may create."""

    sockets: list[list[socket.socket] | None]
    #: The topmost directory of the data directory that does not exist yet.
    created: Path | None = None

    def take(self, index: int) -> list[socket.socket] | None:
        """Listener ``index``'s sockets, once; None afterwards (a restarted listener binds anew)."""
        sockets, self.sockets[index] = self.sockets[index], None
        return sockets

    def failed(self) -> None:
        """Undo what a failed start left: sockets no listener took, a data directory it made."""
        for index, sockets in enumerate(self.sockets):
            for sock in sockets or ():
                sock.close()
            self.sockets[index] = None
        if self.created is not None:
            shutil.rmtree(self.created, ignore_errors=True)


async def preflight(config: Config) -> Preflight:
    """Check the data directory and every TLS listener's files, and bind every listener.

    Raises :class:`BrokerStartError` with the one line to show when either cannot be used.
    """
    data_dir = config.node.data_dir
    created = None
    if data_dir is not None and config.storage.durability != "memory":
        check_data_dir(data_dir)
        created = _missing_top(Path(data_dir))
    bound: list[list[socket.socket] | None] = []
    prepared = Preflight(bound, created)
    problems = tls_file_problems(config)
    if problems:
        raise BrokerStartError(problems[0])
    for listener in config.listeners:
        try:
            bound.append(await bind_listener(listener.bind, listener.port))
        except OSError as exc:
            prepared.failed()
            raise BrokerStartError(listen_failure(listener.bind, listener.port, exc)) from exc
    return prepared


def tls_file_problems(config: Config) -> list[str]:
    """One line per tls/wss listener whose files make no TLS context (``check-config`` too)."""
    problems = []
    for listener in config.listeners:
        if listener.type not in ("tls", "wss"):
            continue
        why = tls_problem(TlsOptions.of(listener))
        if why is not None:
            problems.append(f"cannot load the TLS files of listener {listener.type} "
                            f"{listener.bind}:{listener.port}: {why} (check certfile, "
                            "keyfile, cafile, crlfile)")
    return problems


def listen_failure(host: str, port: int, exc: OSError) -> str:
    """``cannot listen on HOST:PORT: what (fix)``."""
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if isinstance(exc, socket.gaierror):
        reason, hint = "the name does not resolve", "set --bind"
    elif exc.errno in _LISTEN_HINTS:
        reason, hint = _LISTEN_HINTS[exc.errno]
        if exc.errno == errno.EACCES and port >= 1024:
            hint = "set --port"
    else:
        reason, hint = (os.strerror(exc.errno).lower() if exc.errno else str(exc)), "set --bind"
    return f"cannot listen on {where}: {reason} ({hint})"


def check_data_dir(path: str) -> None:
    """Raise :class:`BrokerStartError` unless the broker can keep its state in ``path``.

    Creates nothing: a missing directory is checked through its nearest
    existing parent, where it would be made.
    """
    directory = Path(path)
    nearest = directory
    while not nearest.exists() and nearest != nearest.parent:
        nearest = nearest.parent
    if not nearest.is_dir():
        _data_dir_failure(path, f"{nearest} is not a directory", "set --data-dir")
    lock = directory / "log" / LOCK_NAME
    if lock.exists():
        _check_unlocked(path, lock)
    for place in (nearest, directory / "log"):
        if place.is_dir():
            try:  # an unnamed file: nothing is left behind
                tempfile.TemporaryFile(dir=place).close()
            except OSError as exc:
                _data_dir_failure(path, os.strerror(exc.errno or errno.EIO).lower(),
                                  "set --data-dir to a writable directory")


def _check_unlocked(path: str, lock: Path) -> None:
    try:
        fd = os.open(lock, os.O_RDONLY)
    except OSError as exc:
        _data_dir_failure(path, f"cannot open {lock}: {os.strerror(exc.errno or errno.EIO)}",
                          "set --data-dir")
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        _data_dir_failure(path, "it is open in another process",
                          "another broker running? stop it or set --data-dir")
    finally:
        os.close(fd)  # releases the lock just taken, if it was


def _data_dir_failure(path: str, reason: str, hint: str) -> None:
    raise BrokerStartError(f"cannot use the data directory {path}: {reason} ({hint})")


def _missing_top(directory: Path) -> Path | None:
    """The outermost directory of ``directory`` that does not exist, if any."""
    top = None
    while not directory.exists() and directory != directory.parent:
        top, directory = directory, directory.parent
    return top


def root_cause(reason: ExitReason) -> str:
    """What failed a start, through the supervisors' wrappers.

    Our own errors say what and where (``cannot open the commit log in
    data/log: ...``) and end the search; a foreign one is followed to its
    innermost cause, e.g. ``OSError(98, 'Address already in use')``.
    """
    error: BaseException | None = reason.exception if isinstance(reason, Crash) else None
    while error is not None:
        inner = getattr(error, "reason", None)
        if isinstance(inner, Crash):
            error = inner.exception
            continue
        if isinstance(error, BrokerError):
            return str(error)
        cause = error.__cause__
        if cause is None:
            return repr(error)
        error = cause
    return str(reason)


class _Hold(logging.Filter):
    """Keeps back every record that carries a traceback."""

    def __init__(self) -> None:
        super().__init__()
        self.held: list[logging.LogRecord] = []

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.exc_info:
            return True
        if not any(held is record for held in self.held):  # one filter on each handler
            self.held.append(record)
        return False


@contextmanager
def held_tracebacks(show: bool) -> Iterator[None]:
    """While the broker starts, hold the records with tracebacks (actor crashes).

    A start that fails is then one line of ours; one that succeeds logs what
    was held (a child that crashed and was restarted is worth knowing).
    With ``show`` (--log-level debug), nothing is held.
    """
    if show:
        yield
        return
    hold = _Hold()
    handlers = logging.getLogger().handlers
    for handler in handlers:
        handler.addFilter(hold)
    started = False
    try:
        yield
        started = True
    finally:
        for handler in handlers:
            handler.removeFilter(hold)
        if started:
            for record in hold.held:
                logging.getLogger(record.name).handle(record)
