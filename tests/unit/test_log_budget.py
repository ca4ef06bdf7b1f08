"""LineBudget and shown(): per-client log lines bounded in number and in length."""

from __future__ import annotations

import logging
import re

import pytest

from actorbroker.codec import shown
from actorbroker.logbudget import LineBudget


def _logger(budget: LineBudget) -> logging.Logger:
    logger = logging.getLogger("actorbroker.test_log_budget")
    for old in list(logger.filters):
        logger.removeFilter(old)
    logger.addFilter(budget)
    return logger


def test_a_burst_then_the_rate_and_the_held_back_lines_counted(
        caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    budget = LineBudget(burst=3, rate=2.0, clock=lambda: now[0])
    logger = _logger(budget)
    with caplog.at_level(logging.INFO, logger.name):
        for i in range(10):
            logger.info("client %s connected", i)   # 3 pass, 7 held back
        logger.info("another kind %d", 1)           # its own bucket
        logger.error("errors always pass %d", 1)
        now[0] = 1.0                                # 2 tokens back
        logger.info("client %s connected", 10)
        logger.info("client %s connected", 11)
        logger.info("client %s connected", 12)      # held back
        budget.flush()
    messages = [r.getMessage() for r in caplog.records]
    assert messages[:3] == [f"client {i} connected" for i in range(3)]
    assert "another kind 1" in messages and "errors always pass 1" in messages
    assert "client 10 connected (7 similar line(s) not logged)" in messages
    assert "client 11 connected" in messages
    assert not any("client 12" in m for m in messages)
    flushed = [m for m in messages if "were not logged" in m]
    assert len(flushed) == 1 and flushed[0].startswith("1 log line(s) like 'client %s connected'")


def test_install_is_idempotent() -> None:
    names = ("actorbroker.test_install_a", "actorbroker.test_install_b")
    first = LineBudget.install(names)
    assert LineBudget.install(names) is first
    assert all(logging.getLogger(n).filters == [first] for n in names)


def test_shown_cuts_long_ids_and_tells_them_apart() -> None:
    assert shown("device-1") == "'device-1'"
    assert shown(None) == "None"
    assert shown("a\nb") == "'a\\nb'"  # no forged log lines
    one, two = shown("x" * 64 + "1" * 1000), shown("x" * 64 + "2" * 1000)
    assert re.fullmatch(r"'x{64}'…\+1000 #[0-9a-f]{8}", one)
    assert one != two and len(one) < 90
    assert shown("x" * 65) != shown("x" * 64)
