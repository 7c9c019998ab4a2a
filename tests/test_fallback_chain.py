"""The fallback chain (issue 25): real agents, a loopback OpenAI primary that goes down and comes
back, a loopback Anthropic fallback; the rules of when to move on, tested directly."""
from __future__ import annotations

import socket
import time

import pytest

from agent.error_classifier import ClassifiedError, ErrorKind
from agent.providers.fallback import Chain, chain_of, moves_on
from tests.cli.conftest import hermes_env, run_hermes
from tests.conftest import write_config
from tests.fake_anthropic import text as claude_text
from tests.fake_provider import error, text


def down(status: int = 503):
    return error(status, f"upstream down ({status})", type="server_error",
                 headers={"Retry-After": "0"})


def _config(home, fa, cooldown: float) -> None:
    write_config(home, f"""fallback_providers:
  - provider: anthropic
    model: claude-fake-1
    base_url: {fa.base_url}
    api_key: sk-ant-fallback
fallback:
  cooldown: {cooldown}
""")


@pytest.fixture
def agent_on(fake_provider, hermes_home, tmp_path):
    from hermes_core.config import load_config
    from run_agent import AIAgent

    def make(**kw):
        notes: list = []
        agent = AIAgent(base_url=fake_provider.base_url, api_key="sk-primary", model="fake-model",
                        quiet_mode=True, skip_context_files=True, cwd=str(tmp_path),
                        config=load_config(),
                        status_callback=lambda kind, msg: notes.append((kind, msg)), **kw)
        agent.notes = notes
        return agent

    return make


def test_primary_down_then_back(agent_on, fake_provider, fake_anthropic, hermes_home):
    _config(hermes_home, fake_anthropic, cooldown=600)
    state = {"down": True}
    fake_provider.handler = lambda body: down() if state["down"] else text("primary again")
    fake_anthropic.default = claude_text("from the fallback")
    agent = agent_on()
    first = agent.run_conversation("hello")
    assert first["completed"] and first["final_response"] == "from the fallback"
    assert len(fake_provider.requests) == 4  # the first try and 3 retries, then the chain
    warnings = [m for k, m in agent.notes if k == "warning"]
    assert len(warnings) == 1 and "falling back to anthropic (claude-fake-1" in warnings[0]
    assert "sk-ant-fallback" not in warnings[0]
    assert fake_anthropic.keys_seen == ["sk-ant-fallback"]
    assert agent.context_compressor.context_length == 200_000  # compression: the active window
    # within the cooldown the turn stays on the fallback, and says nothing again
    assert agent.run_conversation("again")["final_response"] == "from the fallback"
    assert len(fake_provider.requests) == 4
    assert len([m for k, m in agent.notes if k == "warning"]) == 1
    # the conversation Anthropic was sent is the whole one
    assert [t["role"] for t in fake_anthropic.requests[-1]["messages"]] == ["user", "assistant",
                                                                         "user"]
    state["down"] = False
    chain_of(agent).clock = lambda: time.monotonic() + 601  # the cooldown is over
    back = agent.run_conversation("and now?")
    assert back["final_response"] == "primary again" and agent.provider == "custom"
    assert agent.context_compressor.context_length == 128_000
    assert any("Back on the primary provider" in m for _, m in agent.notes)
    said = [m.get("content") for m in fake_provider.requests[-1]["messages"]]
    assert "from the fallback" in said


def test_a_bad_request_does_not_fall_back(agent_on, fake_provider, fake_anthropic, hermes_home):
    _config(hermes_home, fake_anthropic, cooldown=60)
    fake_provider.queue(error(400, "messages.0: bad field", type="invalid_request_error"))
    result = agent_on().run_conversation("hello")
    assert result["failed"] and fake_anthropic.requests == []


@pytest.mark.parametrize("reply", [error(401, "bad key", type="invalid_api_key"),
                                   error(404, "The model `fake-model` does not exist")],
                         ids=["401", "model-not-found"])
def test_auth_and_missing_model_fall_back_at_once(agent_on, fake_provider, fake_anthropic,
                                                  hermes_home, reply):
    _config(hermes_home, fake_anthropic, cooldown=60)
    fake_provider.queue(reply)
    fake_anthropic.default = claude_text("fallback answer")
    result = agent_on().run_conversation("hello")
    assert result["final_response"] == "fallback answer"
    assert len(fake_provider.requests) == 1  # not retried: retries cannot fix these


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_cli_connection_refused_falls_back_and_says_so_once(fake_anthropic, hermes_home):
    _config(hermes_home, fake_anthropic, cooldown=60)
    fake_anthropic.default = claude_text("answered by claude")
    env = hermes_env(None, OPENAI_BASE_URL=f"http://127.0.0.1:{_closed_port()}/v1",
                     OPENAI_API_KEY="sk-primary", HERMES_MODEL="fake-model")
    res = run_hermes("-z", "hi", env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "answered by claude"
    assert res.stderr.count("falling back to anthropic") == 1


def test_when_to_move_on():
    def err(kind, status=None, message="x"):
        return ClassifiedError(kind, status, message)

    for kind in (ErrorKind.SERVER, ErrorKind.CONNECTION, ErrorKind.AUTH, ErrorKind.TIMEOUT,
                 ErrorKind.RATE_LIMIT):
        assert moves_on(err(kind, 500))
    assert moves_on(err(ErrorKind.CLIENT, 404, "not found"))
    assert moves_on(err(ErrorKind.CLIENT, 400, "model not found: gpt-9"))
    assert not moves_on(err(ErrorKind.CLIENT, 400, "messages.1.content: invalid"))
    assert not moves_on(err(ErrorKind.CONTEXT_OVERFLOW, 400, "prompt is too long"))
    assert not moves_on(err(ErrorKind.PAYLOAD_TOO_LARGE, 413))

    chain = Chain(size=2, cooldown=10)
    assert chain.next_after(0) == 1 and chain.next_after(1) == 2 and chain.next_after(2) is None
    chain.active, chain.since = 2, 100.0
    assert not chain.due_back(105.0) and chain.due_back(110.0)
