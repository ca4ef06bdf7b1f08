"""Logging layer: how the log is written: text or JSON lines on stderr, a level per logger. Imports the stdlib only.

``serve`` calls :func:`configure` once with ``[log]``: one handler on the
root logger, writing :class:`TextFormatter` lines (UTC time, level, logger,
message) or :class:`JsonFormatter` lines (one object per line, for a
collector). :func:`apply_levels` sets the root level and ``[log] levels``
at the start and again at each SIGHUP; a logger dropped from the table
goes back to following its parent.

A record about one client carries ``client_id`` and ``peer`` attributes
(``logger.info(..., extra={"client_id": ..., "peer": ...})``): the JSON
lines show them as keys of their own, so that a collector can select a
client's lines without parsing messages.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from collections.abc import Mapping

__all__ = ["JsonFormatter", "TextFormatter", "apply_levels", "configure"]

#: Attributes of a record that name the client it is about (see the module doc).
CLIENT_FIELDS = ("client_id", "peer")

_lock = threading.Lock()
#: Loggers given a level of their own by the last apply_levels (reset when dropped).
_levelled: set[str] = set()


def _utc(record: logging.LogRecord) -> str:
    """ISO 8601 in UTC with a Z, so that lines from hosts in other zones compare."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
    return f"{stamp}.{int(record.msecs):03d}Z"


class TextFormatter(logging.Formatter):
    """Readable lines: time (UTC), level, logger, message."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)-7s %(name)s: %(message)s")

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802
        return _utc(record)


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message (and client_id, peer,
    exception when the record has them). Newlines inside a message stay escaped,
    so that one record is always one line."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, object] = {
            "time": _utc(record), "level": record.levelname, "logger": record.name,
            "message": record.getMessage(),
        }
        for name in CLIENT_FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                out[name] = value if isinstance(value, (str, int)) else str(value)
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            out["exception"] = record.exc_text
        return json.dumps(out, ensure_ascii=False, default=str)


def configure(level: str, format: str = "text",  # noqa: A002 - the option's name
              levels: Mapping[str, str] | None = None) -> None:
    """Log to stderr in ``format`` ("text" or "json") at ``level``, ``levels`` per logger."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if format == "json" else TextFormatter())
    logging.basicConfig(handlers=[handler])
    apply_levels(level, levels or {})


def apply_levels(level: str, levels: Mapping[str, str]) -> list[str]:
    """Set the root logger to ``level`` and each logger of ``levels`` to its own; the
    loggers of the previous call that ``levels`` no longer names follow their parent
    again. Returns the loggers given a level (sorted)."""
    with _lock:
        logging.getLogger().setLevel(level.upper())
        for name in _levelled - set(levels):
            logging.getLogger(name).setLevel(logging.NOTSET)
        for name, own in levels.items():
            logging.getLogger(name).setLevel(own.upper())
        _levelled.clear()
        _levelled.update(levels)
        return sorted(levels)
