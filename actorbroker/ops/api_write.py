"""Ops layer: the admin API's actions. Stdlib, aiohttp, pykka, actors, supervisors, ops.

    POST   /api/v1/clients/{id}/kick     close the client's connection (MQTT 5: DISCONNECT 0x98)
    DELETE /api/v1/sessions/{id}         kick, then end the session as its expiry would
    DELETE /api/v1/retained/{topic}      clear a retained message
    POST   /api/v1/actors/{path}/kill    crash an actor: its supervisor restarts it
    PUT    /api/v1/log/level             {"level": "debug", "logger": "actorbroker.session"}
    POST   /api/v1/dump                  log the supervision tree and busiest mailboxes (as SIGUSR1)

An action goes the way the broker would go itself: a kick closes the
connection as the transport does (the session sees ``ConnectionLost``, the
Will is published: the client did not DISCONNECT); a session is ended by
its own actor (``DiscardSession``) or, hibernated, by the keeper
(``ExpireSession``); a retained message is cleared by routing an empty
retained one through the registry; a kill is
:func:`supervisors.crash`: the actor raises in inbox order, its
``on_failure`` lets go of what it holds, its supervisor restarts it. The
actions that take effect asynchronously wait for it (bounded) before
answering, so that a client sees the result in its next read.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable
from typing import Any

from aiohttp import web
from pykka import ActorDeadError

from actorbroker.actors.admin import DiscardSession, ExpireSession
from actorbroker.actors.messages import RouteViaRegistry
from actorbroker.actors.names import Singleton
from actorbroker.codec import ReasonCode
from actorbroker.routing import is_valid_topic_name
from supervisors import crash

from .api_read import ApiError, registry_actor, session_actor
from .context import OpsContext
from .dump import dump
from .tree import find, walk

__all__ = ["add_routes", "wait_for"]

log = logging.getLogger("actorbroker.http")

#: How long an action waits for the broker to show its effect.
SETTLE_TIMEOUT = 5.0
_LEVELS = ("debug", "info", "warning", "error", "critical")
_LOGGER_NAME = re.compile(r"[A-Za-z0-9_.]{1,200}")


async def wait_for(condition: Callable[[], bool], timeout: float = SETTLE_TIMEOUT) -> bool:
    """Poll ``condition`` on the loop (every 5 ms) until it holds or ``timeout`` passes:
    what it waits on changes in other actors' turns, which offer nothing to await."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            return False
        await asyncio.sleep(0.005)
    return True


def _kick(ctx: OpsContext, client_id: str) -> bool:
    """Close ``client_id``'s connection; False if it has none."""
    conn = ctx.connection_of(client_id)
    if conn is None:
        return False
    log.info("client %r from %s:%s: kicked by an operator", client_id, *conn.peer)
    conn.close(ReasonCode.ADMINISTRATIVE_ACTION, reason="kicked by an operator (admin API)")
    return True


async def _ask(ref: Any, message: Any) -> Any:
    try:
        return await ref.ask(message, block=False)
    except ActorDeadError:
        return False


async def _delete_session(ctx: OpsContext, client_id: str) -> dict[str, Any]:
    names = ctx.node.names
    if client_id not in names.sessions:
        raise ApiError(404, f"no session for client id {client_id!r}")
    if _kick(ctx, client_id) and not await wait_for(lambda: client_id not in names.online):
        raise ApiError(409, f"client {client_id!r} is still connected")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + SETTLE_TIMEOUT
    # Whoever holds the name is asked: the actor, or the keeper once it hibernated (which
    # may happen meanwhile: then the holder changes and the keeper is asked next).
    while client_id in names.sessions:
        if client_id in names.online or loop.time() > deadline:
            raise ApiError(409, f"the session of {client_id!r} could not be ended "
                                "(connected again?)")
        holder = names.sessions.get(client_id)
        actor = session_actor(ctx, client_id)
        keeper = ctx.node.names.whereis(Singleton.KEEPER)
        if actor is not None:
            await _ask(actor.actor_ref, DiscardSession())
        elif keeper is not None:
            await _ask(keeper, ExpireSession(client_id))
        await wait_for(lambda: names.sessions.get(client_id) is not holder,  # noqa: B023 (awaited here)
                       timeout=0.5)
    return {"deleted": client_id}


