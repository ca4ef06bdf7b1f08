"""Ops layer: the operations HTTP listener on the broker's own event loop. Stdlib, aiohttp, prometheus_client, ops.

aiohttp parses the requests (line, header and body limits, keep-alive);
:class:`~.guard.ConnectionGuard` bounds the connections and closes slow
ones; every handler reads the broker on the loop thread or awaits an actor
(``ask(block=False)``), so a slow or hostile HTTP client never holds up
MQTT. Routes: ``/metrics`` (Prometheus text, open to scrapers),
``/api/v1/...`` (JSON, :mod:`.api_read` and :mod:`.api_write`), behind
:class:`TokenCheck`, and the dashboard (``/``, ``/static/...``,
:mod:`.dashboard`), whose page calls the API with the operator's token.

Authentication: with ``[http] token_file`` every API call needs
``Authorization: Bearer TOKEN`` (compared in constant time); without one
(allowed on the loopback only, see :class:`~actorbroker.config.HttpConfig`)
calls from the loopback are let in and any other peer is refused. A refusal
is a 401 and a WARNING line (at most one per 5 s with the count between).

:class:`HttpListener` has the shape of a listener handle (``port``,
``name``, ``close``, ``close_all``): the app runs it under the listeners
supervisor with :class:`~actorbroker.actors.ListenerActor`.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import logging
import time
from collections.abc import Awaitable, Callable

from aiohttp import web
from prometheus_client import CollectorRegistry

from actorbroker.config import HttpConfig
from actorbroker.errors import ConfigError
from actorbroker.transport.stats import LogLimiter

from . import api_read, api_write, dashboard
from .context import OpsContext
from .guard import ConnectionGuard
from .prometheus import BrokerCollector, exposition
from .snapshot import take

__all__ = ["HttpListener", "TokenCheck", "open_http", "read_token"]

log = logging.getLogger("actorbroker.http")

#: Largest request body accepted (a log level change is a few bytes).
MAX_BODY = 64 * 1024
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class _OneLinePerInterval(logging.Filter):
    """aiohttp logs each malformed request with its traceback at ERROR: a flood of them
    would flood the log. Let one line through per ``interval`` s, as a WARNING with the
    parser's complaint, and count the rest into the next one."""

    def __init__(self, interval: float = 5.0) -> None:
        super().__init__()
        self._interval = interval
        self._next = 0.0
        self._held = 0

    def filter(self, record: logging.LogRecord) -> bool:
        now = time.monotonic()
        if now < self._next:
            self._held += 1
            return False
        self._next = now + self._interval
        why = record.exc_info[1] if record.exc_info else None
        record.msg = "http: refused a request from %s: %s (%d more since the last line)"
        detail = " ".join(str(why).split())[:200] if why else record.getMessage()
        record.args = (_peer_of(record), detail, self._held)
        record.exc_info = record.exc_text = None
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        self._held = 0
        return True


def _peer_of(record: logging.LogRecord) -> str:
    args = record.args if isinstance(record.args, tuple) else ()
    return str(args[0]) if args else "?"


#: What aiohttp logs about requests it could not parse (see _OneLinePerInterval).
_parser_log = logging.getLogger("actorbroker.http.requests")
_parser_log.addFilter(_OneLinePerInterval())


def read_token(path: str) -> str:
    """The token: the file's first line, stripped. Raises ConfigError if unusable."""
    try:
        with open(path, encoding="utf-8") as file:
            token = file.readline().strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"[http] token_file {path!r} cannot be read: {exc}",
                          key="http.token_file") from None
    if len(token) < 16:
        raise ConfigError(f"[http] token_file {path!r}: the token must have at least 16 "
                          "characters", key="http.token_file")
    return token


