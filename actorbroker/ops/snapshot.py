"""Ops layer: one consistent read of the broker's figures, for /metrics and /api/v1/stats. Stdlib, actors, supervisors.

:func:`take` gathers, on the loop thread, what /metrics and the stats API
show: the counters every part already keeps (read directly), the session
actors' queues (one pass, :func:`~actorbroker.actors.figures.session_figures`),
the storage actor's figures and the supervision tree (asked, awaited,
never blocking the loop). The Prometheus collector and the JSON views are
plain functions of a :class:`Snapshot`, so both show the same numbers.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from actorbroker import __version__
from actorbroker.actors.figures import SessionFigures, counters, session_figures, storage_figures
from actorbroker.metrics import BrokerMetrics

from .context import ListenerView, OpsContext
from .tree import TreeNode, flatten, walk

__all__ = ["Snapshot", "stats_json", "take"]

#: Top talkers listed in /metrics (rank 1..N) and /api/v1/stats.
TOP_N = 10


@dataclass(slots=True)
class Snapshot:
    """Everything /metrics and /api/v1/stats show, read at one moment."""

    node_name: str
    uptime: float
    counters: dict[str, int]
    metrics: BrokerMetrics
    sessions: SessionFigures
    storage: dict[str, Any]
    listeners: list[ListenerView]
    refused_by: dict[str, int]
    rates: dict[str, float]
    top: list[tuple[str, tuple[float, float, float, float]]]
    top_topics: list[tuple[str, float]]
    tree: TreeNode | None
    http: dict[str, int] = field(default_factory=dict)


async def take(ctx: OpsContext, *, with_tree: bool = True, tree_limit: int = 100,
               http: dict[str, int] | None = None) -> Snapshot:
    """Read the figures now (see the module doc)."""
    node = ctx.node
    storage = await storage_figures(node)
    root = ctx.root()
    tree = await walk(root, limit=tree_limit) if with_tree and root is not None else None
    stats: Any = node.stats
    return Snapshot(
        node_name=node.settings.node_name,
        uptime=time.monotonic() - node.started_at,
        counters=counters(node),
        metrics=node.metrics,
        sessions=session_figures(node),
        storage=storage,
        listeners=ctx.listeners(),
        refused_by=dict(getattr(stats, "refused_by", {})),
        rates=dict(ctx.sampler.rates),
        top=ctx.sampler.top(TOP_N),
        top_topics=ctx.sampler.top_topics(TOP_N),
        tree=tree,
        http=dict(http or {}),
    )


def stats_json(snap: Snapshot) -> dict[str, Any]:
    """The ``/api/v1/stats`` document: the headline figures a dashboard polls."""
    c = snap.counters
    m = snap.metrics
    sync, lag = m.sync_latency, m.loop_lag
    out: dict[str, Any] = {
        "node": snap.node_name,
        "version": __version__,
        "time": time.time(),
        "uptime": round(snap.uptime, 3),
        "connections": {
            "current": c.get("connections_current", 0),
            "clients": c["clients_connected"],
            "maximum": c["clients_maximum"],
            "total": c["connects"],
            "refused": c.get("connects_refused", 0) + c.get("connections_refused", 0),
            "refused_by": dict(snap.refused_by),
        },
        "sessions": {"total": c["clients_total"], "online": snap.sessions.online,
                     "offline": c["clients_total"] - snap.sessions.online,
                     "actors": snap.sessions.actors},
        "messages": {"received": c["publish_received"], "sent": c["publish_sent"],
                     "dropped": c["dropped_total"], "dropped_by": dict(m.dropped),
                     "received_by_qos": list(m.received_qos), "sent_by_qos": list(m.sent_qos)},
        "bytes": {"received": c.get("bytes_in", 0), "sent": c.get("bytes_out", 0)},
        "rates": {name: round(value, 2) for name, value in snap.rates.items()},
        "queues": {"messages": snap.sessions.queued, "bytes": snap.sessions.queued_bytes,
                   "inflight": snap.sessions.inflight, "longest": snap.sessions.max_queue,
                   "offline_stored": snap.storage.get("queued", 0)},
        "subscriptions": c["subscriptions"],
        "retained": c["retained"],
        "topics": c["topics"],
        "storage": {key: snap.storage[key] for key in
                    ("mode", "batches", "records", "segments", "size_bytes", "failure")
                    if key in snap.storage},
        "fsync": {"count": sync.count, "p50": sync.quantile(0.5), "p99": sync.quantile(0.99),
                  "mean": sync.total / sync.count if sync.count else 0.0},
        "loop_lag": {"count": lag.count, "p50": lag.quantile(0.5), "p99": lag.quantile(0.99)},
        "top": [{"client_id": cid, "packets_in": round(r[0], 2), "packets_out": round(r[1], 2),
                 "bytes_in": round(r[2], 2), "bytes_out": round(r[3], 2)}
                for cid, r in snap.top],
        "top_topics": [{"topic": topic, "messages_per_s": round(rate, 2)}
                       for topic, rate in snap.top_topics],
    }
    if snap.tree is not None:
        nodes = flatten(snap.tree)
        busiest = sorted((n for n in nodes if n.mailbox), key=lambda n: -n.mailbox)[:5]
        out["actors"] = {"count": len(nodes),
                         "restarts": sum(n.restarts_total for n in nodes),
                         "mailboxes": sum(n.mailbox for n in nodes),
                         "busiest": [{"path": n.path, "mailbox": n.mailbox} for n in busiest]}
    return out
