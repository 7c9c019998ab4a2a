"""Changing sessions through the API: ``POST /api/sessions`` (a new, empty conversation),
``PATCH /api/sessions/{id}`` (its title), ``POST /api/sessions/{id}/fork`` (a copy of its live
history to go on differently; the original is untouched).

A session made or forked here belongs to the API key holder (source ``api_server``) and can be
continued with ``X-Hermes-Session-Id: <id>`` or a run's ``session_id``. A chat platform's session
can be renamed, but not forked (its transcript stays with its chat).
"""
from __future__ import annotations

import asyncio
from typing import Any, Optional

from aiohttp import web

from gateway.platforms.api_server.sessions_api import session_object
from gateway.platforms.api_server.wire import APIError, read_json

MAX_TITLE = 200


def parse_title(body: dict[str, Any], required: bool) -> Optional[str]:
    """The body's ``title`` (None clears it); 400 when it is not short printable text (pure)."""
    if "title" not in body:
        if required:
            raise APIError(400, "Send {\"title\": \"...\"} (null or \"\" clears it).",
                           param="title")
        return None
    title = body["title"]
    if title is None:
        return None
    if not isinstance(title, str) or len(title) > MAX_TITLE or not title.isprintable():
        raise APIError(400, f"'title' must be printable text of at most {MAX_TITLE} characters.",
                       param="title")
    return title.strip() or None


def _titled(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except ValueError as exc:  # the title is taken (titles are unique: `hermes -r TITLE`)
        raise APIError(409, str(exc), code="title_taken", param="title") from None


def _describe(runner: Any, sid: str) -> dict[str, Any]:
    row = runner.db.get_session(sid)
    if row is None:
        raise APIError(404, f"Session '{sid}' not found.", code="session_not_found")
    adoptable = not runner.sessions.owned_by_chat(sid, runner.adapters)
    return session_object(row, runner.is_busy(sid), adoptable)


def register(server: Any) -> None:
    runner = server.runner
    db = runner.db

    def describe(sid: str) -> dict[str, Any]:
        return _describe(runner, sid)

    async def create(request: web.Request) -> web.Response:
        body = await read_json(request, server.max_body) if request.body_exists else {}
        title = parse_title(body, required=False)

        def make() -> dict[str, Any]:
            from hermes_state import new_session_id

            sid = _titled(lambda: db.create_session(new_session_id(), source="api_server",
                                                    title=title))
            return describe(sid)

        return web.json_response(await asyncio.to_thread(make), status=201)

    async def rename(request: web.Request) -> web.Response:
        sid = request.match_info["session_id"]
        title = parse_title(await read_json(request, server.max_body), required=True)

        def change() -> dict[str, Any]:
            describe(sid)
            _titled(db.set_session_title, sid, title)
            return describe(sid)

        return web.json_response(await asyncio.to_thread(change))

    async def fork(request: web.Request) -> web.Response:
        sid = request.match_info["session_id"]
        body = await read_json(request, server.max_body) if request.body_exists else {}
        title = parse_title(body, required=False)

        def copy() -> dict[str, Any]:
            from hermes_state import new_session_id

            describe(sid)
            if runner.sessions.owned_by_chat(sid, runner.adapters):
                raise APIError(403, f"Session '{sid}' belongs to a chat platform conversation; it "
                                    "cannot be forked.", code="session_not_allowed")
            row = db.get_session(sid) or {}
            history = db.get_active_messages(sid)
            new = _titled(lambda: db.create_session(
                new_session_id(), source="api_server", model=row.get("model"), title=title,
                parent_session_id=sid, system_prompt=row.get("system_prompt")))
            if history:
                db.append_messages(new, history)
            return describe(new)

        return web.json_response(await asyncio.to_thread(copy), status=201)

    server.add_endpoint("session_create", "POST", "/api/sessions", create)
    server.add_endpoint("session_update", "PATCH", "/api/sessions/{session_id}", rename)
    server.add_endpoint("session_fork", "POST", "/api/sessions/{session_id}/fork", fork)
    server.features["sessions_write"] = True