class TokenCheck:
    """Who may call the API (see the module doc)."""

    def __init__(self, token: str | None) -> None:
        self._token = token.encode() if token is not None else None
        self._limiter = LogLimiter(log)
        self.refused = 0

    def refusal(self, request: web.Request) -> str | None:
        """Why ``request`` is refused, or None if it may proceed."""
        if self._token is None:
            return None if _loopback(request.remote) else "not from the loopback, no token set"
        header = request.headers.get("Authorization", "")
        scheme, _, given = header.partition(" ")
        if scheme.lower() != "bearer" or not given:
            return "no bearer token"
        if not hmac.compare_digest(given.strip().encode(), self._token):
            return "wrong token"
        return None

    def refuse(self, request: web.Request, why: str) -> web.Response:
        self.refused += 1
        self._limiter.warning(time.monotonic(), "http: refused %s %s from %s: %s",
                              request.method, request.path, request.remote, why)
        return web.json_response({"error": "unauthorized", "detail": why}, status=401,
                                 headers={"WWW-Authenticate": 'Bearer realm="actorbroker"'})


def _loopback(remote: str | None) -> bool:
    try:
        return remote is not None and ipaddress.ip_address(remote).is_loopback
    except ValueError:
        return False


def build_app(ctx: OpsContext, auth: TokenCheck, guard_ref: list[ConnectionGuard]
              ) -> web.Application:
    """The aiohttp application: middlewares and routes."""
    registry = CollectorRegistry(auto_describe=False)
    collector = BrokerCollector()
    registry.register(collector)

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        guard = guard_ref[0] if guard_ref else None
        if guard is not None:
            guard.begin(request.transport)
        try:
            if request.path.startswith("/api/"):
                why = auth.refusal(request)
                if why is not None:
                    return auth.refuse(request, why)
            return await handler(request)
        except api_read.ApiError as exc:
            return web.json_response({"error": exc.message}, status=exc.status)
        finally:
            if guard is not None:
                guard.end(request.transport)

    async def metrics(_request: web.Request) -> web.Response:
        guard = guard_ref[0] if guard_ref else None
        http = {"unauthorized": auth.refused}
        if guard is not None:
            http.update(too_many=guard.refused, too_slow=guard.timeouts)
        snap = await take(ctx, tree_limit=1_000_000, http=http)
        body = exposition(registry, collector, snap)
        return web.Response(body=body, headers={
            "Content-Type": "text/plain; version=0.0.4; charset=utf-8"})

    app = web.Application(middlewares=[middleware], client_max_size=MAX_BODY)
    app.router.add_get("/metrics", metrics)
    api_read.add_routes(app.router, ctx)
    api_write.add_routes(app.router, ctx)
    dashboard.add_routes(app.router)
    return app


class HttpListener:
    """The running HTTP listener (a listener handle, see the module doc)."""

    def __init__(self, runner: web.AppRunner, server: asyncio.Server,
                 guard: ConnectionGuard) -> None:
        self._runner = runner
        self._server = server
        self.guard = guard
        sock = server.sockets[0].getsockname()
        self._port = int(sock[1])
        self.name = f"http://{sock[0]}:{self._port}"

    @property
    def port(self) -> int:
        return self._port

    async def close(self) -> None:
        """Stop accepting."""
        self._server.close()

    async def close_all(self) -> None:
        """Close every connection and let aiohttp finish."""
        self.guard.close_all()
        await self._runner.cleanup()
        log.info("stopped serving HTTP on %s", self.name)


async def open_http(ctx: OpsContext, config: HttpConfig) -> HttpListener:
    """Bind ``[http] bind:port`` and serve; raises OSError/ConfigError (a failed start)."""
    token = read_token(config.token_file) if config.token_file else None
    guard_ref: list[ConnectionGuard] = []
    app = build_app(ctx, TokenCheck(token), guard_ref)
    runner = web.AppRunner(app, access_log=None, keepalive_timeout=15.0, logger=_parser_log,
                           max_line_size=8190, max_field_size=8190, max_headers=64)
    await runner.setup()
    guard = ConnectionGuard(runner.server)  # type: ignore[arg-type]
    guard_ref.append(guard)
    loop = asyncio.get_running_loop()
    try:
        server = await loop.create_server(guard, config.bind, config.port, reuse_address=True)
    except OSError:
        await runner.cleanup()
        raise
    listener = HttpListener(runner, server, guard)
    log.info("serving HTTP (metrics, admin API) on %s", listener.name)
    return listener
