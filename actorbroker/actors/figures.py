"""Actors layer: the node's figures in one place, for $SYS, /metrics and the admin API. Stdlib, pykka, supervisors, session.

Everything here runs on the loop thread and reads what is already counted
(:class:`~actorbroker.metrics.BrokerMetrics`, the transport's counters, the
name table): no message, no lock. :func:`counters` is the flat dict that
``$SYS`` (:mod:`.topics.sys_topics`) and the Prometheus collector
(``actorbroker.ops.prometheus``) both name their figures from, so the two
never disagree. :func:`session_figures` walks the live session actors
(queue depth, bytes, in flight): one pass over the name table, a few
attribute reads per session, done per scrape, not per message.
:func:`storage_figures` asks the storage actor (``StorageStatus``), which
answers from its own thread: the caller awaits it with a time bound.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from pykka import ActorDeadError

from supervisors import actor_of

from .node import Node
from .storage.requests import StorageStatus

__all__ = ["SessionFigures", "counters", "session_figures", "storage_figures"]


def counters(node: Node) -> dict[str, int]:
    """The node's counters and gauges by name (see the module doc)."""
    metrics = node.metrics
    names = node.names
    figures: dict[str, int] = dict(node.stats.snapshot())
    total = len(names.sessions)
    figures.update(
        clients_connected=metrics.clients_connected,
        clients_maximum=metrics.clients_maximum,
        clients_total=total,
        clients_disconnected=max(0, total - metrics.clients_connected),
        connects=metrics.connects,
        disconnects=metrics.disconnects,
        publish_received=metrics.publish_received,
        publish_sent=metrics.publish_sent,
        dropped_total=metrics.dropped_total,
        subscriptions=metrics.subscriptions,
        retained=metrics.retained,
        topics=metrics.topics,
        subscribers_stuck=metrics.subscribers_stuck,
    )
    return figures


@dataclass(slots=True)
class SessionFigures:
    """Totals over the live session actors, and the top talkers' client ids."""

    actors: int = 0          # session actors running (hibernated ones excluded)
    online: int = 0          # with a connection attached
    queued: int = 0          # deliveries waiting in their queues
    queued_bytes: int = 0
    inflight: int = 0        # outbound QoS 1/2 awaiting acknowledgement
    max_queue: int = 0       # the longest queue


def session_figures(node: Node) -> SessionFigures:
    """Queue and in-flight totals over the running session actors (loop thread)."""
    out = SessionFigures(online=len(node.names.online))
    for ref in list(node.names.sessions.values()):
        try:
            actor = actor_of(ref)
        except (TypeError, AttributeError):  # an Asleep or Waking entry: nothing in memory
            continue
        core = getattr(actor, "core", None)
        if core is None:
            continue
        out.actors += 1
        queue = core.queue
        depth = len(queue)
        out.queued += depth
        out.queued_bytes += queue.bytes
        out.inflight += core.inflight_count
        if depth > out.max_queue:
            out.max_queue = depth
    return out


async def storage_figures(node: Node, timeout: float = 1.0) -> dict[str, Any]:
    """The storage actor's figures (appends, segments, bytes, offline queue); empty
    without storage, or when it does not answer within ``timeout`` (busy syncing)."""
    storage = node.names.storage()
    if storage is None:
        return {}
    try:
        figures: dict[str, Any] = await asyncio.wait_for(
            storage.ask(StorageStatus(), block=False), timeout)
    except (ActorDeadError, asyncio.TimeoutError):
        return {}
    return figures
