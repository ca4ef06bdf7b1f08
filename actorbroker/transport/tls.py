"""Transport layer: the TLS context of a listener, its reload, and who a client certificate names. Imports stdlib (ssl, asyncio) only.

    certificates = Certificates(TlsOptions.of(listener_config), name="tls 0.0.0.0:8883")
    loop.connect_accepted_socket(factory, sock, ssl=certificates.context)
    certificates.reload()      # SIGHUP; also what the listener's poll calls on a change

:class:`Certificates` holds the ``ssl.SSLContext`` that new handshakes use.
Connections keep the context they were made with (their ``SSLObject``
holds it), so replacing it drops nobody: :meth:`Certificates.reload` builds
a whole new context from the files and swaps it in only if every file
loaded; a failure keeps the old one and says why in one log line.
:meth:`Certificates.changed` tells the listener's poll whether any file's
(mtime, size, inode) moved since the last load, so a renewal written by
certbot or an operator is picked up without a signal.

:func:`certificate_identity` is ``use_identity_as_username``: the Common
Name of a verified client certificate, or its first subjectAltName when it
has no CN. :func:`peek_first_byte` lets a TLS listener see whether a client
starts a TLS handshake before handing the socket to asyncio's TLS.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import ssl
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["Certificates", "TlsOptions", "certificate_identity", "load_context",
           "peek_first_byte", "tls_problem"]

log = logging.getLogger("actorbroker.transport")

_VERSIONS = {"tlsv1.2": ssl.TLSVersion.TLSv1_2, "tlsv1.3": ssl.TLSVersion.TLSv1_3}
#: The subjectAltName kinds that can stand for a user, in the order they are tried.
_SAN_KINDS = ("DNS", "email", "URI", "IP Address")


class TlsListenerLike(Protocol):
    """The TLS options of ``ListenerConfig``."""

    @property
    def certfile(self) -> str: ...

    @property
    def keyfile(self) -> str: ...

    @property
    def cafile(self) -> str: ...

    @property
    def require_certificate(self) -> bool: ...

    @property
    def use_identity_as_username(self) -> bool: ...

    @property
    def crlfile(self) -> str: ...

    @property
    def tls_version(self) -> str: ...

    @property
    def ciphers(self) -> str: ...


@dataclass(frozen=True, slots=True)
class TlsOptions:
    """What a TLS listener's context is made of (paths are read at each load)."""

    certfile: str
    keyfile: str
    cafile: str = ""
    require_certificate: bool = False
    use_identity_as_username: bool = False
    crlfile: str = ""
    tls_version: str = "tlsv1.2"
    ciphers: str = ""

    @classmethod
    def of(cls, listener: TlsListenerLike) -> TlsOptions:
        """The TLS options of a ``ListenerConfig``."""
        return cls(listener.certfile, listener.keyfile, listener.cafile,
                   listener.require_certificate, listener.use_identity_as_username,
                   listener.crlfile, listener.tls_version, listener.ciphers)

    @property
    def files(self) -> tuple[str, ...]:
        """The files a load reads."""
        return tuple(f for f in (self.certfile, self.keyfile, self.cafile, self.crlfile) if f)


def load_context(options: TlsOptions) -> ssl.SSLContext:
    """A server context from ``options``' files; raises ``OSError``/``ssl.SSLError``/``ValueError``.

    Starts from ``ssl.create_default_context(Purpose.CLIENT_AUTH)`` (Python's
    secure ciphers, no compression, no renegotiation) and raises the floor
    to ``tls_version``.
    """
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = _VERSIONS[options.tls_version]
    context.load_cert_chain(options.certfile, options.keyfile)
    if options.ciphers:
        context.set_ciphers(options.ciphers)
    if options.require_certificate:
        context.load_verify_locations(cafile=options.cafile)
        context.verify_mode = ssl.CERT_REQUIRED
        if options.crlfile:
            context.load_verify_locations(cafile=options.crlfile)
            context.verify_flags |= ssl.VERIFY_CRL_CHECK_LEAF
    else:
        # As Mosquitto: without require_certificate, clients are not asked for one.
        context.verify_mode = ssl.CERT_NONE
    return context


def tls_problem(options: TlsOptions) -> str | None:
    """Why ``options``' files make no TLS context (file and reason), or None when they do."""
    try:
        _load_checked(options)
    except (OSError, ssl.SSLError, ValueError) as exc:
        return _why(exc)
    return None


def _load_checked(options: TlsOptions) -> ssl.SSLContext:
    """:func:`load_context`, after opening each file: ssl's own errors do not say which."""
    for path in options.files:
        with open(path, "rb"):
            pass
    return load_context(options)


def _stamp(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None  # a file being replaced: the next poll sees it again
    return (st.st_mtime_ns, st.st_size, st.st_ino)


class Certificates:
    """The current TLS context of one listener, reloaded from its files (loop thread only)."""

    def __init__(self, options: TlsOptions, name: str) -> None:
        self.options = options
        self.name = name
        self._stamps = self._read_stamps()
        #: What new handshakes use; raises at construction when the files cannot be loaded.
        self.context: ssl.SSLContext = _load_checked(options)

    def _read_stamps(self) -> tuple[tuple[int, int, int] | None, ...]:
        return tuple(_stamp(path) for path in self.options.files)

    def changed(self) -> bool:
        """Whether a file changed since the last load (or load attempt)."""
        return self._read_stamps() != self._stamps

    def reload(self) -> bool:
        """Load the files anew; swap the context in if that worked, else keep the old one.

        Connections already open keep theirs. Returns whether the new one is in use.
        """
        self._stamps = self._read_stamps()  # a failure is not retried until a file changes again
        try:
            context = _load_checked(self.options)
        except (OSError, ssl.SSLError, ValueError) as exc:
            log.error("listener %s: TLS reload failed, keeping the previous certificates: %s",
                      self.name, _why(exc))
            return False
        self.context = context
        log.info("listener %s: TLS certificates reloaded from %s", self.name,
                 ", ".join(self.options.files))
        return True


def _why(exc: BaseException) -> str:
    if isinstance(exc, OSError) and not isinstance(exc, ssl.SSLError) and exc.filename:
        return f"{exc.filename}: {exc.strerror or exc}"
    return str(exc) or type(exc).__name__


def certificate_identity(peercert: Any) -> str | None:
    """The user a verified client certificate names: its CN, else its first subjectAltName.

    ``peercert`` is ``SSLObject.getpeercert()`` (a dict; empty or None without
    a verified certificate).
    """
    if not peercert:
        return None
    for rdn in peercert.get("subject", ()):
        for key, value in rdn:
            if key == "commonName" and value:
                return str(value)
    names = peercert.get("subjectAltName", ())
    for kind in _SAN_KINDS:
        for key, value in names:
            if key == kind and value:
                return str(value)
    return None


async def peek_first_byte(loop: asyncio.AbstractEventLoop, sock: socket.socket,
                          timeout: float) -> bytes | None:
    """The first byte the peer sends, left in the socket (``MSG_PEEK``).

    ``b""`` if the peer closed or reset first; None if nothing came within ``timeout``.
    """
    ready: asyncio.Future[None] = loop.create_future()
    fd = sock.fileno()
    loop.add_reader(fd, _settle, ready)
    try:
        await asyncio.wait_for(ready, timeout)
    except TimeoutError:
        return None
    finally:
        loop.remove_reader(fd)  # before the socket is closed or handed on
    try:
        return sock.recv(1, socket.MSG_PEEK)
    except OSError:
        return b""


def _settle(ready: asyncio.Future[None]) -> None:
    if not ready.done():
        ready.set_result(None)
