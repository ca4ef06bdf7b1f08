"""Configuration layer: the [log] section (level, format, levels per logger, client traces). Imports the stdlib and actorbroker.errors only.

Declared here rather than in :mod:`.schema` to keep that module small.
``levels`` and ``trace`` are the only options that hold a table and an
array: their ``extra`` checks look inside them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .checks import check_section, strings
from .options import option

__all__ = ["LEVELS", "LogConfig"]

#: The levels a logger may be given, least severe first.
LEVELS = ("debug", "info", "warning", "error")
_LOGGER_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def logger_levels(value: dict[str, Any]) -> str | None:
    """Each key a logger name, each value one of :data:`LEVELS`."""
    for name, level in value.items():
        if not _LOGGER_NAME.fullmatch(name):
            return f"has {name!r}, which is not a logger name such as actorbroker.session"
        if level not in LEVELS:
            return (f"gives {name} the level {level!r}: it must be "
                    + ", ".join(f'"{lv}"' for lv in LEVELS[:-1]) + f' or "{LEVELS[-1]}"')
    return None


def client_patterns(value: list[Any]) -> str | None:
    """Non-empty strings (fnmatch patterns of client ids)."""
    return strings(value, "client id patterns")


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Logging, on stderr. SIGHUP reads level and levels again from the file."""

    level: str = option(
        "info",
        choices=LEVELS,
        help="""Least severe level that is logged: "debug" logs the most,
        "error" only failures.""",
    )
    format: str = option(
        "text",
        choices=("text", "json"),
        help=""""text": one readable line per record (UTC time, level, logger,
        message). "json": one JSON object per line, for a log collector, with
        the keys time, level, logger and message, and client_id and peer when
        the line is about one client.""",
    )
    levels: dict[str, str] = option(
        kind=dict,
        default_factory=dict,
        values="a table of logger names to levels",
        extra=logger_levels,
        help="""Levels of single loggers, over level: {"actorbroker.session" =
        "debug"} shows one module's details without the others'. A logger
        covers those under it (actorbroker.transport covers
        actorbroker.transport.tls).""",
    )
    trace: list[str] = option(
        kind=list,
        default_factory=list,
        values="an array of client id patterns",
        extra=client_patterns,
        help="""Client ids whose every packet is logged, in and out, at info by
        the logger actorbroker.trace: packet type, packet id, topic, QoS and
        payload size, never the payload. Patterns as in a shell:
        ["sensor-*", "debug?"]. Decided when a client connects: a change
        applies to the next connections.""",
    )

    def __post_init__(self) -> None:
        check_section(self, "log")
