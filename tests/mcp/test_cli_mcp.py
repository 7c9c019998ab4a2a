"""`hermes mcp add/list/test/remove`, `hermes -z` and the REPL with MCP servers, as real processes."""
from __future__ import annotations

import json
import sys

import pexpect
import pytest
import yaml

from tests.cli.conftest import ROOT, hermes_env, run_hermes, strip_ansi
from tests.fake_provider import text, tool_calls
from tests.mcp.conftest import SERVER, server_entry, time_entry

pytestmark = pytest.mark.timeout(180)


def _config(home) -> dict:
    return yaml.safe_load((home / "config.yaml").read_text()) or {}


def test_add_list_test_remove(hermes_home):
    env = hermes_env()
    r = run_hermes("mcp", "add", "time", "--command", sys.executable, "--args", "-m", "mcp_server_time",
                   "--local-timezone", "UTC", env=env)
    assert r.returncode == 0, r.stderr
    assert _config(hermes_home)["mcp_servers"]["time"]["args"] == ["-m", "mcp_server_time", "--local-timezone", "UTC"]
    r = run_hermes("mcp", "add", "web", "--url", "http://127.0.0.1:9/mcp", "--header",
                   "Authorization=Bearer ${HERMES_TEST_WEB_TOKEN}", "--connect-timeout", "5", env=env)
    assert r.returncode == 0, r.stderr
    # the reference is written as typed, never the secret it stands for
    assert _config(hermes_home)["mcp_servers"]["web"]["headers"] == {"Authorization": "Bearer ${HERMES_TEST_WEB_TOKEN}"}
    r = run_hermes("mcp", "add", "time", "--command", "other", env=env)
    assert r.returncode == 1 and "already exists" in r.stderr and r.stderr.count("\n") == 1

    r = run_hermes("mcp", "list", "--json", env={**env, "HERMES_TEST_WEB_TOKEN": "sekrit-token-value"})
    assert r.returncode == 0, r.stderr
    rows = {row["name"]: row for row in json.loads(r.stdout)}
    assert rows["time"]["status"] == "connected" and rows["time"]["tools"] == 2
    assert rows["web"]["status"] == "failed" and "127.0.0.1:9" in rows["web"]["error"]
    assert "sekrit-token-value" not in r.stdout + r.stderr

    r = run_hermes("mcp", "list", env=env)  # the token is not set: that entry is invalid, the rest works
    assert r.returncode == 0
    assert "time" in r.stdout and "connected" in r.stdout and "2 tools" in r.stdout
    assert "HERMES_TEST_WEB_TOKEN" in r.stdout and "invalid" in r.stdout

    r = run_hermes("mcp", "test", "time", env=env)
    assert r.returncode == 0, r.stderr
    assert "mcp__time__get_current_time" in r.stdout and "Get current time" in r.stdout

    r = run_hermes("mcp", "test", "web", env={**env, "HERMES_TEST_WEB_TOKEN": "x" * 10})
    assert r.returncode == 1 and r.stderr.startswith("hermes: error: MCP server web could not connect")

    r = run_hermes("mcp", "remove", "web", env=env)
    assert r.returncode == 0 and "web" not in _config(hermes_home)["mcp_servers"]
    r = run_hermes("mcp", "remove", "web", env=env)
    assert r.returncode == 1 and "no MCP server named 'web'" in r.stderr
    r = run_hermes("mcp", "test", "nope", env=env)
    assert r.returncode == 1 and "no MCP server named 'nope'" in r.stderr


def test_add_refuses_what_cannot_work(hermes_home):
    env = hermes_env()
    for argv, why in ((["mcp", "add", "x", "--command", "c", "--header", "a=b"], "--header"),
                      (["mcp", "add", "x", "--url", "ftp://nope"], "http://"),
                      (["mcp", "add", "x", "--command", "c", "--env", "NOEQUALS"], "NAME=VALUE"),
                      (["mcp", "add", "x"], "one of the arguments")):
        r = run_hermes(*argv, env=env)
        assert r.returncode != 0 and why in r.stderr, (argv, r.stderr)
    assert not (hermes_home / "config.yaml").exists()


def test_oneshot_uses_mcp_tools_and_survives_a_bad_entry(hermes_home, fake_provider):
    (hermes_home / "config.yaml").write_text(yaml.safe_dump({"mcp_servers": {
        "time": time_entry(), "broken": {"command": "no-such-mcp-server-anywhere"},
        "typo": {"url": "ftp://x"}}}))
    fake_provider.queue(tool_calls([("mcp__time__get_current_time", {"timezone": "UTC"})]), text("It is now."))
    r = run_hermes("-z", "what time is it?", env=hermes_env(fake_provider))
    assert r.returncode == 0, r.stderr
    assert r.stdout == "It is now.\n"
    tools = {t["function"]["name"] for t in fake_provider.requests[0]["tools"]}
    assert "mcp__time__get_current_time" in tools
    result = [m for m in fake_provider.requests[1]["messages"] if m["role"] == "tool"][0]
    assert json.loads(result["content"])["timezone"] == "UTC"
    assert r.stderr.count("MCP server broken failed to start") == 1
    assert "mcp_servers.typo: `url`" in r.stderr


def test_repl_shows_servers_and_mcp_command(fake_provider, hermes_home):
    (hermes_home / "config.yaml").write_text(yaml.safe_dump({"mcp_servers": {"s": server_entry()}}))
    child = pexpect.spawn(sys.executable, ["-m", "hermes_cli.main"], env=hermes_env(fake_provider), cwd=str(ROOT),
                          encoding="utf-8", timeout=60, dimensions=(40, 160))
    try:
        child.expect("MCP: connecting s in the background")
        child.expect("❯")
        fake_provider.queue(tool_calls([("mcp__s__echo", {"text": "ping"})]), text("pong received"))
        child.send("call echo\r")
        child.expect("pong received")
        result = [m for m in fake_provider.requests[1]["messages"] if m["role"] == "tool"][0]
        assert result["content"] == "ping"
        child.expect("❯")
        child.send("/mcp\r")
        child.expect(r"s\s+connected\s+8 tools")
        child.expect("❯")
        child.sendcontrol("d")
        child.expect(pexpect.EOF, timeout=30)
        out = strip_ansi(child.before or "")
        assert "Traceback" not in out
    finally:
        if child.isalive():
            child.terminate(force=True)
