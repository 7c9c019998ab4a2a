"""Issue 26 part 1: ``hermes acp`` as a real subprocess, driven by the ``agent-client-protocol``
SDK's own client side (``spawn_agent_process``), agents on the loopback fake provider.

A tool-calling turn (a read through the editor's ``fs/read_text_file``, the todo plan, a
dangerous command whose permission request the test answers, streamed text and the model's
reasoning as a thought), a cancel mid-turn, and the load of an earlier session in a new process.
"""
from __future__ import annotations

import asyncio
import base64
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fake_provider import slow, text, tool_calls

acp = pytest.importorskip("acp")
schema = acp.schema
REPO = Path(__file__).resolve().parents[2]
MCP_SERVER = str(REPO / "tests" / "mcp" / "server.py")


class Editor:
    """The editor side: records updates, answers permission requests, serves its buffers."""

    def __init__(self, answer: str = "allow_once", buffers: dict[str, str] | None = None) -> None:
        self.answer, self.buffers = answer, buffers or {}
        self.updates: list[Any] = []
        self.permissions: list[Any] = []
        self.written: dict[str, str] = {}

    async def request_permission(self, options, session_id, tool_call, **_):
        self.permissions.append((tool_call, [o.option_id for o in options]))
        return schema.RequestPermissionResponse(
            outcome=schema.AllowedOutcome(outcome="selected", option_id=self.answer))

    async def session_update(self, session_id, update, **_):
        self.updates.append(update)

    async def read_text_file(self, path, session_id, line=None, limit=None, **_):
        return schema.ReadTextFileResponse(content=self.buffers[path])

    async def write_text_file(self, content, path, session_id, **_):
        self.written[path] = content
        return schema.WriteTextFileResponse()

    def on_connect(self, conn):
        pass

    def kinds(self) -> list[str]:
        return [u.session_update for u in self.updates]

    def said(self, kind: str = "agent_message_chunk") -> str:
        return "".join(u.content.text for u in self.updates if u.session_update == kind)


def _env(hermes_home: Path, provider: Any) -> dict[str, str]:
    return {"HERMES_HOME": str(hermes_home), "OPENAI_BASE_URL": provider.base_url,
            "OPENAI_API_KEY": "test-key", "HERMES_MODEL": "fake-model", "PYTHONPATH": str(REPO)}


async def _connect(editor: Editor, env: dict[str, str], cwd: Path):
    caps = schema.ClientCapabilities(fs=schema.FileSystemCapabilities(read_text_file=True,
                                                                      write_text_file=True))
    ctx = acp.spawn_agent_process(lambda _agent: editor, sys.executable, "-m", "hermes_cli.main",
                                  "acp", env=env, cwd=cwd)
    conn, proc = await ctx.__aenter__()
    init = await asyncio.wait_for(conn.initialize(protocol_version=1, client_capabilities=caps), 60)
    return ctx, conn, proc, init


