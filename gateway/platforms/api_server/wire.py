"""OpenAI-shaped errors and request bodies: what every route of the API server shares.

Every error a client sees is OpenAI's ``{"error": {"message", "type", "param", "code"}}`` JSON, so
the official SDKs raise their usual exception classes. Bodies are read in bounded chunks and refused
past the configured size before they are parsed.
"""
from __future__ import annotations

import json
from typing import Any, Optional

from aiohttp import web

MODEL_ID = "hermes-agent"
ROLES = ("system", "developer", "user", "assistant", "tool")


class APIError(Exception):
    """Raised by a handler; the middleware turns it into an OpenAI error response."""

    def __init__(self, status: int, message: str, type_: str = "invalid_request_error",
                 code: Optional[str] = None, param: Optional[str] = None,
                 headers: Optional[dict[str, str]] = None) -> None:
        super().__init__(message)
        self.status, self.message, self.type, self.code, self.param = (status, message, type_,
                                                                       code, param)
        self.headers = headers


def error_response(status: int, message: str, type_: str = "invalid_request_error",
                   code: Optional[str] = None, param: Optional[str] = None,
                   headers: Optional[dict[str, str]] = None) -> web.Response:
    body = {"error": {"message": message, "type": type_, "param": param, "code": code}}
    return web.json_response(body, status=status, headers=headers)


async def read_json(request: web.Request, max_bytes: int) -> dict[str, Any]:
    """The request body as a JSON object; 413 past ``max_bytes`` (checked while reading), 400
    otherwise."""
    too_big = APIError(413, f"Request body is larger than {max_bytes} bytes.",
                       code="request_too_large")
    if request.content_length is not None and request.content_length > max_bytes:
        raise too_big
    data = bytearray()
    while True:
        chunk = await request.content.read(65536)
        if not chunk:
            break
        data += chunk
        if len(data) > max_bytes:
            raise too_big
    try:
        body = json.loads(bytes(data) or b"null")
    except ValueError as exc:
        raise APIError(400, f"Request body is not valid JSON: {exc}", code="invalid_json") from None
    if not isinstance(body, dict):
        raise APIError(400, "Request body must be a JSON object.", code="invalid_json")
    return body


def text_of(content: Any) -> str:
    """Chat or responses content (a string or a list of parts) -> plain text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
    return "" if content is None else str(content)


def usage_of(result: dict[str, Any]) -> tuple[int, int]:
    """(prompt, completion) tokens of a turn result."""
    return int(result.get("prompt_tokens") or 0), int(result.get("completion_tokens") or 0)


def check_roles(items: list[dict[str, Any]], param: str, required: bool) -> None:
    for n, item in enumerate(items):
        role = item.get("role")
        if (role is not None or required) and role not in ROLES:
            raise APIError(400, f"{param}[{n}].role must be one of {', '.join(ROLES)}, "
                                f"not {role!r}.", param=param)


def query_int(request: web.Request, name: str, default: int, low: int, high: int) -> int:
    """An integer query parameter within [low, high]; 400 naming it otherwise."""
    raw = request.query.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise APIError(400, f"'{name}' must be an integer, not {raw!r}.", param=name) from None
    if not low <= value <= high:
        raise APIError(400, f"'{name}' must be between {low} and {high}.", param=name)
    return value
