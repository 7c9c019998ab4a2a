"""Memory and session_search from a gateway session (API server, real agents, loopback provider)."""
from __future__ import annotations

import openai

from tests.fake_provider import text, tool_calls

SESSION = "X-Hermes-Session-Id"


def ask(gw, content: str, session: str) -> str:
    client = openai.OpenAI(base_url=gw.base_url, api_key=gw.api_key, max_retries=0, timeout=30)
    out = client.chat.completions.create(model="hermes-agent", messages=[{"role": "user", "content": content}],
                                         extra_headers={SESSION: session})
    return out.choices[0].message.content


def test_memory_written_in_one_chat_reaches_the_next_and_search_finds_it(make_gateway, provider_env,
                                                                         hermes_home):
    fp = provider_env
    gw = make_gateway(api=True)
    fp.queue(tool_calls([("memory", {"target": "user", "action": "add", "content": "Prefers metric units"})]),
             text("Noted."))
    assert ask(gw, "I like metric units; my locker code is walrus-7", "chat-one") == "Noted."
    assert (hermes_home / "memories" / "USER.md").read_text() == "Prefers metric units\n"

    fp.queue(tool_calls([("session_search", {"query": "locker"})]), text("walrus-7"))
    assert ask(gw, "What was my locker code?", "chat-two") == "walrus-7"
    second = fp.requests[-2]
    assert "Prefers metric units" in second["messages"][0]["content"]  # the new session's snapshot
    result = [m["content"] for m in fp.requests[-1]["messages"] if m["role"] == "tool"][-1]
    assert "walrus-7" in result and "api_server" in result


def test_an_unknown_toolset_in_config_stops_the_gateway_at_start_up(hermes_home, fake_provider):
    import os
    import subprocess
    import sys

    from tests.gateway.conftest import REPO

    (hermes_home / "config.yaml").write_text("toolsets:\n  disabled: [terminl]\n")
    env = dict(os.environ, HERMES_HOME=str(hermes_home), OPENAI_BASE_URL=fake_provider.base_url,
               OPENAI_API_KEY="k", API_SERVER_KEY="a-key-long-enough-0123456789", PYTHONPATH=str(REPO))
    out = subprocess.run([sys.executable, "-m", "hermes_cli.main", "gateway", "run", "--api-server", "--port", "0"],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "READY" not in out.stdout
    assert "unknown toolset 'terminl'" in out.stderr and "valid toolsets: terminal" in out.stderr
