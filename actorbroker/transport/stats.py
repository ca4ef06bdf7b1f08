"""Transport layer: counters the listeners and connections update. Stdlib and the codec only.

The app gives each listener its own :class:`TransportStats` and reads the
node's totals through :class:`StatsTotal`; the transport only ever adds to its
fields, on the loop thread, so reading them there needs no lock. The app
publishes them under ``$SYS``. :class:`LogLimiter` keeps bursts of the same
complaint (a full listener, a process out of file descriptors) to one log
line per interval.
"""

from __future__ import annotations

import logging
from typing import Final

from actorbroker.codec import ConnectReturnCode, ReasonCode

__all__ = ["FIELDS", "LogLimiter", "StatsTotal", "TransportStats"]

#: Every counter, in the order :meth:`TransportStats.snapshot` lists them.
FIELDS: Final = (
    "connections_accepted",   # sockets handed to an MQTT connection
    "connections_refused",    # sockets closed at once: listener at max_connections, per-IP limits
    "overload_refusals",      # CONNECTs refused (0x89 / 0x03): memory or loop lag over its limit
    "connections_current",    # MQTT connections open now (a gauge)
    "bytes_in",
    "bytes_out",
    "packets_in",
    "packets_out",
    "writes",                 # transport writes: one per flush, however many packets
    "connect_timeouts",       # sockets closed for sending no CONNECT in time
    "keepalive_timeouts",     # connections closed at 1.5 x keepalive of silence
    "stalled_packets",        # connections closed: one packet took over connect_timeout to arrive
    "protocol_errors",        # connections closed for malformed or illegal packets
    "output_overflows",       # connections closed: output buffer beyond its hard limit
    "read_pauses",            # times reading paused because batches were outstanding
    "credits_expired",        # read credits given back by the time bound, not by their holders
    "accept_errors",          # failed accept() calls (EMFILE, ENFILE, ...): listener backed off
    "connects_refused",       # CONNECTs answered with a failure code (by code: refused_by)
)


class TransportStats:
    """Plain int counters (``__slots__``, no locking: loop thread only), and the
    refused CONNECTs by reason (``refused_by``: reason name -> count)."""

    __slots__ = (*FIELDS, "refused_by")

    connections_accepted: int
    connections_refused: int
    overload_refusals: int
    connections_current: int
    bytes_in: int
    bytes_out: int
    packets_in: int
    packets_out: int
    writes: int
    connect_timeouts: int
    keepalive_timeouts: int
    stalled_packets: int
    protocol_errors: int
    output_overflows: int
    read_pauses: int
    credits_expired: int
    accept_errors: int
    connects_refused: int

    def __init__(self) -> None:
        for name in FIELDS:
            setattr(self, name, 0)
        self.refused_by: dict[str, int] = {}

    def refused(self, code: int, v5: bool) -> None:
        """A CONNACK refused a CONNECT with ``code`` (an MQTT 5 reason code if ``v5``)."""
        self.connects_refused += 1
        try:
            name = (ReasonCode(code) if v5 else ConnectReturnCode(code)).name.lower()
        except ValueError:
            name = f"code_{code:#04x}"
        self.refused_by[name] = self.refused_by.get(name, 0) + 1

    def snapshot(self) -> dict[str, int]:
        """Every counter by name, e.g. for ``$SYS/broker/...`` topics."""
        return {name: getattr(self, name) for name in FIELDS}

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v}" for k, v in self.snapshot().items() if v)
        return f"TransportStats({fields})"


class StatsTotal:
    """The sum of several listeners' :class:`TransportStats` (one per listener, so that
    each listener's figures can be told apart), read like one of them."""

    __slots__ = ("parts",)

    def __init__(self, parts: list[TransportStats]) -> None:
        self.parts = parts

    def snapshot(self) -> dict[str, int]:
        """Every counter by name, summed over the listeners."""
        return {name: sum(getattr(part, name) for part in self.parts) for name in FIELDS}

    @property
    def refused_by(self) -> dict[str, int]:
        """Refused CONNECTs by reason, summed over the listeners."""
        out: dict[str, int] = {}
        for part in self.parts:
            for name, count in part.refused_by.items():
                out[name] = out.get(name, 0) + count
        return out

    def __getattr__(self, name: str) -> int:
        if name not in FIELDS:
            raise AttributeError(name)
        return sum(getattr(part, name) for part in self.parts)


class LogLimiter:
    """Logs a recurring warning at most once per ``interval`` seconds.

    The lines in between are counted and the count is reported with the
    next line that gets through, so a burst costs one line, not thousands.
    """

    __slots__ = ("_logger", "_interval", "_next", "_suppressed")

    def __init__(self, logger: logging.Logger, interval: float = 5.0) -> None:
        self._logger = logger
        self._interval = interval
        self._next = float("-inf")
        self._suppressed = 0

    def warning(self, now: float, msg: str, *args: object) -> None:
        """Log ``msg % args`` if the interval has passed since the last line, else count it."""
        if now < self._next:
            self._suppressed += 1
            return
        if self._suppressed:
            msg += " (%d similar suppressed)"
            args = (*args, self._suppressed)
            self._suppressed = 0
        self._next = now + self._interval
        self._logger.warning(msg, *args)
