"""The Anthropic provider's converted history kept between requests (issue 25): each request's
body is exactly what a fresh conversion of its history gives, through compression, edits, other
sessions, and the breakpoints of earlier requests (which must not stay behind in the cache)."""
from __future__ import annotations

import copy

import pytest

from agent.providers.anthropic import history_cache
from agent.providers.anthropic.convert import build_request
from agent.summary_messages import SUMMARY_MARKER
from hermes_core.hooks import HOOKS
from tests.fake_anthropic import estimate_tokens, overflow, text

SUMMARY = ("## Goal\nKeep chatting.\n## Constraints and preferences\nNone\n## Completed actions\n"
           "Many turns.\n## Current state\nOngoing.\n## Key decisions\nNone\n## Relevant files\n"
           "None\n## Open questions\nNone\n## Next steps\nContinue.")
TOOL_CALL = {"id": "call.1", "type": "function",
             "function": {"name": "read_file", "arguments": '{"path": "a"}'}}


@pytest.fixture(autouse=True)
def empty_cache():
    history_cache.clear()
    yield
    history_cache.clear()


def cached(messages: list[dict], **kw) -> dict:
    return build_request(messages, model="m", max_tokens=100,
                         converter=history_cache.convert, **kw)


def fresh(messages: list[dict], **kw) -> dict:
    return build_request(copy.deepcopy(messages), model="m", max_tokens=100, **kw)


def chat(n: int, tag: str = "") -> list[dict]:
    msgs: list[dict] = [{"role": "system", "content": "sys"}]
    for i in range(n):
        msgs.append({"role": "user", "content": f"{tag}question {i}"})
        if i % 3 == 1:
            msgs.append({"role": "assistant", "content": None, "tool_calls": [
                {**TOOL_CALL, "id": f"call.{i}"}]})
            msgs.append({"role": "tool", "tool_call_id": f"call.{i}", "content": "file text"})
        msgs.append({"role": "assistant", "content": f"{tag}answer {i}"})
    return msgs


def test_a_growing_history_converts_like_a_fresh_one_and_breakpoints_do_not_linger():
    msgs = chat(6)
    for grow in range(5):
        assert cached(msgs) == fresh(msgs)
        msgs += [{"role": "user", "content": f"more {grow}"}]  # merges into nothing: new turn
        assert cached(msgs) == fresh(msgs)
        msgs += [{"role": "user", "content": "and"},  # merges into the cached last turn
                 {"role": "assistant", "content": f"reply {grow}"}]
    marked = [b for t in cached(msgs)["messages"] for b in t["content"] if "cache_control" in b]
    assert len(marked) == 1  # only the last message: no earlier request's breakpoint stayed


def test_edits_compression_and_other_sessions_all_invalidate():
    msgs, other = chat(8), chat(5, tag="other ")
    assert cached(msgs) == fresh(msgs) and cached(other) == fresh(other)
    msgs[5]["content"] = "edited in place"
    assert cached(msgs) == fresh(msgs)
    msgs[4]["tool_calls"][0]["function"]["arguments"] = '{"path": "b"}'  # nested, in place
    assert cached(msgs) == fresh(msgs)
    summary = {"role": "user", "content": SUMMARY_MARKER + SUMMARY}
    compacted = [msgs[0], msgs[1], summary, *msgs[-4:]]
    body = cached(compacted)
    assert body == fresh(compacted)
    assert sum("cache_control" in b for t in body["messages"] for b in t["content"]) == 2
    assert cached(other + [{"role": "user", "content": "x"}]) == fresh(other + [
        {"role": "user", "content": "x"}])
    assert cached(msgs) == fresh(msgs)  # the first session again
    assert cached(msgs[:-3]) == fresh(msgs[:-3])  # a shorter history (a retried turn)
    assert cached(msgs, thinking_budget=1024, thinking=lambda ids: None) == fresh(
        msgs, thinking_budget=1024, thinking=lambda ids: None)


def test_a_compressed_conversation_sends_the_bodies_of_a_fresh_conversion(
        fake_anthropic, hermes_home, tmp_path):
    from run_agent import AIAgent

    sent: list[list[dict]] = []
    HOOKS.add("pre_api_request", lambda messages, **_: sent.append(copy.deepcopy(messages)),
              owner="test-history-cache")
    try:
        agent = AIAgent(provider="anthropic", base_url=fake_anthropic.base_url, api_key="k",
                        model="claude-fake-1", quiet_mode=True, skip_context_files=True,
                        cwd=str(tmp_path), enabled_toolsets=["file"])
        for i in range(12):
            assert agent.run_conversation(f"note {i}: " + "lorem ipsum " * 120)["completed"]
        limit = estimate_tokens(fake_anthropic.requests[-1]) - 300
        fake_anthropic.handler = lambda body: (
            text(SUMMARY) if "hand-off notes" in str(body.get("system"))
            else overflow(estimate_tokens(body), limit) if estimate_tokens(body) > limit
            else text("short enough"))
        for i in range(4):
            assert agent.run_conversation(f"after {i}")["completed"]
    finally:
        HOOKS.remove_owner("test-history-cache")
    assert agent.compactions >= 1
    bodies = [b for b in fake_anthropic.requests if "hand-off notes" not in str(b.get("system"))]
    assert len(bodies) == len(sent) > 16
    for body, messages in zip(bodies, sent):
        expect = build_request(messages, model="claude-fake-1", max_tokens=8192)
        assert (body["system"], body["messages"]) == (expect["system"], expect["messages"])
