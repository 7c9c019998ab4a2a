"""The native Anthropic provider (issue 25): real AIAgent turns over the ``anthropic`` SDK against
the loopback Messages API fake (tests/fake_anthropic.py): tools, streaming, thinking, images,
prompt caching, 429/529 with Retry-After, errors inside a stream, overflow and compression."""
from __future__ import annotations

import pytest

from agent.providers.anthropic.convert import build_request, content_blocks
from hermes_state import SessionDB
from tests.fake_anthropic import (error, exceeds_limit, overflow, overloaded, rate_limited,
                                  stream_error, text, tool_use, estimate_tokens)

SUMMARY = ("## Goal\nKeep chatting.\n## Constraints and preferences\nNone\n## Completed actions\n"
           "Many turns.\n## Current state\nOngoing.\n## Key decisions\nNone\n## Relevant files\n"
           "None\n## Open questions\nNone\n## Next steps\nContinue.")


@pytest.fixture
def claude(fake_anthropic, hermes_home, tmp_path):
    from run_agent import AIAgent

    def make(**kw):
        kw.setdefault("provider", "anthropic")
        kw.setdefault("base_url", fake_anthropic.base_url)
        kw.setdefault("api_key", "sk-ant-test")
        kw.setdefault("model", "claude-fake-1")
        kw.setdefault("quiet_mode", True)
        kw.setdefault("skip_context_files", True)
        kw.setdefault("cwd", str(tmp_path))
        return AIAgent(**kw)

    return make


def is_summary(body: dict) -> bool:
    return "hand-off notes" in str(body.get("system"))


def test_a_tool_calling_turn_streams_and_shows_thinking(claude, fake_anthropic, tmp_path):
    (tmp_path / "a.txt").write_text("the answer is 42\n")
    fake_anthropic.queue(tool_use([("read_file", {"path": str(tmp_path / "a.txt")})],
                                  thinking="I should read the file"),
                         text("It says 42.", thinking="done reading"))
    agent = claude()
    thoughts, deltas = [], []
    agent.reasoning_callback = thoughts.append
    result = agent.run_conversation("what is in a.txt?", stream_callback=deltas.append)
    assert result["completed"] and result["final_response"] == "It says 42."
    assert "".join(deltas) == "It says 42."
    assert thoughts == ["I should read the file", "done reading"]
    second = fake_anthropic.requests[1]
    assert second["stream"] is True
    call, answer = second["messages"][1]["content"], second["messages"][2]["content"]
    assert [b["type"] for b in call] == ["tool_use"]
    assert answer[0]["type"] == "tool_result" and answer[0]["tool_use_id"] == call[0]["id"]
    assert "the answer is 42" in str(answer[0]["content"])
    assert {t["name"] for t in second["tools"]} >= {"read_file"}
    assert fake_anthropic.keys_seen == ["sk-ant-test", "sk-ant-test"]
    # the store holds the OpenAI shape, whichever provider wrote it
    rows = SessionDB().get_messages(agent.session_id)
    assistant = [r for r in rows if r["role"] == "assistant"]
    assert assistant[0]["tool_calls"][0]["function"]["name"] == "read_file"
    assert [r["role"] for r in rows] == ["user", "assistant", "tool", "assistant"]


def test_prompt_cache_is_read_on_later_turns_and_counted(claude, fake_anthropic):
    agent = claude()
    reads = []
    for i in range(4):
        result = agent.run_conversation(f"message {i}")
        assert result["completed"]
        reads.append(result["cache_read_tokens"])
    body = fake_anthropic.requests[-1]
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert reads[0] == 0 and all(r > 0 for r in reads[1:])
    assert agent.session_cache_read_tokens == fake_anthropic.cache_read
    assert fake_anthropic.cache_read / fake_anthropic.prompt_tokens > 0.5
    # prompt_tokens counts the whole prompt, cached part included (as OpenAI reports it)
    assert agent.session_prompt_tokens == fake_anthropic.prompt_tokens


