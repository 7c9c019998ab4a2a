"""The routes every API server has, in registration order (other features add theirs with
``APIServer.add_routes``)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from aiohttp import web

from gateway.platforms.api_server.wire import MODEL_ID

if TYPE_CHECKING:
    from gateway.platforms.api_server.server import APIServer


def builtin_registrars() -> list[Callable[["APIServer"], None]]:
    from gateway.platforms.api_server import chat, responses, sessions_api

    return [register_basics, chat.register, responses.register, sessions_api.register]


def register_basics(server: APIServer) -> None:
    """``/health``, ``/v1/models``, ``/v1/capabilities``."""
    async def health(_request: web.Request) -> web.Response:
        return web.json_response({"status": "ok" if server.runner.accepting else "draining",
                                  "platform": "hermes"})

    async def models(_request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [
            {"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "hermes"}]})

    async def capabilities(_request: web.Request) -> web.Response:
        return web.json_response(server.capabilities())

    server.add_endpoint("health", "GET", "/health", health)
    server.add_endpoint("models", "GET", "/v1/models", models)
    server.add_endpoint("capabilities", "GET", "/v1/capabilities", capabilities)