def test_a_turn_with_tools_a_permission_a_cancel_and_a_load(hermes_home, fake_provider, tmp_path):
    project = tmp_path / "project"
    (project / "junk").mkdir(parents=True)
    (project / "notes.txt").write_text("on disk\n")
    buffers = {str(project / "notes.txt"): "unsaved buffer text\n"}
    fake_provider.queue(
        tool_calls([("read_file", {"path": "notes.txt"}, "call_read"),
                    ("todo", {"todos": [{"id": "1", "content": "tidy up",
                                         "status": "in_progress"}]}, "call_todo")]),
        tool_calls([("terminal", {"command": "rm -r junk"}, "call_rm")]),
        text("All tidy.", reasoning="The junk folder is not needed."))
    env = _env(hermes_home, fake_provider)

    async def first_process() -> str:
        editor = Editor(buffers=buffers)
        ctx, conn, proc, init = await _connect(editor, env, project)
        try:
            caps = init.agent_capabilities
            assert caps.load_session is True and caps.prompt_capabilities.image is True
            assert caps.session_capabilities.list is not None
            assert init.auth_methods and init.auth_methods[0].id == "hermes-config"
            new = await conn.new_session(cwd=str(project), mcp_servers=[])
            reply = await asyncio.wait_for(conn.prompt(
                session_id=new.session_id, prompt=[acp.text_block("tidy up this project")]), 120)
            assert reply.stop_reason == "end_turn"
            kinds = editor.kinds()
            assert "tool_call" in kinds and "tool_call_update" in kinds and "plan" in kinds
            starts = {u.tool_call_id: u for u in editor.updates if u.session_update == "tool_call"}
            assert starts["call_read"].kind == "read"
            assert starts["call_read"].locations[0].path == str(project / "notes.txt")
            assert starts["call_rm"].kind == "execute" and "rm -r junk" in starts["call_rm"].title
            plan = [u for u in editor.updates if u.session_update == "plan"][-1]
            assert [(e.content, e.status) for e in plan.entries] == [("tidy up", "in_progress")]
            tool_call, options = editor.permissions[0]
            assert "rm -r junk" in tool_call.title and "allow_once" in options
            assert editor.said() == "All tidy."
            assert editor.said("agent_thought_chunk") == "The junk folder is not needed."
            assert not (project / "junk").exists()
            read_result = [m for m in fake_provider.requests[1]["messages"]
                           if m.get("tool_call_id") == "call_read"][0]["content"]
            assert "unsaved buffer text" in read_result and "on disk" not in read_result
            # cancel mid-turn: the provider is slow, the editor cancels
            fake_provider.queue(slow(text("too late"), 30))
            count = len(fake_provider.requests)
            turn = asyncio.ensure_future(conn.prompt(session_id=new.session_id,
                                                     prompt=[acp.text_block("take your time")]))
            while len(fake_provider.requests) <= count:
                await asyncio.sleep(0.05)
            await conn.cancel(session_id=new.session_id)
            cancelled = await asyncio.wait_for(turn, 20)
            assert cancelled.stop_reason == "cancelled"
            return new.session_id
        finally:
            await ctx.__aexit__(None, None, None)

    sid = asyncio.run(first_process())

    async def second_process() -> None:
        editor = Editor()
        ctx, conn, proc, _ = await _connect(editor, env, project)
        try:
            listed = await conn.list_sessions(cwd=str(project))
            assert sid in [s.session_id for s in listed.sessions]
            editor_server = schema.McpServerStdio(name="ed", command=sys.executable,
                                                  args=[MCP_SERVER, "--name", "ed"], env=[])
            await conn.load_session(cwd=str(project), session_id=sid, mcp_servers=[editor_server])
            assert editor.said("user_message_chunk").startswith("tidy up this project")
            assert "All tidy." in editor.said()
            assert "tool_call" in editor.kinds()
            editor.updates.clear()
            fake_provider.queue(text("You asked me to tidy up."))
            image = base64.b64encode(b"\x89PNG\r\n\x1a\nfake").decode()
            reply = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[
                acp.text_block("what did I ask?"), acp.image_block(image, "image/png")]), 60)
            assert reply.stop_reason == "end_turn" and editor.said() == "You asked me to tidy up."
            offered = {t["function"]["name"] for t in fake_provider.last_request["tools"]}
            assert "mcp__ed__echo" in offered  # the editor's MCP server, started for the session
            sent = fake_provider.last_request["messages"]
            users = [m["content"] for m in sent if m["role"] == "user"]
            assert users[0] == "tidy up this project"
            assert users[-1][0] == {"type": "text", "text": "what did I ask?"}
            assert users[-1][1]["image_url"]["url"].startswith("data:image/png;base64,")
            with pytest.raises(acp.RequestError):
                await conn.load_session(cwd=str(project), session_id="no-such-session",
                                        mcp_servers=[])
        finally:
            await ctx.__aexit__(None, None, None)

    asyncio.run(second_process())
    assert os.path.exists(hermes_home / "logs" / "acp.log")
