"""Configuration layer: checks of one value, and of a whole section. Imports the stdlib and actorbroker.errors only.

The value checks are the ``extra`` of an :class:`~.options.Option`: each takes a
value of the right type and returns why it is refused, or None.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
import socket
from typing import Any

from actorbroker.errors import ConfigError, InvalidConfigError

from .options import option_of

__all__ = ["address", "check_section", "host_name", "node_name", "not_empty", "strings"]

_NODE_NAME = re.compile(r"[A-Za-z0-9_.-]+")
_HOST_NAME = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)(\.(?!-)[A-Za-z0-9-]{1,63}(?<!-))*\.?")


def node_name(value: str) -> str | None:
    """Node names appear in topics and file names."""
    if _NODE_NAME.fullmatch(value):
        return None
    return "must be made of letters, digits, '_', '.' and '-' (it names topics and files)"


def address(value: str) -> str | None:
    """An IP address, or a name that DNS could hold."""
    try:
        ipaddress.ip_address(value)
    except ValueError:
        if _HOST_NAME.fullmatch(value) and len(value) <= 253:
            return None
        return f'must be an IP address or a host name, not "{value}"'
    return None


def not_empty(value: str) -> str | None:
    """A path or name that must be given."""
    return None if value else "must not be empty"


def strings(value: list[Any], what: str) -> str | None:
    """Why a list option of ``what`` (client id patterns, user names...) is refused: an
    item that is not a non-empty string; None if none is."""
    for item in value:
        if not isinstance(item, str) or not item:
            return f"must hold {what} (non-empty strings), not {item!r}"
    return None


def host_name() -> str:
    """The host name, made a valid node name."""
    return re.sub(r"[^A-Za-z0-9_.-]", "-", socket.gethostname()) or "node"


def check_section(section: Any, name: str) -> None:
    """Refuse a section built in code with a value that a file could not hold.

    An integer given for a float option is stored as a float, as from a file.
    A default needs no check (``data_dir``'s None is not a value a file can hold).
    """
    errors = []
    for item in dataclasses.fields(section):
        label = f"{name}.{item.name}"
        if item.default is not dataclasses.MISSING and getattr(section, item.name) is item.default:
            continue
        value, message = option_of(item).check(getattr(section, item.name), label)
        if message is not None:
            errors.append(ConfigError(message, key=label))
        elif type(value) is not type(getattr(section, item.name)):
            object.__setattr__(section, item.name, value)
    if errors:
        raise InvalidConfigError(errors)
