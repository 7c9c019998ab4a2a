"""Mounting the dashboard on an API server: its page (three static files shipped in
``dashboard/static``, no CDN, no build step) and its JSON routes.

The page itself holds no data and is served without the key; everything it shows comes from
keyed routes, called with the token in an ``Authorization`` header (never a cookie, so another
site's page cannot make the browser send it). The server's middleware checks Host and Origin.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from aiohttp import web

STATIC = Path(__file__).parent / "static"
FILES = {"index.html": "text/html", "app.js": "text/javascript", "pages.js": "text/javascript",
         "app.css": "text/css"}
PREFIX = "/dashboard/"
# the page runs only its own script and style and talks only to its own server
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
       "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")


def _file_handler(name: str, mime: str) -> Any:
    data = (STATIC / name).read_bytes()

    async def serve(_request: web.Request) -> web.Response:
        return web.Response(body=data, content_type=mime, charset="utf-8",
                            headers={"Content-Security-Policy": CSP, "Cache-Control": "no-cache",
                                     "X-Content-Type-Options": "nosniff",
                                     "Referrer-Policy": "no-referrer"})

    return serve


def register(server: Any) -> None:
    """The dashboard on ``server`` (an ``APIServer``): ``/dashboard/`` and ``/api/dashboard/*``."""
    from dashboard import library, settings

    index = _file_handler("index.html", FILES["index.html"])
    server.add_public_file(PREFIX, index)
    for name, mime in FILES.items():
        server.add_public_file(PREFIX + name, _file_handler(name, mime))

    async def home(_request: web.Request) -> web.Response:
        raise web.HTTPFound(PREFIX)

    async def no_icon(_request: web.Request) -> web.Response:
        return web.Response(status=204)

    server.add_public_file("/", home)
    server.add_public_file("/favicon.ico", no_icon)
    settings.register(server)
    library.register(server)
    server.features["dashboard"] = True
