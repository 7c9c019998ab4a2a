"""The summary call: prompt building (pure), error handling (stub client), real HTTP (fake provider)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
from openai import OpenAI

from agent.context_compressor import ContextCompressor, is_summary_message, split_summary
from agent.summarizer import (
    SECTIONS,
    SummaryError,
    build_summary_prompt,
    make_summarizer,
    serialize_transcript,
)
from tests.fake_provider import error, garbage, slow, text

MIDDLE = [
    {"role": "user", "content": "Please fix the bug in src/app.py, I prefer tabs."},
    {"role": "assistant", "content": "Looking.", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "src/app.py"}'}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "def main():\n    pass\n" + "x" * 5000},
    {"role": "assistant", "content": "Fixed the off-by-one in main()."},
]


# ---------------------------------------------------------------------------------------
# prompt
# ---------------------------------------------------------------------------------------


def test_prompt_has_sections_and_compact_transcript():
    msgs = build_summary_prompt(MIDDLE, None, None, 1000)
    assert [m["role"] for m in msgs] == ["system", "user"]
    body = msgs[1]["content"]
    for name in SECTIONS:
        assert f"## {name}" in body
    assert "user: Please fix the bug in src/app.py" in body
    assert 'read_file({"path": "src/app.py"})' in body
    assert "tool result [c1]: def main():" in body
    assert "x" * 2000 not in body  # tool results are truncated
    assert "more chars]" in body
    assert "UPDATE" not in body and "EXISTING SUMMARY" not in body
    assert "700 words" in body


def test_prompt_with_previous_summary_asks_for_one_update():
    msgs = build_summary_prompt(MIDDLE, "## Goal\nship v1", "the database", 2000)
    body = msgs[1]["content"]
    assert "UPDATE" in body and "ONE merged summary" in body
    assert "EXISTING SUMMARY:\n<<<\n## Goal\nship v1\n>>>" in body
    assert "NEW TURNS:" in body
    assert "the database" in body
    assert body.index("EXISTING SUMMARY") < body.index("NEW TURNS")


def test_transcript_elides_middle_when_too_long():
    msgs = [{"role": "user", "content": f"message {i} " + "w" * 500} for i in range(200)]
    out = serialize_transcript(msgs, max_chars=10_000)
    assert len(out) < 11_000
    assert "message 0 " in out and "message 199 " in out
    assert "messages omitted for length" in out


def test_transcript_handles_odd_content():
    out = serialize_transcript([
        {"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "x"}}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "t", "arguments": "a" * 1000}}]},
        {"role": "tool", "tool_call_id": "a", "content": None},
        {"role": "assistant", "content": ""},
    ])
    assert "user: look | [image]" in out
    assert "calls t(" in out and "a" * 400 not in out
    assert "assistant: (empty)" in out


# ---------------------------------------------------------------------------------------
# stub client
# ---------------------------------------------------------------------------------------


class StubClient:
    def __init__(self, content=None, exc=None):
        self.kwargs = []
        self.content = content
        self.exc = exc
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self._create))

    def _create(self, **kwargs):
        self.kwargs.append(kwargs)
        if self.exc is not None:
            raise self.exc
        msg = SimpleNamespace(content=self.content)
        return SimpleNamespace(choices=[SimpleNamespace(message=msg)])


def test_summarize_passes_parameters_and_returns_text():
    client = StubClient(content="  <think>hmm</think>## Goal\nFix the bug.  ")
    summarize = make_summarizer(lambda: client, "aux-model", timeout=12.5)
    out = summarize(MIDDLE, previous_summary=None, focus=None, max_tokens=777)
    assert out == "## Goal\nFix the bug."
    kw = client.kwargs[0]
    assert kw["model"] == "aux-model" and kw["max_tokens"] == 777
    assert kw["temperature"] == 0.2 and kw["timeout"] == 12.5
    assert kw["messages"][0]["role"] == "system"


@pytest.mark.parametrize("client,needle", [
    (StubClient(exc=TimeoutError("read timed out")), "TimeoutError"),
    (StubClient(exc=RuntimeError("boom")), "boom"),
    (StubClient(content=""), "empty"),
    (StubClient(content="<think>only thoughts</think>"), "empty"),
    (StubClient(content=None), "NoneType"),
    (StubClient(content=["a", "list"]), "list"),
])
def test_summarize_errors_become_summary_error(client, needle):
    summarize = make_summarizer(lambda: client, "m")
    with pytest.raises(SummaryError) as info:
        summarize(MIDDLE)
    assert needle in str(info.value)


def test_client_getter_failure_is_summary_error():
    def getter():
        raise RuntimeError("no client configured")

    with pytest.raises(SummaryError, match="no client configured"):
        make_summarizer(getter, "m")(MIDDLE)


def test_response_without_choices():
    client = StubClient(content="x")
    client.chat.completions.create = lambda **kw: SimpleNamespace(choices=[])
    with pytest.raises(SummaryError, match="no choices"):
        make_summarizer(lambda: client, "m")(MIDDLE)


# ---------------------------------------------------------------------------------------
# real HTTP against the loopback fake provider
# ---------------------------------------------------------------------------------------


def _client(fp) -> OpenAI:
    return OpenAI(base_url=fp.base_url, api_key="test", max_retries=0)


def test_summarize_over_http(fake_provider):
    fake_provider.queue(text("## Goal\nFix src/app.py\n## Next steps\nRun the tests."))
    client = _client(fake_provider)
    summarize = make_summarizer(lambda: client, "fake-model", timeout=5)
    out = summarize(MIDDLE, previous_summary="## Goal\nolder", max_tokens=500)
    assert out.startswith("## Goal\nFix src/app.py")
    body = fake_provider.last_request
    assert body["model"] == "fake-model" and body["max_tokens"] == 500 and body["temperature"] == 0.2
    assert "EXISTING SUMMARY" in body["messages"][1]["content"]


@pytest.mark.parametrize("reply", [
    error(500, "upstream exploded", type="server_error"),
    error(401, "bad key", type="authentication_error"),
    garbage("not json at all"),
    text(""),
])
def test_http_failures_raise_summary_error(fake_provider, reply):
    fake_provider.queue(reply)
    client = _client(fake_provider)
    with pytest.raises(SummaryError):
        make_summarizer(lambda: client, "fake-model", timeout=5)(MIDDLE)


def test_http_timeout_raises_summary_error(fake_provider):
    fake_provider.queue(slow(text("too late"), 2.0))
    client = _client(fake_provider)
    with pytest.raises(SummaryError, match="Timeout"):
        make_summarizer(lambda: client, "fake-model", timeout=0.3)(MIDDLE)


def test_compressor_with_real_summarizer_end_to_end(fake_provider):
    fake_provider.queue(text("## Goal\nFirst summary of the early turns."),
                        text("## Goal\nSecond, merged summary."))
    client = _client(fake_provider)
    c = ContextCompressor(10_000, summarize=make_summarizer(lambda: client, "fake-model", timeout=5))
    history = []
    for i in range(40):
        history += [{"role": "user", "content": f"q{i} " + "x" * 300}, {"role": "assistant", "content": f"a{i} " + "y" * 300}]
    r1 = c.compress(history)
    assert r1.summarized
    r2 = c.compress(r1.messages + history[:20])
    assert r2.summarized
    found = [m for m in r2.messages if is_summary_message(m)]
    assert len(found) == 1 and split_summary(found[0])[0] == "## Goal\nSecond, merged summary."
    second_prompt = fake_provider.requests[1]["messages"][1]["content"]
    assert "EXISTING SUMMARY:\n<<<\n## Goal\nFirst summary of the early turns.\n>>>" in second_prompt


def test_compressor_survives_provider_failure(fake_provider):
    fake_provider.queue(error(503, "overloaded", type="server_error"))
    client = _client(fake_provider)
    c = ContextCompressor(10_000, summarize=make_summarizer(lambda: client, "fake-model", timeout=5))
    history = []
    for i in range(40):
        history += [{"role": "user", "content": f"q{i} " + "x" * 300}, {"role": "assistant", "content": f"a{i} " + "y" * 300}]
    r = c.compress(history)
    assert r.messages is history and not r.changed
    assert r.warning and r.warning.startswith("Context summary failed (InternalServerError")
    assert "60 s" in r.warning and "intact" in r.warning
