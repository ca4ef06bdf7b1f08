"""JSON log lines and per-logger levels (actorbroker/logsetup.py)."""

from __future__ import annotations

import json
import logging
import sys

from actorbroker.logsetup import JsonFormatter, apply_levels


def _record(msg: str, *args: object, **extra: object) -> logging.LogRecord:
    record = logging.LogRecord("actorbroker.x", logging.WARNING, __file__, 1, msg, args, None)
    record.__dict__.update(extra)
    return record


def test_json_line_has_the_fields_and_stays_one_line() -> None:
    line = JsonFormatter().format(_record("a %s\nb", "\u00e9\"", client_id="c\n1",
                                          peer="127.0.0.1:5"))
    assert "\n" not in line
    assert json.loads(line) == {
        "time": json.loads(line)["time"], "level": "WARNING", "logger": "actorbroker.x",
        "message": "a \u00e9\"\nb", "client_id": "c\n1", "peer": "127.0.0.1:5"}
    assert "client_id" not in json.loads(JsonFormatter().format(_record("plain")))


def test_json_line_carries_the_traceback() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        record = _record("failed")
        record.exc_info = sys.exc_info()
    out = json.loads(JsonFormatter().format(record))
    assert out["message"] == "failed" and "ValueError: boom" in out["exception"]


def test_levels_applied_then_dropped_follow_the_parent_again() -> None:
    root = logging.getLogger()
    before = root.level
    try:
        assert apply_levels("warning", {"ls.a": "debug", "ls.b": "error"}) == ["ls.a", "ls.b"]
        assert logging.getLogger("ls.a.child").getEffectiveLevel() == logging.DEBUG
        assert logging.getLogger("ls.b").level == logging.ERROR
        apply_levels("info", {"ls.b": "debug"})
        assert logging.getLogger("ls.a").level == logging.NOTSET
        assert logging.getLogger("ls.a").getEffectiveLevel() == logging.INFO
        assert logging.getLogger("ls.b").level == logging.DEBUG
    finally:
        apply_levels(logging.getLevelName(before), {})
    assert logging.getLogger("ls.b").level == logging.NOTSET
