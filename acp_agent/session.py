"""One editor session: a Hermes agent whose callbacks become ACP messages.

The agent runs its turn on a worker thread; what it reports (text deltas, reasoning, tool start
and end, the todo plan) is put on one queue that a task on the event loop drains into
``session/update`` notifications, in order, before the prompt's response goes out. An approval
question becomes ``session/request_permission`` and the thread waits for the editor's choice
(a cancel, or no answer within the timeout, is a deny). File tools go through the editor's
``fs/*`` when it offers them, so they see unsaved buffers and the editor sees the edits.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import logging
import os
import threading
from pathlib import Path
from typing import Any, Optional

from acp import schema

from acp_agent import content

log = logging.getLogger("hermes.acp")
DEFAULT_APPROVAL_TIMEOUT = 300.0
FS_TIMEOUT = 60.0


def approval_timeout() -> float:
    try:
        return max(0.1, float(os.environ.get("HERMES_APPROVAL_TIMEOUT", "")))
    except ValueError:
        return DEFAULT_APPROVAL_TIMEOUT


class EditorFiles:
    """``ToolContext.file_io`` over the client's ``fs/read_text_file`` / ``fs/write_text_file``."""

    def __init__(self, session: "Session", can_read: bool, can_write: bool) -> None:
        self.session, self.can_read, self.can_write = session, can_read, can_write

    def read_text(self, path: Path) -> str:
        request = self.session.conn.read_text_file(session_id=self.session.id, path=str(path))
        return self._ask_editor(request, f"read {path}").content

    def write_text(self, path: Path, text: str) -> None:
        request = self.session.conn.write_text_file(session_id=self.session.id, path=str(path),
                                                    content=text)
        self._ask_editor(request, f"write {path}")

    def _ask_editor(self, request: Any, what: str) -> Any:
        from tools.context import ToolError

        try:
            return self.session.call(request, FS_TIMEOUT)
        except concurrent.futures.TimeoutError:
            raise ToolError(f"the editor did not answer within {FS_TIMEOUT:g}s to {what}") from None
        except Exception as exc:  # the editor refused (no such buffer, permission): say so
            raise ToolError(f"the editor could not {what}: {exc}") from None


class Session:
    def __init__(self, agent: Any, conn: Any, loop: asyncio.AbstractEventLoop, cwd: Path,
                 fs: Optional[Any] = None) -> None:
        self.agent, self.conn, self.loop, self.cwd = agent, conn, loop, cwd
        self.lock = asyncio.Lock()  # one prompt at a time
        self.cancelled = threading.Event()
        self.mcp: list[Any] = []  # this session's MCP managers (servers the editor passed)
        self._updates: "asyncio.Queue[Optional[Any]]" = asyncio.Queue()
        self._last_tool: Optional[tuple[str, str, Any]] = None
        self._sender: Optional[asyncio.Task[None]] = None
        agent.hooks = dataclasses.replace(agent.hooks, tool_progress=self._on_tool,
                                          reasoning=self._on_thought, approval=self._ask)
        if fs is not None and (fs.read_text_file or fs.write_text_file):
            agent.file_io = EditorFiles(self, bool(fs.read_text_file), bool(fs.write_text_file))

    @property
    def id(self) -> str:
        return self.agent.session_id

    # -- from the worker thread -----------------------------------------------------------------
    def update(self, item: Any) -> None:
        self.loop.call_soon_threadsafe(self._updates.put_nowait, item)

    def call(self, coro: Any, timeout: float) -> Any:
        """Run a request to the editor from the worker thread; bounded by ``timeout``."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def _on_delta(self, text: str) -> None:
        if text:
            self.update(content.message_chunk(text))

    def _on_thought(self, text: str) -> None:
        if text:
            self.update(content.thought_chunk(text))

    def _on_tool(self, event: dict[str, Any]) -> None:
        call_id, name = str(event.get("id") or ""), str(event.get("name") or "")
        if event.get("type") == "tool_start":
            self._last_tool = (call_id, name, event.get("args"))
            self.update(content.tool_start(call_id, name, event.get("args"), self.cwd))
        elif event.get("type") == "tool_end":
            self.update(content.tool_end(call_id, bool(event.get("ok", True)),
                                         str(event.get("summary") or "")))
            if name == "todo":
                from tools.todo import get_todos

                self.update(content.plan(get_todos(self.id)))

    def _ask(self, command: str, reason: str) -> str:
        if self.cancelled.is_set():
            return "deny"
        call_id, name, args = self._last_tool or ("approval", "approval", None)
        tool_call = schema.ToolCallUpdate(
            tool_call_id=call_id, title=f"{reason}: {command}", status="pending",
            kind=content.tool_kind(name),  # type: ignore[arg-type]
            raw_input=args if args is not None else {"command": command})
        request = self.conn.request_permission(session_id=self.id, tool_call=tool_call,
                                               options=content.permission_options())
        future = asyncio.run_coroutine_threadsafe(request, self.loop)
        waited, limit = 0.0, approval_timeout()
        while waited < limit:
            try:
                return content.choice_of(future.result(0.1))
            except concurrent.futures.TimeoutError:
                waited += 0.1
                if self.cancelled.is_set():
                    future.cancel()
                    return "deny"
            except Exception as exc:  # the editor answered with an error: deny, and say why
                log.warning("permission request failed: %s", exc)
                return "deny"
        future.cancel()
        return "deny"

    # -- on the loop ----------------------------------------------------------------------------
    async def _send_updates(self) -> None:
        while True:
            item = await self._updates.get()
            if item is None:
                return
            try:
                await self.conn.session_update(session_id=self.id, update=item)
            except Exception as exc:  # the editor went away: the turn goes on, stored as usual
                log.debug("session/update failed: %s", exc)

    async def run(self, message: content.Message) -> dict[str, Any]:
        """One prompt: the agent's turn on a worker thread, its updates sent in order."""
        self.cancelled.clear()
        sender = asyncio.ensure_future(self._send_updates())
        try:
            return await asyncio.get_running_loop().run_in_executor(
                None, lambda: self.agent.run_conversation(message, stream_callback=self._on_delta))
        finally:
            self._updates.put_nowait(None)
            await sender

    def cancel(self) -> None:
        self.cancelled.set()
        self.agent.interrupt("cancelled by the editor")

    async def replay(self, rows: list[dict[str, Any]]) -> None:
        """An earlier transcript as updates (``session/load``): user and agent messages, tool
        calls with their results."""
        for row in rows:
            role, text = row.get("role"), content.message_text(row.get("content"))
            if role == "user" and text:
                await self._send(content.user_chunk(text))
            elif role == "assistant":
                if text:
                    await self._send(content.message_chunk(text))
                for call in row.get("tool_calls") or []:
                    if not isinstance(call, dict):
                        continue
                    fn = call.get("function") or {}
                    await self._send(content.tool_start(
                        str(call.get("id") or ""), fn.get("name", ""),
                        content.parse_args(fn.get("arguments")), self.cwd, status="completed"))
            elif role == "tool":
                await self._send(content.tool_end(str(row.get("tool_call_id") or ""), True,
                                                  text[:2000]))

    async def _send(self, update: Any) -> None:
        await self.conn.session_update(session_id=self.id, update=update)

    def close(self) -> None:
        for manager in self.mcp:
            manager.shutdown(2.0)
        self.agent.close()
