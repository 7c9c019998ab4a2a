"""AIAgent's keyword arguments (issue 15 item 9): unknown ones are a TypeError naming them, the
documented Hermes Agent ones are accepted (the cheap ones honoured), and the CLI factory still works."""
from __future__ import annotations

import argparse

import pytest

from agent.agent_kwargs import ACCEPTED, HONOURED, IGNORED
from hermes_core.config import HermesConfig, parse_config
from hermes_state import SessionDB
from run_agent import AIAgent
from tests.fake_provider import text, tool_calls


def test_a_misspelt_keyword_is_a_type_error_naming_it(make_agent, fake_provider):
    with pytest.raises(TypeError, match="'disabled_toolset'"):
        make_agent(disabled_toolset=["terminal"])  # meant disabled_toolsets: tools must not stay on
    with pytest.raises(TypeError, match=r"arguments 'bogus', 'enable_toolsets'"):
        make_agent(enable_toolsets=["file"], bogus=1)
    assert fake_provider.requests == []


def test_documented_hermes_agent_keywords_are_accepted(make_agent):
    for name in ("tool_delay", "verbose_logging", "ephemeral_system_prompt", "log_prefix_chars", "log_prefix",
                 "providers_allowed", "providers_ignored", "providers_order", "provider_sort", "max_tokens",
                 "reasoning_config", "prefill_messages", "iteration_budget", "fallback_model",
                 "clarify_callback", "step_callback", "thinking_callback", "reasoning_callback",
                 "stream_delta_callback", "honcho_session_key", "api_mode", "acp_command", "acp_args"):
        assert name in ACCEPTED
    ignored = {name: None for name in IGNORED}
    agent = make_agent(**ignored, tool_delay=0, verbose_logging=False, max_tokens=None)
    assert agent.tool_delay == 0.0
    assert not set(HONOURED) & set(IGNORED)


def test_ephemeral_system_prompt_and_max_tokens_reach_the_request_not_the_store(make_agent, fake_provider):
    fake_provider.queue(text("brief"))
    agent = make_agent(ephemeral_system_prompt="Answer in five words.", max_tokens=77)
    assert agent.run_conversation("hi")["final_response"] == "brief"
    body = fake_provider.requests[0]
    assert body["max_tokens"] == 77
    assert body["messages"][0]["content"].endswith("Answer in five words.")
    stored = SessionDB().get_session(agent.session_id)["system_prompt"]
    assert stored and "Answer in five words." not in stored


def test_tool_delay_is_honoured_between_tool_batches(make_agent, fake_provider, tmp_path, monkeypatch):
    import time

    slept = []
    monkeypatch.setattr(time, "sleep", slept.append)
    (tmp_path / "a.txt").write_text("a\n")
    fake_provider.queue(tool_calls([("read_file", {"path": "a.txt"})]), text("done"))
    make_agent(tool_delay=0.25).run_conversation("read it")
    assert slept == [0.25]


def test_the_cli_factory_builds_agents(hermes_home):
    from hermes_cli import agent_factory

    args = argparse.Namespace(base_url="http://127.0.0.1:9/v1", api_key="k", model="m", provider=None,
                              toolsets="file", yolo=False, max_turns=3)
    agent = agent_factory.build_agent(args, HermesConfig())
    assert isinstance(agent, AIAgent) and agent.max_iterations == 3
    assert {t["function"]["name"] for t in agent.tools} <= {"read_file", "write_file", "patch", "search_files"}


def test_configured_auxiliary_keys_are_masked_in_tool_output(make_agent, fake_provider, tmp_path):
    # issue 15 item 4: only the compression aux key was masked; keys of other auxiliary tasks leaked
    cfg = parse_config({"auxiliary": {"vision": {"api_key": "aux-vision-secret-123"},
                                      "compression": {"api_key": "aux-compress-secret-456"}}})
    (tmp_path / "leak.txt").write_text("vision aux-vision-secret-123 and aux-compress-secret-456\n")
    fake_provider.queue(tool_calls([("read_file", {"path": "leak.txt"})]), text("done"))
    make_agent(config=cfg).run_conversation("read it")
    tool_msg = fake_provider.requests[1]["messages"][-1]
    assert tool_msg["role"] == "tool" and "vision ***" in tool_msg["content"]
    assert "aux-vision-secret-123" not in str(fake_provider.requests)
    assert "aux-compress-secret-456" not in str(fake_provider.requests)
