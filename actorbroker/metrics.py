"""Metrics layer: the broker's counters, its drop log and load averages. Imports the stdlib only.

One :class:`BrokerMetrics` per node. Its fields are plain ints written on the
loop thread only (session, topic and registry actors all run there), so they
need no lock; the ``$SYS`` actor reads them on the same thread. The
transport keeps its own counters (bytes, packets, sockets) in
``actorbroker.transport.TransportStats``; ``$SYS`` reads both.

Nothing is dropped silently: every discarded delivery goes through
:meth:`BrokerMetrics.drop`, which counts it under its reason (the ``$SYS``
topic ``$SYS/broker/messages/dropped/<reason>``) and logs it, at most one
line per reason every ``interval`` seconds with the count in between
(:class:`DropLog`), so a flood costs a line, not thousands.

Drop reasons (the session core's :class:`~actorbroker.session.DropReason`
values plus the broker's own):

=====================  ========================================================
``queue_full``         the client's queue was at max_queued_messages/bytes (also
                       while its connection is backed up: QoS 0 waits there too)
``offline_qos0``       QoS 0 for an offline client (queue_qos0_messages off)
``expired``            an MQTT 5 message expiry ran out while queued
``session_ended``      the session state was discarded with the message unacked
``session_unavailable``  the subscriber's session actor was not running (crash)
``session_crashed``    held by a session actor that crashed, and not in the commit log
``topic_unavailable``  the topic actor could not be started
``retained_limit``     max_retained_messages reached: delivered, not retained
``too_large``          larger than the MQTT 5 client's Maximum Packet Size
``shared_unavailable`` no member of a shared subscription group could take it
``unreadable``         queued as a log offset whose record was lost (a quarantined
                       or deleted segment) before the session fetched it
``not_authorized``     queued for an offline durable session, whose client may no
                       longer read it when it comes back (the ACL was reloaded)
=====================  ========================================================
"""

from __future__ import annotations

import bisect
import logging
import math
import time
from collections.abc import Callable, Sequence

__all__ = ["LATENCY_BUCKETS", "BrokerMetrics", "DropLog", "Histogram", "LoadAverage"]

#: Upper bounds (seconds) of latency histograms: 50 us (an fdatasync on a quiet
#: SSD) to 2.5 s (a loop or disk in trouble).
LATENCY_BUCKETS = (0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                   0.05, 0.1, 0.25, 0.5, 1.0, 2.5)

log = logging.getLogger("actorbroker.drops")


class DropLog:
    """Logs drops by reason, at most one WARNING line per reason per ``interval`` seconds."""

    __slots__ = ("_clock", "_interval", "_next", "_since", "_logger")

    def __init__(self, interval: float = 10.0, clock: Callable[[], float] = time.monotonic,
                 logger: logging.Logger = log) -> None:
        self._clock = clock
        self._interval = interval
        self._next: dict[str, float] = {}
        self._since: dict[str, int] = {}
        self._logger = logger

    def record(self, reason: str, count: int, client_id: str | None, topic: str | None) -> None:
        """Note ``count`` drops for ``reason``; log now if this reason has been quiet long enough."""
        pending = self._since.get(reason, 0) + count
        now = self._clock()
        if now < self._next.get(reason, -math.inf):
            self._since[reason] = pending
            return
        self._since[reason] = 0
        self._next[reason] = now + self._interval
        self._logger.warning(
            "dropped %d message(s) (%s); latest: client %r, topic %r", pending, reason,
            client_id, topic,
        )

    def flush(self) -> None:
        """Log the drops still held back by the rate limit (at stop: the last lines must add
        up to what was dropped)."""
        for reason, pending in sorted(self._since.items()):
            if pending:
                self._logger.warning("dropped %d message(s) (%s) since the last report",
                                     pending, reason)
        self._since.clear()


