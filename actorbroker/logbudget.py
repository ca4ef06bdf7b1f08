"""Logging layer: a budget for the lines each client causes. Imports the stdlib only.

Every connection logs a line or two (connected, disconnected, refused, a
protocol error); a flood of connections would write them by the thousand
per second, and fill a disk at the attacker's pace. :class:`LineBudget` is a
:class:`logging.Filter` with a token bucket per kind of line (its format
string): ``burst`` lines pass at once, then ``rate`` a second; the lines held
back are counted, and the next line of that kind that passes says how many
(as :class:`actorbroker.metrics.DropLog` does for drops). Errors always pass.
:meth:`LineBudget.flush` reports what is still held back (at the broker's
stop). The broker installs one on the loggers of per-client lines
(``actorbroker.transport`` and ``actorbroker.session``): the code that logs
needs no change, and a filter is shared by every broker of the process, as
the loggers are.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable

__all__ = ["CLIENT_LOGGERS", "LineBudget"]

#: The loggers whose lines are caused by clients, one or more per connection.
CLIENT_LOGGERS = ("actorbroker.transport", "actorbroker.session")

log = logging.getLogger("actorbroker")


class LineBudget(logging.Filter):
    """Lets ``burst`` lines of a kind through at once, then ``rate`` a second."""

    def __init__(self, burst: int = 100, rate: float = 20.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.burst = burst
        self.rate = rate
        self._clock = clock
        self._lock = threading.Lock()  # loggers are called from any thread
        # format string -> [tokens, when they were counted, lines held back]
        self._buckets: dict[object, list[float]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR:
            return True
        now = self._clock()
        with self._lock:
            bucket = self._buckets.get(record.msg)
            if bucket is None:
                bucket = self._buckets[record.msg] = [float(self.burst), now, 0.0]
            tokens = min(float(self.burst), bucket[0] + (now - bucket[1]) * self.rate)
            bucket[1] = now
            if tokens < 1.0:
                bucket[0] = tokens
                bucket[2] += 1
                return False
            bucket[0] = tokens - 1.0
            held, bucket[2] = int(bucket[2]), 0.0
        if held:
            if isinstance(record.args, tuple):
                record.msg = f"{record.msg} (%d similar line(s) not logged)"
                record.args = (*record.args, held)
            else:
                record.msg = f"{record.msg} ({held} similar line(s) not logged)"
        return True

    def flush(self) -> None:
        """Log how many lines of each kind are held back, and forget them."""
        with self._lock:
            held = [(str(msg), int(b[2])) for msg, b in self._buckets.items() if b[2]]
            for bucket in self._buckets.values():
                bucket[2] = 0.0
        for msg, count in held:
            log.warning("%d log line(s) like %r were not logged (a flood of clients)", count, msg)

    @classmethod
    def install(cls, names: Iterable[str] = CLIENT_LOGGERS) -> LineBudget:
        """The budget on the loggers ``names``: the one already there, or a new one."""
        loggers = [logging.getLogger(name) for name in names]
        for logger in loggers:
            for existing in logger.filters:
                if isinstance(existing, cls):
                    budget = existing
                    break
            else:
                continue
            break
        else:
            budget = cls()
        for logger in loggers:
            if budget not in logger.filters:
                logger.addFilter(budget)
        return budget