async def _delete_retained(ctx: OpsContext, topic: str) -> dict[str, Any]:
    if not is_valid_topic_name(topic):
        raise ApiError(400, f"not a topic name: {topic!r}")
    node = ctx.node
    actor = registry_actor(ctx)
    if actor.retained_message(topic) is None:
        raise ApiError(404, f"no retained message on {topic!r}")
    loop = asyncio.get_running_loop()
    empty = node.own_message(topic, b"", retain=True, now=loop.time())
    actor.actor_ref.tell(RouteViaRegistry(topic, (empty,), None))  # as a client clears it
    if not await wait_for(lambda: actor.retained_message(topic) is None):
        raise ApiError(409, f"the retained message of {topic!r} is still there")
    log.info("retained message of %r cleared by an operator", topic)
    return {"deleted": topic}


async def _kill(ctx: OpsContext, name: str) -> dict[str, Any]:
    root = ctx.root()
    if root is None:
        raise ApiError(503, "the broker is not running")
    found = [n for n in find(await walk(root, limit=1_000_000), name) if n.ref is not None]
    if not found:
        raise ApiError(404, f"no running actor {name!r} (give its path, e.g. core/registry)")
    if len(found) > 1:
        raise ApiError(409, f"{len(found)} actors are named {name!r}: give the path, one of "
                            + ", ".join(n.path for n in found[:5]))
    target = found[0]
    if target.ref is root or not target.path:
        raise ApiError(403, "the root supervisor has nobody to restart it: stop the broker "
                            "instead")
    log.warning("actor %s (%s): crashed by an operator (admin API)", target.path, target.actor)
    assert target.ref is not None
    crash(target.ref, "killed by an operator (admin API)")
    return {"killed": target.path, "actor": target.actor}


async def _log_level(request: web.Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except ValueError:
        raise ApiError(400, 'the body must be JSON: {"level": "debug", "logger": "..."}') from None
    if not isinstance(body, dict):
        raise ApiError(400, "the body must be a JSON object")
    level = body.get("level")
    name = body.get("logger") or "actorbroker"
    if not isinstance(level, str) or level.lower() not in _LEVELS:
        raise ApiError(400, f"level must be one of {', '.join(_LEVELS)}")
    if not isinstance(name, str) or not _LOGGER_NAME.fullmatch(name):
        raise ApiError(400, "logger must be a logger name such as actorbroker.session")
    logger = logging.getLogger(name)
    previous = logging.getLevelName(logger.getEffectiveLevel()).lower()
    logger.setLevel(level.upper())
    log.warning("log level of %s set to %s (was %s) by an operator", name, level.lower(),
                previous)
    return {"logger": name, "level": level.lower(), "previous": previous}


async def _dump(ctx: OpsContext) -> dict[str, Any]:
    root = ctx.root()
    if root is None:
        raise ApiError(503, "the broker is not running")
    return {"logged": await dump(root, "admin API")}


def add_routes(router: web.UrlDispatcher, ctx: OpsContext) -> None:
    """Register the actions on ``router``."""

    async def kick(request: web.Request) -> web.Response:
        client_id = request.match_info["id"]
        if not _kick(ctx, client_id):
            raise ApiError(404, f"client {client_id!r} is not connected")
        return web.json_response({"kicked": client_id})

    async def delete_session(request: web.Request) -> web.Response:
        return web.json_response(await _delete_session(ctx, request.match_info["id"]))

    async def delete_retained(request: web.Request) -> web.Response:
        return web.json_response(await _delete_retained(ctx, request.match_info["topic"]))

    async def kill(request: web.Request) -> web.Response:
        return web.json_response(await _kill(ctx, request.match_info["name"]))

    async def log_level(request: web.Request) -> web.Response:
        return web.json_response(await _log_level(request))

    router.add_post("/api/v1/clients/{id}/kick", kick)
    router.add_delete("/api/v1/sessions/{id}", delete_session)
    router.add_delete("/api/v1/retained/{topic:.+}", delete_retained)
    router.add_post("/api/v1/actors/{name:.+}/kill", kill)
    async def dump_tree(request: web.Request) -> web.Response:
        return web.json_response(await _dump(ctx))

    router.add_put("/api/v1/log/level", log_level)
    router.add_post("/api/v1/dump", dump_tree)
