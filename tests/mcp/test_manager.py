"""The connection manager with real MCP servers: registration, calls, failures, reconnects."""
from __future__ import annotations

import json
import threading
import time

import pytest

from tests.mcp.conftest import Reports, pid_alive, server_entry, time_entry, wait_for
from tools import registry
from tools.registry import ToolContext, ToolError

pytestmark = pytest.mark.timeout(120)


def call(name: str, args: dict | None = None) -> str:
    return registry.dispatch(name, args or {}, ToolContext(cwd="."))


def test_the_real_time_server_tools_become_agent_tools(start_mcp, hermes_home):
    manager = start_mcp({"time": time_entry()})
    registry.settle()
    assert manager.statuses()[0].status == "connected"
    assert registry.get_toolset("mcp__time__get_current_time") == "mcp-time"
    defs = {d["function"]["name"]: d["function"] for d in registry.get_tool_definitions()}
    params = defs["mcp__time__convert_time"]["parameters"]
    assert params["type"] == "object" and "source_timezone" in params["properties"]
    out = json.loads(call("mcp__time__get_current_time", {"timezone": "Asia/Tokyo"}))
    assert out["timezone"] == "Asia/Tokyo" and out["datetime"].endswith("+09:00")
    with pytest.raises(ToolError, match="Invalid timezone"):  # the server's isError result
        call("mcp__time__get_current_time", {"timezone": "Mars/Olympus"})
    logs = hermes_home / "logs" / "mcp"
    assert (logs / "time.log").stat().st_mode & 0o777 == 0o600 and logs.stat().st_mode & 0o777 == 0o700


def test_one_server_results_errors_timeouts_env_and_shutdown(start_mcp, monkeypatch):
    from tools.mcp.manager import shutdown_servers

    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-leak-1234")
    monkeypatch.setenv("HERMES_MCP_TEST_TOKEN", "tok-configured-5678")
    reports = Reports()
    start_mcp({"s": server_entry("--junk-stdout", "--bad-schema", "--colliding-names", timeout=1,
                                 env={"SERVER_TOKEN": "${HERMES_MCP_TEST_TOKEN}", "MODE": "ro"})}, reports)
    registry.settle()
    assert call("mcp__s__add", {"a": 2, "b": "3"}) == "5"  # "3" coerced by the registry's checks
    assert json.loads(call("mcp__s__weather", {"city": "Oslo"})) == {"city": "Oslo", "temp_c": 21, "sky": "clear"}
    with pytest.raises(ToolError, match="it broke"):  # isError -> a tool error
        call("mcp__s__fail", {"message": "it broke"})
    # a call that hangs costs its timeout, then the server keeps working
    started = time.monotonic()
    with pytest.raises(ToolError, match=r"within 1 s \(mcp_servers.s.timeout\)"):
        call("mcp__s__sleep", {"seconds": 30})
    assert time.monotonic() - started < 10
    assert call("mcp__s__echo", {"text": "still here"}) == "still here"
    # an interrupt ends a call at once
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()
    with pytest.raises(ToolError, match="interrupted"):
        registry.dispatch("mcp__s__sleep", {"seconds": 0.9}, ToolContext(cwd=".", interrupt_event=stop))
    # a junk stdout line was skipped; the broken schema and the colliding name were reported once
    assert registry.get_toolset("mcp__s__bad_schema") is None
    assert reports.matching("'bad_schema' is left out", "warning")
    assert len(reports.matching("both become mcp__s__get_item", "warning")) == 1
    assert call("mcp__s__get_item") == "underscored"
    # only the safe base set and the configured variables reach the child
    names = call("mcp__s__env_names").split()
    assert "SERVER_TOKEN" in names and "MODE" in names and "PATH" in names
    assert "OPENAI_API_KEY" not in names and "HERMES_MCP_TEST_TOKEN" not in names and "HERMES_HOME" not in names
    # shutdown ends the server and takes its tools away
    pid = int(call("mcp__s__pid"))
    shutdown_servers()
    assert registry.get_toolset("mcp__s__echo") is None
    wait_for(lambda: not pid_alive(pid), 10, "the server process to exit")


def test_failures_at_start_are_reported_once_and_do_not_block_the_others(start_mcp):
    reports = Reports()
    manager = start_mcp({
        "good": server_entry(),
        "missing": {"command": "no-such-mcp-server-anywhere"},
        "hangs": server_entry("--hang-startup", connect_timeout=2),
        "junk": server_entry("--only-junk", connect_timeout=2),
        "typo": {"command": "x", "timeout": "soon"},
    }, reports)
    notes: list[str] = []
    started = time.monotonic()
    registry.settle(notes.append)
    assert time.monotonic() - started < 15  # bounded by connect_timeout, not by the hung server
    status = {s.name: s for s in manager.statuses()}
    assert status["good"].status == "connected" and status["good"].tools
    assert notes and "Waiting for MCP servers" in notes[0]
    assert status["missing"].status == "failed" and "not found on PATH" in status["missing"].error
    wait_for(lambda: status["hangs"].status == "failed" or manager.statuses()[2].status == "failed",
             15, "the hung server to fail")
    wait_for(lambda: manager.statuses()[3].status == "failed", 15, "the junk server to fail")
    assert "no MCP handshake within 2 s" in manager.statuses()[2].error
    junk = manager.statuses()[3].error
    assert "non-MCP output" in junk and "this is not JSON-RPC" in junk
    assert len(reports.matching("MCP server missing failed to start", "error")) == 1
    assert reports.matching("mcp_servers.typo: `timeout`", "error")
    assert call("mcp__good__echo", {"text": "fine"}) == "fine"


def test_a_dead_server_is_reconnected_and_its_tools_stay_offered(start_mcp):
    reports = Reports()
    manager = start_mcp({"s": server_entry()}, reports)
    registry.settle()
    first_pid = int(call("mcp__s__pid"))
    with pytest.raises(ToolError, match="server unavailable, retrying"):
        call("mcp__s__crash")
    assert registry.get_toolset("mcp__s__echo") == "mcp-s"  # still offered while it reconnects
    try:
        call("mcp__s__echo", {"text": "now?"})
    except ToolError as exc:  # until it is back, a clear error, not an unknown tool
        assert "server unavailable, retrying" in str(exc)
    wait_for(lambda: manager.statuses()[0].status == "connected", 40, "the reconnect")
    assert call("mcp__s__echo", {"text": "back"}) == "back"
    assert int(call("mcp__s__pid")) != first_pid
    assert not pid_alive(first_pid)
    assert reports.matching("disconnected", "warning") and reports.matching("reconnected", "info")


def test_streamable_http_server_drop_and_come_back(start_mcp, http_server):
    reports = Reports()
    manager = start_mcp({"web": {"url": http_server.url, "headers": {"Authorization": "Bearer tok-abcdefgh"},
                                 "timeout": 5, "connect_timeout": 10}}, reports)
    registry.settle()
    assert manager.statuses()[0].status == "connected"
    assert call("mcp__web__add", {"a": 40, "b": 2}) == "42"
    http_server.stop()
    with pytest.raises(ToolError, match="server unavailable, retrying"):
        call("mcp__web__echo", {"text": "gone?"})
    http_server.start()
    wait_for(lambda: manager.statuses()[0].status == "connected", 40, "the HTTP reconnect")
    assert call("mcp__web__echo", {"text": "back"}) == "back"
    assert not any("tok-abcdefgh" in line for _, line in reports.lines)
