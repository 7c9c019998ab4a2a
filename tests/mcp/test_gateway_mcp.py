"""The gateway loads the MCP servers once per process; every session shares them."""
from __future__ import annotations

import pytest
import yaml

from tests.fake_provider import text, tool_calls
from tests.gateway.conftest import GatewayProcess
from tests.mcp.conftest import pid_alive, server_entry, wait_for

pytestmark = pytest.mark.timeout(180)


def _tool_result(body: dict) -> str:
    return [m for m in body["messages"] if m["role"] == "tool"][-1]["content"]


def test_two_sessions_share_one_server_that_stops_with_the_gateway(hermes_home, fake_provider):
    (hermes_home / "config.yaml").write_text(yaml.safe_dump({"mcp_servers": {"s": server_entry()}}))
    gw = GatewayProcess(hermes_home, fake_provider.base_url)
    try:
        pids = []
        for session in ("alice", "bob"):
            fake_provider.queue(tool_calls([("mcp__s__pid", {})]), text(f"done for {session}"))
            answer = gw.post_async("which pid serves you?", session).get(timeout=90)
            assert isinstance(answer, dict), answer
            assert answer["choices"][0]["message"]["content"] == f"done for {session}"
            pids.append(int(_tool_result(fake_provider.last_request)))
        assert pids[0] == pids[1] and pid_alive(pids[0])
    finally:
        assert gw.terminate_and_wait() == 0
    wait_for(lambda: not pid_alive(pids[0]), 15, "the server to stop with the gateway")
    log = (hermes_home / "logs" / "gateway.log").read_text()
    assert "MCP server s connected" in log
