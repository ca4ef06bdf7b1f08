"""Configuration layer: the rules that tie a listener's options together. Imports the stdlib and actorbroker.errors only.

Each option of ``[[listeners]]`` is checked by itself in :mod:`.schema`;
what depends on the listener's ``type`` or on another option (a TLS file on
a plain listener, ``require_certificate`` without a ``cafile``) is checked
here, once the table is built, and reported against the option that is
out of place, so that the loader can point at its line.
"""

from __future__ import annotations

from typing import Any

from actorbroker.errors import ConfigError, InvalidConfigError

__all__ = ["TLS_OPTIONS", "check_listener", "listener_problems", "websocket_path"]

#: Options that only TLS listeners (tls, wss) read, with their "not set" values.
TLS_OPTIONS = {"certfile": "", "keyfile": "", "cafile": "", "require_certificate": False,
               "use_identity_as_username": False, "crlfile": "", "tls_version": "tlsv1.2",
               "ciphers": ""}
_TLS_TYPES = ("tls", "wss")
_WEBSOCKET_TYPES = ("ws", "wss")


def websocket_path(value: str) -> str | None:
    """An HTTP path for the WebSocket endpoint, or empty for any."""
    if value and (not value.startswith("/") or any(c.isspace() or c in "?#" for c in value)):
        return f'must start with "/" and hold no space, "?" or "#", not "{value}"'
    return None


def listener_problems(listener: Any) -> list[tuple[str, str]]:
    """(option, why) for every option that does not fit the listener's type or the others.

    ``why`` reads after the option's name: ``listeners[0].cafile is for tls ...``.
    """
    kind = listener.type
    problems = []
    if kind not in _TLS_TYPES:
        for name, unset in TLS_OPTIONS.items():
            if getattr(listener, name) != unset:
                problems.append((name, f'is for tls and wss listeners; this one is "{kind}"'))
    else:
        missing = [name for name in ("certfile", "keyfile") if not getattr(listener, name)]
        if missing:
            too = ", and keyfile too" if len(missing) == 2 else ""
            problems.append((missing[0], (f'must be set{too}: a "{kind}" listener needs '
                                          "certfile and keyfile")))
        if listener.require_certificate and not listener.cafile:
            problems.append(("require_certificate", ("needs cafile (the authorities client "
                                                     "certificates must chain to)")))
        for name in ("use_identity_as_username", "crlfile"):
            if getattr(listener, name) and not listener.require_certificate:
                problems.append((name, "needs require_certificate = true"))
    if kind not in _WEBSOCKET_TYPES and listener.path != "/mqtt":
        problems.append(("path", f'is for ws and wss listeners; this one is "{kind}"'))
    return problems


def check_listener(listener: Any) -> None:
    """Raise :class:`InvalidConfigError` for :func:`listener_problems`, keyed ``listeners.OPTION``."""
    problems = listener_problems(listener)
    if problems:
        raise InvalidConfigError([ConfigError(f"listeners.{name} {why}", key=f"listeners.{name}")
                                  for name, why in problems])
