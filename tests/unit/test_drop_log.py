"""DropLog: rate-limited WARNING lines whose counts add up to every drop, the held-back ones flushed at stop."""

from __future__ import annotations

import logging
import re

import pytest

from actorbroker.metrics import DropLog


def _counts(caplog: pytest.LogCaptureFixture, reason: str) -> int:
    return sum(int(m.group(1)) for r in caplog.records
               if (m := re.match(rf"dropped (\d+) message\(s\) \({reason}\)", r.getMessage())))


def test_the_lines_add_up_to_the_drops_once_flushed(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    drops = DropLog(interval=10.0, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, "actorbroker.drops"):
        drops.record("queue_full", 3, "c", "t")   # logged at once
        drops.record("queue_full", 5, "c", "t")   # held back: within the interval
        drops.record("expired", 2, "d", "u")      # another reason has its own interval
        now[0] = 11.0
        drops.record("queue_full", 1, "c", "t")   # logged with what was held: 6
        drops.record("queue_full", 4, "c", "t")   # held back again
        assert _counts(caplog, "queue_full") == 9
        drops.flush()
        assert _counts(caplog, "queue_full") == 13
        assert _counts(caplog, "expired") == 2
        drops.flush()  # nothing held any more: no line
    assert len(caplog.records) == 4