@pytest.mark.parametrize("failure", [rate_limited(0.2), overloaded(), stream_error()],
                         ids=["429", "529", "error-event-in-stream"])
def test_rate_limits_and_overload_are_retried(claude, fake_anthropic, failure):
    fake_anthropic.queue(failure, text("fine after all"))
    notes = []
    agent = claude(status_callback=lambda kind, msg: notes.append((kind, msg)))
    result = agent.run_conversation("hi", stream_callback=lambda _d: None)
    assert result["completed"] and result["final_response"] == "fine after all"
    retries = [m for k, m in notes if k == "retry"]
    assert len(retries) == 1
    if failure.status == 429:
        assert "retrying in 0.2s" in retries[0]  # the provider's retry-after


def test_a_bad_request_fails_at_once_with_the_providers_words(claude, fake_anthropic):
    fake_anthropic.queue(error(400, "invalid_request_error", "tools.0.name: bad name"))
    result = claude().run_conversation("hi")
    assert result["failed"] and "tools.0.name: bad name" in result["error"]
    assert len(fake_anthropic.requests) == 1


@pytest.mark.parametrize("wording", ["prompt-too-long", "exceeds-context-limit"])
def test_overflow_compresses_and_teaches_the_window(claude, fake_anthropic, wording):
    agent = claude(enabled_toolsets=["file"])
    for i in range(20):
        assert agent.run_conversation(f"note {i}: " + "lorem ipsum " * 200)["completed"]
    limit = 3500
    overflows = []

    def reply(body):
        if is_summary(body):
            return text(SUMMARY)
        n = estimate_tokens(body)
        if n > limit:
            overflows.append(n)
            if wording == "prompt-too-long":
                return overflow(n, limit)
            return exceeds_limit(n - body["max_tokens"], body["max_tokens"], limit)
        return text("short enough")

    fake_anthropic.handler = reply
    result = agent.run_conversation("next")
    assert result["completed"] and result["final_response"] == "short enough"
    assert agent.compactions >= 1 and overflows
    assert agent.context_compressor.context_length <= limit
    assert any(is_summary(b) for b in fake_anthropic.requests)


def test_images_become_image_blocks():
    parts = [{"type": "text", "text": "what is this?"},
             {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
             {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}}]
    assert content_blocks(parts) == [
        {"type": "text", "text": "what is this?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                     "data": "iVBORw0KGgo="}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}}]


def test_an_image_turn_reaches_the_api_as_an_image_block(claude, fake_anthropic):
    parts = [{"type": "text", "text": "describe"},
             {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]
    result = claude().run_conversation(parts)
    assert result["completed"]
    blocks = fake_anthropic.requests[0]["messages"][0]["content"]
    assert [b["type"] for b in blocks] == ["text", "image"]


def test_requests_alternate_and_pair_every_tool_result():
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "assistant", "content": "hello from a summary"},
        {"role": "user", "content": "a"}, {"role": "user", "content": "b"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call.1", "type": "function", "function": {"name": "t", "arguments": "{}"}},
            {"id": "call.2", "type": "function", "function": {"name": "t", "arguments": "oops"}}]},
        {"role": "tool", "tool_call_id": "call.1", "content": "r1"},
        {"role": "tool", "tool_call_id": "call.2", "content": ""},
    ]
    body = build_request(messages, model="m", max_tokens=100)
    roles = [t["role"] for t in body["messages"]]
    assert roles == ["user", "assistant", "user", "assistant", "user"]
    uses = [b for b in body["messages"][3]["content"] if b["type"] == "tool_use"]
    results = [b for b in body["messages"][4]["content"] if b["type"] == "tool_result"]
    assert [u["id"] for u in uses] == [r["tool_use_id"] for r in results] == ["call_1", "call_2"]
    assert uses[1]["input"] == {"raw_arguments": "oops"}
    assert results[1]["content"] == "(empty)"
    assert body["system"][0]["text"] == "sys"
