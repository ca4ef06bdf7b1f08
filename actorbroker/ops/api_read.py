"""Ops layer: the admin API's read-only views (/api/v1/...). Stdlib, aiohttp, actors, transport, supervisors, ops.

Each handler reads the broker on the loop thread (the name table, the
session actors' cores, the registry's retained index) or awaits an actor;
none blocks. Lists are bounded by ``limit`` (default 1000) and say how many
there were (``total``).

    GET /api/v1/stats?actors=1               headline figures (a dashboard polls it);
                                             actors=1 adds the tree's totals and busiest mailboxes
    GET /api/v1/tree?limit=N                 the supervision tree
    GET /api/v1/clients?prefix=&state=online|offline&limit=
    GET /api/v1/clients/{id}                 one client's session
    GET /api/v1/sessions?prefix=&limit=      sessions kept (online and offline)
    GET /api/v1/retained?filter=#&limit=     retained messages matching a filter
    GET /api/v1/config                       the configuration in force, secrets masked
"""

from __future__ import annotations

import dataclasses
import re
import time
from typing import Any

from aiohttp import web

from actorbroker.actors import RegistryActor
from actorbroker.actors.names import Singleton
from actorbroker.routing import is_valid_topic_filter
from actorbroker.transport import MqttConnection
from supervisors import actor_of, mailbox_depth

from .context import OpsContext
from .snapshot import stats_json, take
from .tree import walk

__all__ = ["ApiError", "add_routes", "client_view", "registry_actor", "session_actor"]

DEFAULT_LIMIT = 1000
_SECRET = re.compile(r"password|secret|token(?!_file)|passphrase", re.IGNORECASE)


class ApiError(Exception):
    """A request the API refuses: ``status`` and a message for the JSON body."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def limit_of(request: web.Request, default: int = DEFAULT_LIMIT) -> int:
    raw = request.query.get("limit", str(default))
    try:
        value = int(raw)
    except ValueError:
        raise ApiError(400, f"limit must be an integer, not {raw!r}") from None
    if not 1 <= value <= 1_000_000:
        raise ApiError(400, "limit must be between 1 and 1000000")
    return value


def session_actor(ctx: OpsContext, client_id: str) -> Any:
    """The session actor object of ``client_id`` (read it on the loop thread), None if
    it has none running (no session, or hibernated)."""
    ref = ctx.node.names.sessions.get(client_id)
    if ref is None:
        return None
    try:
        actor = actor_of(ref)
    except (TypeError, AttributeError):  # an Asleep or Waking entry (hibernated)
        return None
    return actor if actor is not None and hasattr(actor, "core") else None


def registry_actor(ctx: OpsContext) -> RegistryActor:
    """The registry actor object (read its views on the loop thread); 503 if restarting."""
    ref = ctx.node.names.whereis(Singleton.REGISTRY)
    actor = actor_of(ref) if ref is not None else None
    if not isinstance(actor, RegistryActor) or not ref.is_alive():  # type: ignore[union-attr]
        raise ApiError(503, "the registry is restarting")
    return actor


def client_view(ctx: OpsContext, client_id: str,
                conns: dict[str, MqttConnection] | None = None) -> dict[str, Any]:
    """The list entry of one client id in the name table (``conns``: the open connections
    by client id, when a list looks up many)."""
    online = client_id in ctx.node.names.online
    view: dict[str, Any] = {"client_id": client_id, "state": "online" if online else "offline",
                            "hibernated": session_actor(ctx, client_id) is None}
    if not online:
        conn = None
    elif conns is not None:
        conn = conns.get(client_id)
    else:
        conn = ctx.connection_of(client_id)
    if conn is not None:
        view["peer"] = f"{conn.peer[0]}:{conn.peer[1]}"
        view["protocol_level"] = conn.protocol_level
    return view


def _clients(ctx: OpsContext, request: web.Request) -> dict[str, Any]:
    prefix = request.query.get("prefix", "")
    state = request.query.get("state", "")
    if state not in ("", "online", "offline"):
        raise ApiError(400, "state must be online or offline")
    limit = limit_of(request)
    names = ctx.node.names
    online = names.online
    chosen = [cid for cid in names.sessions if cid.startswith(prefix)
              and (not state or (cid in online) == (state == "online"))]
    chosen.sort()
    conns = ctx.connections_by_client()
    return {"total": len(chosen),
            "clients": [client_view(ctx, cid, conns) for cid in chosen[:limit]]}


def client_detail(ctx: OpsContext, client_id: str) -> dict[str, Any]:
    """One client's session: subscriptions, in flight, queue, last seen, Will."""
    names = ctx.node.names
    if client_id not in names.sessions:
        raise ApiError(404, f"no session for client id {client_id!r}")
    view = client_view(ctx, client_id)
    actor = session_actor(ctx, client_id)
    subscriptions = registry_actor(ctx).subscriptions_of(client_id)
    view["subscriptions"] = [{"filter": f, "qos": q} for f, q in sorted(subscriptions.items())]
    if actor is None:
        return view  # hibernated: its queue is in the commit log
    core = actor.core
    view.update(
        clean_session=core.clean_session,
        keepalive=core.keepalive,
        inflight=core.inflight_count,
        queued=len(core.queue),
        queued_bytes=core.queue.bytes,
        session_state=core.state.name.lower(),
        last_seen=time.time() if view["state"] == "online" else actor.last_seen,
        will=None if core.will is None else {
            "topic": core.will.topic, "qos": core.will.qos, "retain": core.will.retain,
            "payload_bytes": len(core.will.payload)},
        mailbox=mailbox_depth(actor.actor_ref),
    )
    return view


