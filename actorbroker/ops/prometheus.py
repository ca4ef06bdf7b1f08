"""Ops layer: /metrics, the Prometheus text format through prometheus_client. Stdlib, prometheus_client, ops.

Every metric is one :class:`Metric` row of :data:`METRICS`: its name, type,
labels, help and how it reads a :class:`~.snapshot.Snapshot`. The
:class:`BrokerCollector` turns the rows into metric families at scrape time
(one ``CollectorRegistry`` per broker: several brokers may share a process),
and docs/operations.md's metrics table is rendered from the same rows
(:func:`render_markdown`; a test fails when the page is stale).

Per-client figures would need a label per client id, which Prometheus
cannot afford with thousands of clients: the busiest ``TOP_N`` clients are
exported under a fixed ``rank`` label (1..N) instead, their client id in
``actorbroker_top_client_info``; the busiest topics likewise.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric as Family,
)
from prometheus_client.registry import Collector

from actorbroker import __version__
from actorbroker.metrics import Histogram

from .snapshot import Snapshot
from .tree import flatten

__all__ = ["METRICS", "BrokerCollector", "Metric", "exposition", "render_markdown"]

Samples = Iterable[tuple[tuple[str, ...], float]]

#: Transport counters of a listener that close a connection, by reason label.
_CLOSED = (("connect_timeout", "connect_timeouts"), ("keepalive_timeout", "keepalive_timeouts"),
           ("protocol_error", "protocol_errors"), ("output_overflow", "output_overflows"))


@dataclass(frozen=True, slots=True)
class Metric:
    """One exported metric: ``read`` gives (label values, value) pairs."""

    name: str
    kind: str          # "counter", "gauge" or "histogram"
    help: str
    labels: tuple[str, ...]
    read: Callable[[Snapshot], Any]


def _one(value: Callable[[Snapshot], float]) -> Callable[[Snapshot], Samples]:
    return lambda s: [((), float(value(s)))]


def _per_listener(field: str) -> Callable[[Snapshot], Samples]:
    return lambda s: [((view.name,), float(getattr(view.stats, field))) for view in s.listeners]


def _closed(s: Snapshot) -> Samples:
    return [((view.name, reason), float(getattr(view.stats, field)))
            for view in s.listeners for reason, field in _CLOSED]


def _refused(s: Snapshot) -> Samples:
    out = [(("max_connections",), float(s.counters.get("connections_refused", 0)))]
    out += [((reason,), float(count)) for reason, count in sorted(s.refused_by.items())]
    return out


def _by_qos(field: str) -> Callable[[Snapshot], Samples]:
    return lambda s: [((str(qos),), float(n)) for qos, n in enumerate(getattr(s.metrics, field))]


def _actors(s: Snapshot) -> Samples:
    kinds: dict[str, int] = {}
    for node in flatten(s.tree) if s.tree is not None else ():
        if node.alive:
            kinds[node.actor] = kinds.get(node.actor, 0) + 1
    return [((kind,), float(n)) for kind, n in sorted(kinds.items())]


def _mailboxes(s: Snapshot) -> Samples:
    """The deepest mailbox among each kind of actor (a sum hides the one that is stuck)."""
    deepest: dict[str, int] = {}
    for node in flatten(s.tree) if s.tree is not None else ():
        if node.alive:
            deepest[node.actor] = max(deepest.get(node.actor, 0), node.mailbox)
    return [((kind,), float(n)) for kind, n in sorted(deepest.items())]


def _restarts(s: Snapshot) -> Samples:
    return [((node.path or "root",), float(node.restarts_total))
            for node in (flatten(s.tree) if s.tree is not None else ())
            if node.kind == "supervisor"]


def _top(index: int) -> Callable[[Snapshot], Samples]:
    return lambda s: [((str(rank), direction), rates[index + offset])
                      for rank, (_cid, rates) in enumerate(s.top, 1)
                      for offset, direction in ((0, "in"), (1, "out"))]


def _top_info(s: Snapshot) -> Samples:
    return [((str(rank), cid), 1.0) for rank, (cid, _rates) in enumerate(s.top, 1)]


def _top_topics(s: Snapshot) -> Samples:
    return [((str(rank),), rate) for rank, (_topic, rate) in enumerate(s.top_topics, 1)]


def _top_topic_info(s: Snapshot) -> Samples:
    return [((str(rank), topic), 1.0) for rank, (topic, _rate) in enumerate(s.top_topics, 1)]


def _storage(key: str) -> Callable[[Snapshot], Samples]:
    return lambda s: [((), float(s.storage[key]))] if key in s.storage else []


def _c(key: str) -> Callable[[Snapshot], Samples]:
    return _one(lambda s: s.counters.get(key, 0))


METRICS: tuple[Metric, ...] = (
    Metric("actorbroker_info", "gauge", "Always 1; the node name and version as labels",
           ("node", "version"), lambda s: [((s.node_name, __version__), 1.0)]),
    Metric("actorbroker_uptime_seconds", "gauge", "Seconds since the broker started", (),
           _one(lambda s: s.uptime)),
    Metric("actorbroker_connections", "gauge", "MQTT connections open now, per listener",
           ("listener",), _per_listener("connections_current")),
    Metric("actorbroker_connections_accepted_total", "counter",
           "Sockets accepted, per listener", ("listener",), _per_listener("connections_accepted")),
    Metric("actorbroker_connections_closed_total", "counter",
           "Connections the broker closed, per listener and reason", ("listener", "reason"),
           _closed),
    Metric("actorbroker_connections_refused_total", "counter",
           "Connections refused: at max_connections, or CONNACK with a failure code (by reason)",
           ("reason",), _refused),
    Metric("actorbroker_clients_connected", "gauge", "Clients with a session attached", (),
           _c("clients_connected")),
    Metric("actorbroker_clients_maximum", "gauge", "Most clients ever connected at once", (),
           _c("clients_maximum")),
    Metric("actorbroker_connects_total", "counter", "CONNECTs accepted", (), _c("connects")),
    Metric("actorbroker_sessions", "gauge", "Sessions by state (offline: kept for a client that "
           "is gone)", ("state",),
           lambda s: [(("online",), float(s.sessions.online)),
                      (("offline",), float(s.counters["clients_total"] - s.sessions.online))]),
    Metric("actorbroker_messages_received_total", "counter",
           "PUBLISH packets accepted from clients, by QoS", ("qos",), _by_qos("received_qos")),
    Metric("actorbroker_messages_sent_total", "counter",
           "PUBLISH packets written to clients (resends included), by QoS", ("qos",),
           _by_qos("sent_qos")),
    Metric("actorbroker_packets_received_total", "counter", "MQTT packets of any kind read", (),
           _c("packets_in")),
    Metric("actorbroker_packets_sent_total", "counter", "MQTT packets of any kind written", (),
           _c("packets_out")),
    Metric("actorbroker_bytes_received_total", "counter", "Bytes read from MQTT sockets", (),
           _c("bytes_in")),
    Metric("actorbroker_bytes_sent_total", "counter", "Bytes written to MQTT sockets", (),
           _c("bytes_out")),
    Metric("actorbroker_messages_dropped_total", "counter",
           "Deliveries discarded, by reason (docs: actorbroker.metrics)", ("reason",),
           lambda s: [((reason,), float(n)) for reason, n in sorted(s.metrics.dropped.items())]),
    Metric("actorbroker_retained_messages", "gauge", "Retained messages held", (),
           _c("retained")),
    Metric("actorbroker_subscriptions", "gauge", "(filter, client) subscriptions", (),
           _c("subscriptions")),
    Metric("actorbroker_topic_actors", "gauge", "Topic actors running", (), _c("topics")),
    Metric("actorbroker_queued_messages", "gauge",
           "Deliveries waiting in the queues of session actors", (),
           _one(lambda s: s.sessions.queued)),
    Metric("actorbroker_queued_bytes", "gauge", "Payload bytes in those queues", (),
           _one(lambda s: s.sessions.queued_bytes)),
    Metric("actorbroker_queue_longest", "gauge", "The longest queue of one session", (),
           _one(lambda s: s.sessions.max_queue)),
    Metric("actorbroker_inflight_messages", "gauge",
           "Outbound QoS 1/2 deliveries awaiting acknowledgement", (),
           _one(lambda s: s.sessions.inflight)),
    Metric("actorbroker_offline_queued_messages", "gauge",
           "Messages queued in the commit log for hibernated sessions", (), _storage("queued")),
    Metric("actorbroker_subscribers_stuck_total", "counter",
           "Subscribers that held publishers back past backpressure_timeout", (),
           _c("subscribers_stuck")),
    Metric("actorbroker_commitlog_appends_total", "counter",
           "Group commits (Append batches) written to the commit log", (), _storage("batches")),
    Metric("actorbroker_commitlog_records_total", "counter", "Records written to the commit log",
           (), _storage("records")),
    Metric("actorbroker_commitlog_segments", "gauge", "Segment files of the commit log", (),
           _storage("segments")),
    Metric("actorbroker_commitlog_bytes", "gauge", "Bytes in the commit log's segments", (),
           _storage("size_bytes")),
    Metric("actorbroker_commitlog_sync_seconds", "histogram",
           "Seconds per group commit sync (fdatasync in mode fsync)", (),
           lambda s: s.metrics.sync_latency),
    Metric("actorbroker_event_loop_lag_seconds", "histogram",
           "How late the event loop ran a 250 ms timer (time it was busy)", (),
           lambda s: s.metrics.loop_lag),
    Metric("actorbroker_actors", "gauge", "Live actors of the supervision tree, by class",
           ("kind",), _actors),
    Metric("actorbroker_mailbox_depth_max", "gauge",
           "The deepest mailbox among the actors of each class", ("kind",), _mailboxes),
    Metric("actorbroker_supervisor_restarts_total", "counter",
           "Children each supervisor restarted", ("supervisor",), _restarts),
    Metric("actorbroker_top_client_packets_per_second", "gauge",
           "Packets per second of the N busiest clients (rank 1 = busiest)",
           ("rank", "direction"), _top(0)),
    Metric("actorbroker_top_client_bytes_per_second", "gauge",
           "Bytes per second of the N busiest clients", ("rank", "direction"), _top(2)),
    Metric("actorbroker_top_client_info", "gauge",
           "Always 1: which client holds each rank now", ("rank", "client_id"), _top_info),
    Metric("actorbroker_top_topic_messages_per_second", "gauge",
           "Messages per second published to the N busiest topics", ("rank",), _top_topics),
    Metric("actorbroker_top_topic_info", "gauge",
           "Always 1: which topic holds each rank now", ("rank", "topic"), _top_topic_info),
    Metric("actorbroker_http_refused_total", "counter",
           "HTTP connections refused (too many), closed (no request in time), or API calls "
           "refused (unauthorized)", ("reason",),
           lambda s: [((reason,), float(n)) for reason, n in sorted(s.http.items())]),
)


def _family(metric: Metric, snap: Snapshot) -> Family:
    name = metric.name
    if metric.kind == "histogram":
        histogram: Histogram = metric.read(snap)
        family = HistogramMetricFamily(name, metric.help, labels=metric.labels)
        buckets = [("+Inf" if bound == math.inf else repr(bound), count)
                   for bound, count in histogram.cumulative()]
        family.add_metric([], buckets, histogram.total)
        return family
    if metric.kind == "counter":
        counter = CounterMetricFamily(name.removesuffix("_total"), metric.help,
                                      labels=metric.labels)
        for labels, value in metric.read(snap):
            counter.add_metric(list(labels), value)
        return counter
    gauge = GaugeMetricFamily(name, metric.help, labels=metric.labels)
    for labels, value in metric.read(snap):
        gauge.add_metric(list(labels), value)
    return gauge


class BrokerCollector(Collector):
    """Yields :data:`METRICS` from the snapshot :meth:`use` was given (at scrape time)."""

    def __init__(self) -> None:
        self._snapshot: Snapshot | None = None

    def use(self, snap: Snapshot) -> None:
        self._snapshot = snap

    def collect(self) -> Iterator[Family]:
        snap = self._snapshot
        if snap is None:
            return
        for metric in METRICS:
            yield _family(metric, snap)


def exposition(registry: CollectorRegistry, collector: BrokerCollector, snap: Snapshot
               ) -> bytes:
    """The Prometheus text of ``snap``."""
    collector.use(snap)
    return generate_latest(registry)


def render_markdown() -> str:
    """The metrics table of docs/operations.md (between its markers)."""
    lines = ["| metric | type | labels | what |", "| --- | --- | --- | --- |"]
    for metric in METRICS:
        labels = ", ".join(f"`{label}`" for label in metric.labels) or "-"
        lines.append(f"| `{metric.name}` | {metric.kind} | {labels} | {metric.help} |")
    return "\n".join(lines) + "\n"
