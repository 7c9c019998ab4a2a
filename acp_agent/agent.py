"""Hermes as an ACP agent (``hermes acp``): the methods an editor calls over JSON-RPC on stdio.

``initialize`` (capabilities: load, list, images, embedded context, MCP over stdio/HTTP/SSE),
``session/new|load|list`` (Hermes sessions in the store; a load replays the transcript),
``session/prompt`` (one turn, streamed as updates), ``session/cancel``. The editor's ``cwd`` is
the session's working directory; MCP servers it passes are started for that session.
"""
from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Optional

from acp import PROTOCOL_VERSION, RequestError, schema

from acp_agent import content
from acp_agent.session import Session

log = logging.getLogger("hermes.acp")
AgentFactory = Callable[[Optional[str], str], Any]  # (session id or None, cwd) -> AIAgent
PAGE = 50


def mcp_config(servers: list[Any]) -> dict[str, dict[str, Any]]:
    """The editor's MCP servers as ``mcp_servers`` entries of config.yaml (pure)."""
    out: dict[str, dict[str, Any]] = {}
    for s in servers or []:
        if isinstance(s, schema.McpServerStdio):
            out[s.name] = {"command": s.command, "args": list(s.args),
                           "env": {e.name: e.value for e in s.env}}
        elif getattr(s, "url", None):
            entry = {"url": s.url, "headers": {h.name: h.value for h in s.headers}}
            if getattr(s, "type", None) == "sse":
                entry["transport"] = "sse"
            out[s.name] = entry
    return out


def _iso(ts: Any) -> Optional[str]:
    try:
        return datetime.fromtimestamp(float(ts), timezone.utc).isoformat()
    except (TypeError, ValueError):
        return None


class HermesAgent:
    def __init__(self, factory: AgentFactory, db: Any, version: str = "0") -> None:
        self.factory, self.db, self.version = factory, db, version
        self.conn: Any = None
        self.sessions: dict[str, Session] = {}
        self.cwds: dict[str, str] = {}
        self.fs: Optional[schema.FileSystemCapabilities] = None

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, client_capabilities: Any = None,
                         client_info: Any = None, **_: Any) -> schema.InitializeResponse:
        self.fs = getattr(client_capabilities, "fs", None)
        caps = schema.AgentCapabilities(
            load_session=True,
            prompt_capabilities=schema.PromptCapabilities(image=True, embedded_context=True),
            mcp_capabilities=schema.McpCapabilities(http=True, sse=True),
            session_capabilities=schema.SessionCapabilities(list=schema.SessionListCapabilities()))
        auth = [schema.AuthMethodAgent(
            id="hermes-config", name="Hermes configuration",
            description="Uses the model provider set up in HERMES_HOME (`hermes setup`); "
                        "there is nothing to log in to here.")]
        return schema.InitializeResponse(protocol_version=min(protocol_version, PROTOCOL_VERSION),
                                         agent_capabilities=caps, auth_methods=auth,
                                         agent_info=schema.Implementation(
                                             name="hermes", title="Hermes", version=self.version))

    async def authenticate(self, method_id: str, **_: Any) -> schema.AuthenticateResponse:
        if method_id != "hermes-config":
            raise RequestError.invalid_params({"method_id": f"unknown method {method_id!r}"})
        return schema.AuthenticateResponse()

    async def _open(self, session_id: Optional[str], cwd: str, mcp_servers: Any) -> Session:
        loop = asyncio.get_running_loop()
        agent = await asyncio.to_thread(self.factory, session_id, cwd)
        session = Session(agent, self.conn, loop, Path(cwd), self.fs)
        servers = mcp_config(mcp_servers)
        if servers:
            session.mcp.append(await asyncio.to_thread(_start_mcp, servers))
        self.sessions[session.id] = session
        self.cwds[session.id] = cwd
        return session

    async def new_session(self, cwd: str, mcp_servers: Any = None, **_: Any
                          ) -> schema.NewSessionResponse:
        session = await self._open(None, cwd, mcp_servers)
        return schema.NewSessionResponse(session_id=session.id)

    async def load_session(self, cwd: str, session_id: str, mcp_servers: Any = None, **_: Any
                           ) -> schema.LoadSessionResponse:
        if session_id not in self.sessions:
            row = await asyncio.to_thread(self.db.get_session, session_id)
            if row is None:
                raise RequestError.resource_not_found(session_id)
        old = self.sessions.pop(session_id, None)
        if old is not None:
            old.close()
        session = await self._open(session_id, cwd, mcp_servers)
        rows = await asyncio.to_thread(self.db.get_messages, session_id)
        await session.replay(rows)
        return schema.LoadSessionResponse()

    async def list_sessions(self, cwd: Optional[str] = None, cursor: Optional[str] = None,
                            **_: Any) -> schema.ListSessionsResponse:
        offset = int(cursor) if cursor and cursor.isdigit() else 0
        rows, more = await asyncio.to_thread(self.db.recent_sessions, PAGE, offset, False)
        here = cwd or str(Path.cwd())
        infos = [schema.SessionInfo(session_id=r["id"], cwd=self.cwds.get(r["id"], here),
                                    title=r.get("title") or (r.get("preview") or "")[:80] or None,
                                    updated_at=_iso(r.get("updated_at") or r.get("started_at")))
                 for r in rows]
        return schema.ListSessionsResponse(sessions=infos,
                                           next_cursor=str(offset + PAGE) if more else None)

    async def prompt(self, prompt: list[Any], session_id: str, **_: Any) -> schema.PromptResponse:
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params({"session_id": "unknown session; call session/new "
                                                             "or session/load first"})
        async with session.lock:
            result = await session.run(content.prompt_message(prompt))
        if result.get("failed") and result.get("error") and not session.cancelled.is_set():
            log.warning("turn failed: %s", result["error"])
            warning = content.message_chunk(f"⚠ {result['error']}")
            await session.conn.session_update(session_id=session_id, update=warning)
        return schema.PromptResponse(stop_reason=content.stop_reason(  # type: ignore[arg-type]
            result, session.cancelled.is_set()))

    async def cancel(self, session_id: str, **_: Any) -> None:
        session = self.sessions.get(session_id)
        if session is not None:
            session.cancel()

    def close(self) -> None:
        for session in self.sessions.values():
            session.close()
        self.sessions.clear()


def _start_mcp(servers: dict[str, dict[str, Any]]) -> Any:
    import os

    from hermes_core.config import hermes_home
    from tools.mcp.config import parse_servers
    from tools.mcp.manager import MCPManager

    parsed, errors = parse_servers(servers, os.environ)
    for line in errors:
        log.warning("%s", line)
    return MCPManager(parsed, log_dir=hermes_home() / "logs").start()
