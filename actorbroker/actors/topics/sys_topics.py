"""Actors layer: SysActor, the broker's statistics under ``$SYS/broker/``. Stdlib, supervisors, session.

Every ``[sys] interval`` seconds (0: never) the actor reads the node's
figures (:mod:`~actorbroker.actors.figures`, which /metrics reads too; the storage actor's
are asked for) and publishes each value that changed
as a retained QoS 0 message through the normal publish path (the registry),
as Mosquitto does; a client subscribing to ``$SYS/#`` gets the latest values
at once. Filters starting with a wildcard never match them
([MQTT-4.7.2-1]).

Topics (Mosquitto's names; ``messages/dropped/<reason>`` is ours):

    $SYS/broker/version                       "actorbroker 0.1.0"
    $SYS/broker/uptime                        "12 seconds"
    $SYS/broker/clients/connected|disconnected|total|maximum
    $SYS/broker/messages/received|sent        MQTT packets of any kind
    $SYS/broker/messages/dropped              deliveries discarded, all reasons
    $SYS/broker/messages/dropped/<reason>     per reason (see actorbroker.metrics)
    $SYS/broker/publish/messages/received|sent|dropped
    $SYS/broker/bytes/received|sent
    $SYS/broker/subscriptions/count
    $SYS/broker/retained messages/count
    $SYS/broker/store/messages/count          retained + queued + in flight (memory and log)
    $SYS/broker/store/messages/bytes          payload bytes queued in session actors
    $SYS/broker/load/{messages,publish,bytes}/{received,sent}/{1min,5min,15min}
    $SYS/broker/load/connections/{1min,5min,15min}
    $SYS/broker/load/sockets/{1min,5min,15min}
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from actorbroker import __version__
from actorbroker.metrics import LoadAverage
from supervisors import LoopActor, send_after, tell_if_alive

from ..figures import counters, session_figures, storage_figures
from ..messages import RouteViaRegistry, Timer
from ..names import Singleton
from ..node import Node

__all__ = ["SysActor", "sys_values"]

PREFIX = "$SYS/broker/"
_TICK = Timer("sys")

#: load average name -> where its counter comes from: ("metrics"|"stats", field).
_LOADS = {
    "messages/received": ("stats", "packets_in"),
    "messages/sent": ("stats", "packets_out"),
    "publish/received": ("metrics", "publish_received"),
    "publish/sent": ("metrics", "publish_sent"),
    "bytes/received": ("stats", "bytes_in"),
    "bytes/sent": ("stats", "bytes_out"),
    "connections": ("metrics", "connects"),
    "sockets": ("stats", "connections_accepted"),
}


def sys_values(node: Node, now: float, store: dict[str, Any] | None = None) -> dict[str, str]:
    """Every ``$SYS`` value but the load averages, by topic (``now``: time.monotonic()).

    ``store``: the storage actor's figures (:func:`~actorbroker.actors.figures.storage_figures`), if any.
    """
    figures = counters(node)
    sessions = session_figures(node)
    stored = (store or {}).get("queued", 0)
    values: dict[str, Any] = {
        "version": f"actorbroker {__version__}",
        "uptime": f"{int(now - node.started_at)} seconds",
        "clients/connected": figures["clients_connected"],
        "clients/disconnected": figures["clients_disconnected"],
        "clients/total": figures["clients_total"],
        "clients/maximum": figures["clients_maximum"],
        "messages/received": figures.get("packets_in", 0),
        "messages/sent": figures.get("packets_out", 0),
        "messages/dropped": figures["dropped_total"],
        "publish/messages/received": figures["publish_received"],
        "publish/messages/sent": figures["publish_sent"],
        "publish/messages/dropped": figures["dropped_total"],
        "bytes/received": figures.get("bytes_in", 0),
        "bytes/sent": figures.get("bytes_out", 0),
        "subscriptions/count": figures["subscriptions"],
        "retained messages/count": figures["retained"],
        "store/messages/count": (figures["retained"] + sessions.queued + sessions.inflight
                                 + stored),
        "store/messages/bytes": sessions.queued_bytes,
    }
    for reason, count in node.metrics.dropped.items():
        values[f"messages/dropped/{reason}"] = count
    return {PREFIX + name: str(value) for name, value in values.items()}


class SysActor(LoopActor):
    """Publishes the ``$SYS`` topics every interval (see the module doc)."""

    def __init__(self, node: Node, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self._node = node
        self._interval = node.settings.sys_interval
        self._last: dict[str, str] = {}
        self._loads = {name: LoadAverage() for name in _LOADS}
        self._timer: asyncio.TimerHandle | None = None
        self._clock = clock

    def on_start(self) -> None:
        if self._interval > 0:
            self._publish()

    def on_stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def on_receive(self, message: Any) -> Any:
        if message is _TICK or type(message) is Timer:
            self._timer = None
            return self._tick()
        raise TypeError(f"$SYS: unexpected message {message!r}")

    async def _tick(self) -> None:
        self._publish(await storage_figures(self._node))

    def _publish(self, store: dict[str, Any] | None = None) -> None:
        node = self._node
        self._timer = send_after(self.actor_loop, self.actor_ref, self._interval, _TICK)
        values = sys_values(node, self._clock(), store)
        stats = node.stats.snapshot()
        for name, (source, field) in _LOADS.items():
            total = stats.get(field, 0) if source == "stats" else getattr(node.metrics, field)
            for window, value in self._loads[name].update(total, self._interval).items():
                values[f"{PREFIX}load/{name}/{window}"] = f"{value:.2f}"
        loop_now = self.actor_loop.time()
        registry = node.names.whereis(Singleton.REGISTRY)
        for topic, payload in values.items():
            if self._last.get(topic) == payload:
                continue
            message = node.own_message(topic, payload.encode(), retain=True, now=loop_now)
            if registry is not None and not tell_if_alive(
                    registry, RouteViaRegistry(topic, (message,), None)):
                return  # the registry is restarting; what is left goes next time
            self._last[topic] = payload