class Histogram:
    """Counts of observed values per bucket, their sum and count (Prometheus' histogram).

    One thread writes (the storage actor's sync thread, or the loop); others
    may read at any time: each field is one int or float, so a reader can at
    worst see an observation in ``counts`` and not yet in ``total``.
    """

    __slots__ = ("bounds", "counts", "count", "total")

    def __init__(self, bounds: Sequence[float] = LATENCY_BUCKETS) -> None:
        self.bounds = tuple(bounds)
        self.counts = [0] * (len(self.bounds) + 1)  # the last one: above every bound
        self.count = 0
        self.total = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.count += 1
        self.total += value

    def cumulative(self) -> list[tuple[float, int]]:
        """(upper bound, observations at or below it), ending with (inf, count)."""
        out, running = [], 0
        for bound, count in zip((*self.bounds, math.inf), self.counts):
            running += count
            out.append((bound, running))
        return out

    def quantile(self, q: float) -> float:
        """An upper bound of the ``q`` quantile (the bound of its bucket); 0.0 when empty."""
        if not self.count:
            return 0.0
        rank = q * self.count
        for bound, running in self.cumulative():
            if running >= rank:
                return bound if bound != math.inf else self.bounds[-1]
        return self.bounds[-1]


class BrokerMetrics:
    """Counters and gauges of one node (loop thread only; plain ints)."""

    __slots__ = (
        "clients_connected",
        "clients_maximum",
        "connects",
        "disconnects",
        "publish_received",
        "publish_sent",
        "received_qos",
        "sent_qos",
        "subscriptions",
        "retained",
        "topics",
        "subscribers_stuck",
        "dropped",
        "dropped_total",
        "drop_log",
        "sync_latency",
        "loop_lag",
    )

    def __init__(self, drop_log: DropLog | None = None) -> None:
        self.clients_connected = 0   # sessions with a connection attached (a gauge)
        self.clients_maximum = 0     # the most ever connected at once
        self.connects = 0            # CONNECTs accepted
        self.disconnects = 0         # attached connections that ended
        self.publish_received = 0    # PUBLISH packets accepted from clients (retries excluded)
        self.publish_sent = 0        # PUBLISH packets written to clients (resends included)
        self.received_qos = [0, 0, 0]  # publish_received by QoS
        self.sent_qos = [0, 0, 0]      # publish_sent by QoS
        self.subscriptions = 0       # (filter, client) pairs in the registry (a gauge)
        self.retained = 0            # retained messages held (a gauge)
        self.topics = 0              # live topic actors (a gauge)
        self.subscribers_stuck = 0   # subscribers that held publishers past backpressure_timeout
        self.dropped: dict[str, int] = {}
        self.dropped_total = 0
        self.drop_log = drop_log or DropLog()
        #: Seconds per commit log group sync (fdatasync in mode fsync), on the storage threads.
        self.sync_latency = Histogram()
        #: How late the loop ran a timer (actorbroker.ops.sampler): time it spent busy.
        self.loop_lag = Histogram()

    def connected(self) -> None:
        """A connection attached to a session."""
        self.connects += 1
        self.clients_connected += 1
        if self.clients_connected > self.clients_maximum:
            self.clients_maximum = self.clients_connected

    def disconnected(self) -> None:
        """An attached connection ended (closed or taken over)."""
        self.disconnects += 1
        self.clients_connected -= 1

    def drop(self, reason: str, count: int = 1, *, client_id: str | None = None,
             topic: str | None = None) -> None:
        """Count ``count`` dropped deliveries for ``reason`` and log them (rate-limited)."""
        self.dropped[reason] = self.dropped.get(reason, 0) + count
        self.dropped_total += count
        self.drop_log.record(reason, count, client_id, topic)


class LoadAverage:
    """Per-minute rates of a counter, averaged over 1, 5 and 15 minutes, as Mosquitto's load.

    :meth:`update` is called every ``interval`` seconds with the counter's
    current value; each average decays as ``exp(-interval / window)``, the
    way Unix load averages (and Mosquitto's ``$SYS/broker/load/...``) do.
    """

    WINDOWS = ((1, "1min"), (5, "5min"), (15, "15min"))

    __slots__ = ("_last", "values")

    def __init__(self) -> None:
        self._last: int | None = None
        self.values: dict[str, float] = {name: 0.0 for _, name in self.WINDOWS}

    def update(self, total: int, interval: float) -> dict[str, float]:
        """Fold in the counter's ``total`` after ``interval`` seconds; return the averages."""
        if self._last is not None and interval > 0:
            rate = (total - self._last) * 60.0 / interval
            for minutes, name in self.WINDOWS:
                decay = math.exp(-interval / (minutes * 60.0))
                self.values[name] = self.values[name] * decay + rate * (1.0 - decay)
        self._last = total
        return dict(self.values)

