"""A real AIAgent calling MCP tools, scripted through the loopback provider."""
from __future__ import annotations

import json

import pytest

from tests.fake_provider import text, tool_calls
from tests.mcp.conftest import Reports, server_entry, time_entry

pytestmark = pytest.mark.timeout(120)


def _tool_names(body: dict) -> set[str]:
    return {t["function"]["name"] for t in body.get("tools") or []}


def test_the_agent_calls_an_mcp_tool_and_reads_its_result(fake_provider, make_agent, start_mcp):
    start_mcp({"time": time_entry(), "s": server_entry()})
    # built while the servers are still connecting: its first turn waits for them
    agent = make_agent()
    fake_provider.queue(
        tool_calls([("mcp__time__get_current_time", {"timezone": "Europe/Paris"}),
                    ("mcp__s__fail", {"message": "disk on fire"})]),
        text("It is evening in Paris."))
    res = agent.run_conversation("What time is it in Paris?")
    assert res["completed"] and res["final_response"] == "It is evening in Paris."
    first = fake_provider.requests[0]
    assert {"mcp__time__get_current_time", "mcp__time__convert_time", "mcp__s__echo"} <= _tool_names(first)
    results = [m for m in res["messages"] if m["role"] == "tool"]
    assert json.loads(results[0]["content"])["timezone"] == "Europe/Paris"
    assert "disk on fire" in json.loads(results[1]["content"])["error"]  # isError -> a tool error
    assert _tool_names(fake_provider.requests[1]) == _tool_names(first)  # fixed for the session


def test_a_failed_server_leaves_the_agent_working(fake_provider, make_agent, start_mcp):
    reports = Reports()
    start_mcp({"broken": {"command": "no-such-mcp-server-anywhere"}}, reports)
    statuses: list[tuple[str, str]] = []
    agent = make_agent(status_callback=lambda kind, msg: statuses.append((kind, msg)))
    fake_provider.queue(text("fine without it"))
    res = agent.run_conversation("hello")
    assert res["completed"] and res["final_response"] == "fine without it"
    assert not any(n.startswith("mcp__") for n in _tool_names(fake_provider.requests[0]))
    assert len(reports.matching("MCP server broken failed to start")) == 1


def test_a_drop_mid_session_is_a_tool_error_the_model_reads(fake_provider, make_agent, start_mcp):
    start_mcp({"s": server_entry()})
    agent = make_agent()
    fake_provider.queue(tool_calls([("mcp__s__crash", {})]), tool_calls([("mcp__s__echo", {"text": "x"})]),
                        text("the server is restarting; I will try later"))
    res = agent.run_conversation("crash it")
    assert res["completed"]
    errors = [json.loads(m["content"]).get("error", "") for m in res["messages"] if m["role"] == "tool"]
    assert "server unavailable, retrying" in errors[0]
    assert errors[1] == "" or "server unavailable, retrying" in errors[1]
