"""The MCP tools Hermes offers, over a backend that runs the turns.

A message starts a turn and waits for it (``wait_seconds``); when the agent asks for approval
first, or the wait ends, the answer says so with the run's id: ``approvals_list`` and
``approval_answer`` settle the question, ``run_status`` waits again. Results are JSON text.
"""
from __future__ import annotations

import json
from typing import Any, Optional, Protocol

from mcp.types import ToolAnnotations

READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                       open_world_hint=False)
ACT = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=True)
MAX_WAIT = 600


class Backend(Protocol):
    async def conversations(self, limit: int, query: Optional[str]) -> list[dict[str, Any]]: ...
    async def read(self, session_id: str, limit: int) -> dict[str, Any]: ...
    async def send(self, text: str, session_id: Optional[str], wait: float) -> dict[str, Any]: ...
    async def status(self, run_id: str, wait: float) -> dict[str, Any]: ...
    async def approvals(self) -> list[dict[str, Any]]: ...
    async def answer(self, run_id: str, choice: str, wait: float) -> dict[str, Any]: ...
    async def jobs(self) -> list[dict[str, Any]]: ...
    async def run_job(self, job: str) -> dict[str, Any]: ...


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _wait(seconds: float) -> float:
    return max(0.0, min(float(seconds), MAX_WAIT))


def build(backend: Backend, version: str = "0") -> Any:
    """The MCP server (``MCPServer``), its tools bound to ``backend``."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("hermes", version=version, log_level="WARNING",
                       instructions="Hermes, a personal agent: read its conversations, send it a "
                                    "message, answer its approval questions, run its cron jobs.")

    @server.tool(description="Recent conversations, or those matching a full-text query.",
                 annotations=READ)
    async def conversations_list(limit: int = 20, query: Optional[str] = None) -> str:
        return _json(await backend.conversations(max(1, min(limit, 100)), query or None))

    @server.tool(description="The messages of one conversation (oldest first).", annotations=READ)
    async def conversation_read(session_id: str, limit: int = 50) -> str:
        return _json(await backend.read(session_id, max(1, min(limit, 500))))

    @server.tool(description="Send a message to a conversation (new one when session_id is "
                             "empty) and wait up to wait_seconds for the answer.", annotations=ACT)
    async def message_send(text: str, session_id: Optional[str] = None,
                           wait_seconds: float = 120) -> str:
        return _json(await backend.send(text, session_id or None, _wait(wait_seconds)))

    @server.tool(description="A run's status and answer; waits up to wait_seconds for progress.",
                 annotations=READ)
    async def run_status(run_id: str, wait_seconds: float = 0) -> str:
        return _json(await backend.status(run_id, _wait(wait_seconds)))

    @server.tool(description="Questions the agent is waiting on (commands needing approval).",
                 annotations=READ)
    async def approvals_list() -> str:
        return _json(await backend.approvals())

    @server.tool(description="Answer a run's pending approval: once, always (this session) or "
                             "deny; then wait up to wait_seconds for the answer.", annotations=ACT)
    async def approval_answer(run_id: str, choice: str, wait_seconds: float = 120) -> str:
        return _json(await backend.answer(run_id, choice, _wait(wait_seconds)))

    @server.tool(description="The scheduled (cron) jobs.", annotations=READ)
    async def cron_list() -> str:
        return _json(await backend.jobs())

    @server.tool(description="Run a cron job now (by id or unique name); it is delivered as "
                             "usual.", annotations=ACT)
    async def cron_run(job: str) -> str:
        return _json(await backend.run_job(job))

    return server
