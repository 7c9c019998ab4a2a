"""The sessions API: ``GET /api/sessions`` (paged, newest first), ``GET /api/sessions/{id}``,
``GET /api/sessions/{id}/messages``, ``DELETE /api/sessions/{id}`` (409 while a turn runs).

Every session is visible to the key holder (the owner), chat platforms' included; ``adoptable`` says
whether ``X-Hermes-Session-Id`` may continue it (a chat's transcript stays with its chat).
"""
from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from gateway.platforms.api_server.wire import APIError, query_int

SESSION_FIELDS = ("id", "title", "source", "model", "parent_session_id", "started_at", "updated_at",
                  "ended_at", "end_reason", "message_count", "prompt_tokens", "completion_tokens",
                  "compactions")
MESSAGE_FIELDS = ("id", "role", "content", "tool_calls", "tool_call_id", "tool_name", "created_at")


def session_object(row: dict[str, Any], running: bool, adoptable: bool) -> dict[str, Any]:
    out = {"object": "hermes.session", **{k: row.get(k) for k in SESSION_FIELDS}}
    if "preview" in row:
        out["preview"] = row["preview"]
    return {**out, "running": running, "adoptable": adoptable}


def message_object(row: dict[str, Any]) -> dict[str, Any]:
    return {"object": "hermes.message", **{k: row.get(k) for k in MESSAGE_FIELDS},
            "active": bool(row.get("active", 1))}


def _flag(request: web.Request, name: str) -> bool:
    value = request.query.get(name, "").lower()
    if value not in ("", "0", "1", "true", "false"):
        raise APIError(400, f"'{name}' must be true or false.", param=name)
    return value in ("1", "true")


def register(server: Any) -> None:
    routes = _SessionRoutes(server.runner)
    server.add_endpoint("sessions_list", "GET", "/api/sessions", routes.list_sessions)
    server.add_endpoint("session_get", "GET", "/api/sessions/{session_id}", routes.get_session)
    server.add_endpoint("session_messages", "GET", "/api/sessions/{session_id}/messages",
                        routes.messages)
    server.add_endpoint("session_delete", "DELETE", "/api/sessions/{session_id}", routes.delete)
    server.features["sessions_api"] = True


class _SessionRoutes:
    """The handlers; store reads run off the event loop."""

    def __init__(self, runner: Any) -> None:
        self.runner, self.db = runner, runner.db

    def describe(self, row: dict[str, Any]) -> dict[str, Any]:
        adoptable = not self.runner.sessions.owned_by_chat(row["id"], self.runner.adapters)
        return session_object(row, self.runner.is_busy(row["id"]), adoptable)

    def find(self, session_id: str) -> dict[str, Any]:
        row = self.db.get_session(session_id)
        if row is None:
            raise APIError(404, f"Session '{session_id}' not found.", code="session_not_found")
        return row

    async def list_sessions(self, request: web.Request) -> web.Response:
        limit = query_int(request, "limit", 20, 1, 100)
        offset = query_int(request, "offset", 0, 0, 10_000_000)
        source = request.query.get("source") or None

        def read() -> list[dict[str, Any]]:
            rows = self.db.list_sessions(limit=limit + 1, offset=offset, source=source)
            return [self.describe(r) for r in rows]

        rows = await asyncio.to_thread(read)
        return web.json_response({"object": "list", "data": rows[:limit], "limit": limit,
                                  "offset": offset, "has_more": len(rows) > limit})

    async def get_session(self, request: web.Request) -> web.Response:
        sid = request.match_info["session_id"]
        return web.json_response(await asyncio.to_thread(lambda: self.describe(self.find(sid))))

    async def messages(self, request: web.Request) -> web.Response:
        sid = request.match_info["session_id"]
        limit = query_int(request, "limit", 100, 1, 1000)
        offset = query_int(request, "offset", 0, 0, 10_000_000)
        inactive = _flag(request, "include_inactive")

        def read() -> list[dict[str, Any]]:
            self.find(sid)
            return self.db.get_messages(sid, include_inactive=inactive)

        rows = await asyncio.to_thread(read)
        page = [message_object(r) for r in rows[offset:offset + limit]]
        return web.json_response({"object": "list", "session_id": sid, "data": page,
                                  "limit": limit, "offset": offset,
                                  "has_more": offset + limit < len(rows)})

    async def delete(self, request: web.Request) -> web.Response:
        from gateway.runner import SessionBusy

        sid = request.match_info["session_id"]
        try:
            deleted = await self.runner.delete_session(sid)
        except SessionBusy:
            raise APIError(409, f"Session '{sid}' is running a turn; stop it or try again when it "
                                "is done.", code="session_busy") from None
        if not deleted:
            raise APIError(404, f"Session '{sid}' not found.", code="session_not_found")
        return web.json_response({"id": sid, "object": "hermes.session", "deleted": True})
