"""Ops layer: the dashboard page and its assets (``static/``, shipped as package data). Stdlib and aiohttp only.

``GET /`` is the page, ``GET /static/NAME`` one of its scripts or styles.
Only the files found in ``static/`` at start-up are served, by name (no path
from the request ever reaches the file system). The page holds no data and
no secret: it calls the admin API from the browser, with the token the
operator types when the API asks for one, so it is served without one.
"""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

__all__ = ["STATIC", "add_routes"]

STATIC = Path(__file__).with_name("static")
_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
}
_HEADERS = {
    # Revalidated on each load: a broker upgraded in place serves its new page.
    "Cache-Control": "no-cache",
    "X-Content-Type-Options": "nosniff",
    # Its own scripts only: a client id or a payload shown as markup could not run.
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
}


def _assets() -> dict[str, Path]:
    return {path.name: path for path in STATIC.iterdir() if path.suffix in _TYPES}


def add_routes(router: web.UrlDispatcher) -> None:
    """Register ``/`` and ``/static/{name}`` on ``router``."""
    assets = _assets()

    def serve(name: str) -> web.StreamResponse:
        path = assets.get(name)
        if path is None:
            raise web.HTTPNotFound()
        return web.FileResponse(path, headers={**_HEADERS, "Content-Type": _TYPES[path.suffix]})

    async def page(_request: web.Request) -> web.StreamResponse:
        return serve("index.html")

    async def asset(request: web.Request) -> web.StreamResponse:
        return serve(request.match_info["name"])

    router.add_get("/", page)
    router.add_get("/static/{name}", asset)
