"""What the dashboard's JSON handlers share: refusals as OpenAI-style error bodies, bounded
JSON bodies, and running blocking work off the event loop.

The dashboard mounts on an API server it is handed (``register(server)``), whose middleware has
already checked the Host, the Origin and the key: these handlers only do their own work.
"""
from __future__ import annotations

import asyncio
import functools
import json
from typing import Any, Awaitable, Callable

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Refusal(Exception):
    """A request the dashboard will not carry out; the message says what to do instead."""

    def __init__(self, status: int, message: str, code: str = "invalid_request") -> None:
        super().__init__(message)
        self.status, self.message, self.code = status, message, code


def error_body(status: int, message: str, code: str) -> web.Response:
    kind = "not_found" if status == 404 else "invalid_request_error"
    return web.json_response({"error": {"message": message, "type": kind, "param": None,
                                        "code": code}}, status=status)


def handler(fn: Callable[[web.Request], Awaitable[Any]]) -> Handler:
    """``fn`` returns a JSON-able value (or a response); a ``Refusal`` becomes its error body."""
    @functools.wraps(fn)
    async def run(request: web.Request) -> web.StreamResponse:
        try:
            out = await fn(request)
        except Refusal as exc:
            return error_body(exc.status, exc.message, exc.code)
        return out if isinstance(out, web.StreamResponse) else web.json_response(out)
    return run


async def body(request: web.Request, limit: int) -> dict[str, Any]:
    """The request's JSON object; a Refusal when it is too big or not an object."""
    raw = await request.content.read(limit + 1)
    if len(raw) > limit:
        raise Refusal(413, f"Request body is larger than {limit} bytes.", "request_too_large")
    try:
        data = json.loads(raw or b"{}")
    except ValueError as exc:
        raise Refusal(400, f"Request body is not valid JSON: {exc}", "invalid_json") from None
    if not isinstance(data, dict):
        raise Refusal(400, "Request body must be a JSON object.", "invalid_json")
    return data


async def off_loop(fn: Callable[..., Any], *args: Any) -> Any:
    return await asyncio.to_thread(fn, *args)


def text_field(data: dict[str, Any], name: str, limit: int = 1 << 20) -> str:
    value = data.get(name)
    if not isinstance(value, str) or len(value) > limit:
        raise Refusal(400, f"'{name}' must be text of at most {limit} characters.", "invalid_field")
    return value
