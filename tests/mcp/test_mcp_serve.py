"""Issue 26 part 3: ``hermes mcp serve`` (a real subprocess on stdio) driven by the ``mcp`` SDK's
client: list/read conversations, send a message and get the answer, a command that needs
approval listed and answered, cron jobs listed and run. Agents talk to the fake provider."""
from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
import yaml

from tests.fake_provider import text, tool_calls

pytestmark = pytest.mark.timeout(180)
REPO = Path(__file__).resolve().parents[2]
CONFIG = {"gateway": {"toolsets": ["terminal", "file", "todo", "memory"]}}


def _params(home: Path, provider):
    from mcp.client.stdio import StdioServerParameters

    env = {"HERMES_HOME": str(home), "OPENAI_BASE_URL": provider.base_url,
           "OPENAI_API_KEY": "test-key", "HERMES_MODEL": "fake-model", "PYTHONPATH": str(REPO),
           "PATH": "/usr/bin:/bin"}
    return StdioServerParameters(command=sys.executable, args=["-m", "hermes_cli.main", "mcp",
                                                               "serve"], env=env, cwd=str(REPO))


async def _call(client, name: str, **args):
    result = await client.call_tool(name, args)
    text_out = "".join(getattr(c, "text", "") for c in result.content)
    if result.is_error:
        return None, text_out
    return json.loads(text_out), None


def test_conversations_messages_approvals_and_cron(hermes_home, fake_provider):
    from mcp import Client

    from cron.jobs import create_job
    from hermes_state import SessionDB

    (hermes_home / "config.yaml").write_text(yaml.safe_dump(CONFIG))
    workspace = hermes_home / "workspace"
    (workspace / "junk").mkdir(parents=True)
    db = SessionDB()
    create_job(db, prompt="say hi", schedule="every 1d", name="greeting")
    db.close()
    fake_provider.queue(text("Noted: 7."))

    async def drive() -> None:
        async with Client(_params(hermes_home, fake_provider), read_timeout_seconds=120) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"conversations_list", "conversation_read", "message_send", "run_status",
                    "approvals_list", "approval_answer", "cron_list", "cron_run"} <= names
            sent, err = await _call(client, "message_send", text="remember 7")
            assert err is None and sent["status"] == "completed" and sent["output"] == "Noted: 7."
            sid = sent["session_id"]
            listed, _ = await _call(client, "conversations_list")
            assert sid in [c["id"] for c in listed]
            read, _ = await _call(client, "conversation_read", session_id=sid)
            assert [m["content"] for m in read["messages"]] == ["remember 7", "Noted: 7."]
            found, _ = await _call(client, "conversations_list", query="remember")
            assert sid in [h["session_id"] for h in found]
            # a command that needs approval: the answer waits for it
            fake_provider.queue(tool_calls([("terminal", {"command": "rm -r junk"}, "c1")]),
                                text("Removed junk."))
            asked, _ = await _call(client, "message_send", text="delete junk", session_id=sid)
            assert asked["status"] == "waiting_for_approval"
            assert asked["pending_approval"]["command"] == "rm -r junk"
            pending, _ = await _call(client, "approvals_list")
            assert [p["run_id"] for p in pending] == [asked["run_id"]]
            assert (workspace / "junk").exists()
            done, _ = await _call(client, "approval_answer", run_id=asked["run_id"], choice="once")
            assert done["status"] == "completed" and done["output"] == "Removed junk."
            assert not (workspace / "junk").exists()
            assert (await _call(client, "approvals_list"))[0] == []
            # cron
            jobs, _ = await _call(client, "cron_list")
            assert [j["name"] for j in jobs] == ["greeting"]
            fake_provider.queue(text("hi"))
            started, _ = await _call(client, "cron_run", job="greeting")
            assert started["status"] == "running" and started["job_id"] == jobs[0]["id"]
            # refusals are tool errors with a line to act on
            _, err = await _call(client, "conversation_read", session_id="nope")
            assert err and "conversations_list" in err
            _, err = await _call(client, "approval_answer", run_id=asked["run_id"], choice="once")
            assert err and "no pending approval" in err

    asyncio.run(drive())
    assert (hermes_home / "logs" / "mcp-serve.log").exists()