def _sessions(ctx: OpsContext, request: web.Request) -> dict[str, Any]:
    prefix = request.query.get("prefix", "")
    limit = limit_of(request)
    chosen = sorted(cid for cid in ctx.node.names.sessions if cid.startswith(prefix))
    out = []
    conns = ctx.connections_by_client()
    for cid in chosen[:limit]:
        view = client_view(ctx, cid, conns)
        actor = session_actor(ctx, cid)
        if actor is not None:
            view.update(clean_session=actor.core.clean_session, queued=len(actor.core.queue),
                        inflight=actor.core.inflight_count)
        out.append(view)
    return {"total": len(chosen), "sessions": out}


def _retained(ctx: OpsContext, request: web.Request) -> dict[str, Any]:
    topic_filter = request.query.get("filter", "#")
    if not is_valid_topic_filter(topic_filter):
        raise ApiError(400, f"not a valid topic filter: {topic_filter!r}")
    limit = limit_of(request)
    found = sorted(registry_actor(ctx).retained_matching(topic_filter), key=lambda item: item[0])
    return {"total": len(found), "retained": [
        {"topic": topic, "qos": m.qos, "payload_bytes": len(m.payload),
         "payload": m.payload[:256].decode("utf-8", "replace")}
        for topic, m in found[:limit]]}


def masked(value: Any) -> Any:
    """The configuration as JSON, values of secret-looking options replaced by "***"."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: ("***" if _SECRET.search(f.name) and getattr(value, f.name)
                         else masked(getattr(value, f.name)))
                for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [masked(item) for item in value]
    return value


def add_routes(router: web.UrlDispatcher, ctx: OpsContext) -> None:
    """Register the read-only API on ``router``."""

    async def stats(request: web.Request) -> web.Response:
        with_tree = request.query.get("actors") == "1"  # a tree walk: not every second
        return web.json_response(stats_json(await take(ctx, with_tree=with_tree,
                                                       tree_limit=1_000_000)))

    async def tree(request: web.Request) -> web.Response:
        root = ctx.root()
        if root is None:
            raise ApiError(503, "the broker is not running")
        return web.json_response((await walk(root, limit=limit_of(request, 100))).as_json())

    async def clients(request: web.Request) -> web.Response:
        return web.json_response(_clients(ctx, request))

    async def client(request: web.Request) -> web.Response:
        return web.json_response(client_detail(ctx, request.match_info["id"]))

    async def sessions(request: web.Request) -> web.Response:
        return web.json_response(_sessions(ctx, request))

    async def retained(request: web.Request) -> web.Response:
        return web.json_response(_retained(ctx, request))

    async def config(_request: web.Request) -> web.Response:
        return web.json_response(masked(ctx.config))

    router.add_get("/api/v1/stats", stats)
    router.add_get("/api/v1/tree", tree)
    router.add_get("/api/v1/clients", clients)
    router.add_get("/api/v1/clients/{id}", client)
    router.add_get("/api/v1/sessions", sessions)
    router.add_get("/api/v1/retained", retained)
    router.add_get("/api/v1/config", config)
