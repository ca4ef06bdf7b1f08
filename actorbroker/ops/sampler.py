"""Ops layer: the loop-lag probe and per-second rates, sampled on the broker's loop. Stdlib and actors only.

**Loop lag.** A timer armed for ``interval`` seconds runs late by as long as
the loop was busy with other callbacks: that delay is observed into
``BrokerMetrics.loop_lag`` (a histogram). It costs one timer every 250 ms.

**Rates.** Once a second the sampler takes the node's counters
(:func:`actorbroker.actors.figures.counters`) and keeps their per-second
change, for ``/api/v1/stats`` and ``ctl top``: every poller sees the same
rates, whoever polled last. Per-client rates (the top talkers) come from
the transport's per-connection counters, diffed the same way; per-topic
rates from the topic actors' ``published`` counts (a busy topic is a hot
one: it has a topic actor; a cold topic's few messages are not counted).
"""

from __future__ import annotations

import asyncio
import heapq
from collections.abc import Callable, Iterable
from typing import Any

from actorbroker.actors import Node
from actorbroker.actors.figures import counters
from supervisors import actor_of

__all__ = ["RATES", "Sampler"]

#: Counters whose per-second rate the sampler keeps.
RATES = ("publish_received", "publish_sent", "packets_in", "packets_out", "bytes_in",
         "bytes_out", "connects", "dropped_total")


class Sampler:
    """Measures loop lag and per-second rates while started (loop thread only)."""

    def __init__(self, node: Node, *, lag_interval: float = 0.25,
                 connections: Callable[[], Iterable[Any]] = tuple) -> None:
        self._node = node
        self._lag_interval = lag_interval
        self._connections = connections  # open MQTT connections (client_id, packets_in, ...)
        self._handle: asyncio.TimerHandle | None = None
        self._due = 0.0
        self._ticks = 0
        self._last: dict[str, int] = {}
        self._last_clients: dict[str, tuple[int, int, int, int]] = {}
        self.rates: dict[str, float] = dict.fromkeys(RATES, 0.0)
        #: client id -> (packets in, packets out, bytes in, bytes out) per second.
        self.client_rates: dict[str, tuple[float, float, float, float]] = {}
        self._last_topics: dict[str, int] = {}
        #: topic -> messages published per second (hot topics).
        self.topic_rates: dict[str, float] = {}

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._last = {name: counters(self._node).get(name, 0) for name in RATES}
        self._arm(loop)

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _arm(self, loop: asyncio.AbstractEventLoop) -> None:
        self._due = loop.time() + self._lag_interval
        self._handle = loop.call_at(self._due, self._fired, loop)

    def _fired(self, loop: asyncio.AbstractEventLoop) -> None:
        self._node.metrics.loop_lag.observe(max(0.0, loop.time() - self._due))
        self._ticks += 1
        per_second = round(1.0 / self._lag_interval)
        if self._ticks % per_second == 0:
            self._sample(float(per_second) * self._lag_interval)
        self._arm(loop)

    def _sample(self, seconds: float) -> None:
        now = counters(self._node)
        for name in RATES:
            value = now.get(name, 0)
            self.rates[name] = max(0, value - self._last.get(name, 0)) / seconds
            self._last[name] = value
        clients: dict[str, tuple[int, int, int, int]] = {}
        rates: dict[str, tuple[float, float, float, float]] = {}
        for conn in self._connections():
            client_id = getattr(conn, "client_id", None)
            if not client_id:
                continue
            figures = (conn.packets_in, conn.packets_out, conn.bytes_in, conn.bytes_out)
            before = self._last_clients.get(client_id, figures)
            clients[client_id] = figures
            ins, outs, bytes_in, bytes_out = (max(0, a - b) / seconds
                                              for a, b in zip(figures, before, strict=True))
            rates[client_id] = (ins, outs, bytes_in, bytes_out)
        self._last_clients = clients
        self.client_rates = rates
        topics: dict[str, int] = {}
        topic_rates: dict[str, float] = {}
        for topic, ref in list(self._node.names.topics.items()):
            actor = actor_of(ref)
            published = getattr(actor, "published", None)
            if published is None:
                continue  # not started yet, or gone
            topics[topic] = published
            topic_rates[topic] = max(0, published - self._last_topics.get(topic, published)) / seconds
        self._last_topics = topics
        self.topic_rates = topic_rates

    def top(self, n: int) -> list[tuple[str, tuple[float, float, float, float]]]:
        """The ``n`` clients with the most packets in + out per second, busiest first."""
        busy = ((cid, r) for cid, r in self.client_rates.items() if r[0] + r[1] > 0)
        return heapq.nlargest(n, busy, key=lambda kv: kv[1][0] + kv[1][1])

    def top_topics(self, n: int) -> list[tuple[str, float]]:
        """The ``n`` topics with the most messages published per second, busiest first."""
        busy = ((topic, rate) for topic, rate in self.topic_rates.items() if rate > 0)
        return heapq.nlargest(n, busy, key=lambda kv: kv[1])
