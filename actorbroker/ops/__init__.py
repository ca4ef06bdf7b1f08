"""Ops layer: the operations HTTP listener: Prometheus /metrics, the admin API, the supervision tree. May import actors, config, transport, supervisors, aiohttp and prometheus_client.

:func:`open_http` binds ``[http] bind:port`` on the broker's loop and
returns an :class:`HttpListener`, which :mod:`actorbroker.app` runs under
the listeners supervisor. Handlers never block the loop: they read what is
counted on the loop thread (:mod:`.snapshot`) or await actors. Nothing
below the app imports this package. See docs/operations.md.
"""

from __future__ import annotations

from .context import ListenerView, OpsContext
from .dump import dump
from .sampler import Sampler
from .server import HttpListener, open_http

__all__ = ["HttpListener", "ListenerView", "OpsContext", "Sampler", "dump", "open_http"]
