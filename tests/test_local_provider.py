"""The embedded local provider, against the real SmolLM2 GGUF through llama-cpp-python.

Skipped (with the reason) only when llama_cpp or the GGUF is not installed; `make test` installs both.
"""
from __future__ import annotations

import json
import threading

import pytest

from agent.error_classifier import ErrorKind, classify_error
from agent.providers.local import LocalClient, LocalModelUnavailable, local_available
from tests.local_model import needs_model

GET_TIME = {"type": "function", "function": {
    "name": "get_time", "description": "Get the current time",
    "parameters": {"type": "object", "properties": {}}}}


@pytest.fixture(scope="module")
def client() -> LocalClient:
    c = LocalClient()
    c.context_length  # load once for the module
    return c


# ------------------------------------------------------------------ no llama needed

def test_missing_model_path_is_helpful(tmp_path):
    with pytest.raises(LocalModelUnavailable) as exc:
        LocalClient(model_path=str(tmp_path / "nope.gguf"))
    msg = str(exc.value)
    assert "nope.gguf" in msg and "model.path" in msg and "config.yaml" in msg


def test_non_gguf_file_is_rejected(tmp_path):
    bad = tmp_path / "model.gguf"
    bad.write_bytes(b"not a model")
    with pytest.raises(LocalModelUnavailable, match="not a GGUF"):
        LocalClient(model_path=str(bad))
    ok, detail = local_available(model_path=str(bad))
    assert not ok and "not a GGUF" in detail


def test_no_model_installed_names_the_fix(monkeypatch):
    monkeypatch.setattr("agent.providers.local.default_model_path", lambda: None)
    with pytest.raises(LocalModelUnavailable) as exc:
        LocalClient()
    assert "make chat" in str(exc.value) and "model.path" in str(exc.value)


# ------------------------------------------------------------------ the real model

@needs_model
def test_local_available_reports_ok():
    ok, detail = local_available()
    assert ok, detail
    assert "SmolLM2" in detail


@needs_model
def test_context_length_is_the_trained_window(client):
    assert client.context_length == 8192  # SmolLM2-135M's llama.context_length, read from the GGUF
    assert client.load_seconds > 0
    assert LocalClient(n_ctx=1024).context_length == 1024


@needs_model
def test_plain_completion(client):
    resp = client.chat.completions.create(
        model="local", messages=[{"role": "system", "content": "Be brief."},
                                 {"role": "user", "content": "What is the capital of France?"}],
        max_tokens=24, temperature=0.0, timeout=30, extra_body={"top_k": 20}, unknown_kwarg=1)
    choice = resp.choices[0]
    assert isinstance(choice.message.content, str) and choice.message.content.strip()
    assert choice.message.tool_calls is None
    assert choice.finish_reason in ("stop", "length")
    assert resp.usage.prompt_tokens > 0 and 0 < resp.usage.completion_tokens <= 24
    assert resp.usage.total_tokens == resp.usage.prompt_tokens + resp.usage.completion_tokens
    assert resp.model == "local"
    assert resp.model_dump()["choices"][0]["message"]["role"] == "assistant"


@needs_model
def test_streaming_yields_content_chunks(client):
    stream = client.chat.completions.create(
        messages=[{"role": "user", "content": "Count from one to five."}], stream=True, max_tokens=20,
        stream_options={"include_usage": True})
    chunks = list(stream)
    texts = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert len(texts) >= 2 and "".join(texts).strip()
    finals = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert len(finals) == 1 and finals[0].usage.completion_tokens > 0
    assert chunks[-1].choices == [] and chunks[-1].usage.prompt_tokens > 0


@needs_model
def test_abandoned_stream_releases_the_model(client):
    with client.chat.completions.create(messages=[{"role": "user", "content": "Tell a story."}],
                                        stream=True, max_tokens=50) as stream:
        next(stream)
        next(stream)
    done = []
    t = threading.Thread(target=lambda: done.append(client.chat.completions.create(
        messages=[{"role": "user", "content": "Hi"}], max_tokens=4)))
    t.start()
    t.join(60)
    assert done, "the lock was not released by a closed stream"


@needs_model
def test_forced_tool_call(client):
    resp = client.chat.completions.create(
        messages=[{"role": "user", "content": "What time is it?"}], tools=[GET_TIME],
        tool_choice={"type": "function", "function": {"name": "get_time"}}, max_tokens=64)
    choice = resp.choices[0]
    assert choice.finish_reason == "tool_calls"
    (call,) = choice.message.tool_calls
    assert call.type == "function" and call.id and call.function.name == "get_time"
    assert isinstance(json.loads(call.function.arguments), dict)
    assert resp.usage.prompt_tokens > 0


@needs_model
def test_tool_call_streams_as_openai_deltas(client):
    chunks = list(client.chat.completions.create(
        messages=[{"role": "user", "content": "What time is it?"}], tools=[GET_TIME],
        tool_choice="required", stream=True, max_tokens=64))
    deltas = [tc for c in chunks if c.choices for tc in (c.choices[0].delta.tool_calls or [])]
    assert deltas and deltas[0].index == 0 and deltas[0].id and deltas[0].function.name == "get_time"
    assert isinstance(json.loads("".join(d.function.arguments for d in deltas)), dict)
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


@needs_model
def test_auto_tool_choice_never_raises(client):
    resp = client.chat.completions.create(
        messages=[{"role": "user", "content": "What time is it? Use the tool."}], tools=[GET_TIME], max_tokens=32)
    msg = resp.choices[0].message
    assert msg.tool_calls or (msg.content is not None)
    for call in msg.tool_calls or []:
        assert isinstance(call.function.arguments, str)


@needs_model
def test_overlong_prompt_is_a_classified_context_overflow(client):
    huge = "lorem ipsum dolor sit amet " * 4000
    for kwargs in ({}, {"tools": [GET_TIME]}, {"stream": True}):
        with pytest.raises(Exception) as exc:
            client.chat.completions.create(messages=[{"role": "user", "content": huge}], **kwargs)
        assert "maximum context length is" in str(exc.value)
        assert exc.value.status_code == 400
        classified = classify_error(exc.value)
        assert classified.kind == ErrorKind.CONTEXT_OVERFLOW
        assert classified.context_limit == client.context_length
    # the model is still usable afterwards
    assert client.chat.completions.create(messages=[{"role": "user", "content": "Hi"}], max_tokens=4).choices


@needs_model
def test_agent_history_with_tool_messages(client):
    history = [
        {"role": "system", "content": "You are Hermes."},
        {"role": "user", "content": [{"type": "text", "text": "What time is it?"},
                                     {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": '{"time": "12:00"}'},
        {"role": "assistant", "content": "It is noon. Anything else?", "tool_calls": [
            {"id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": {"tz": "UTC"}}}]},
        {"role": "tool", "tool_call_id": "call_2", "name": "get_time", "content": "12:00 UTC"},
        {"role": "system", "content": "[context summary: the user asked for the time]"},
        {"role": "user", "content": "Thanks. And in words?"},
    ]
    plain = client.chat.completions.create(messages=history, max_tokens=16)
    assert isinstance(plain.choices[0].message.content, str)
    with_tools = client.chat.completions.create(messages=history, tools=[GET_TIME], max_tokens=16)
    assert with_tools.choices[0].message.tool_calls or with_tools.choices[0].message.content is not None


@needs_model
def test_concurrent_calls_are_serialised(client):
    results, errors = [], []

    def ask(i: int) -> None:
        try:
            r = client.chat.completions.create(messages=[{"role": "user", "content": f"Say {i}"}], max_tokens=8)
            results.append(r.choices[0].message.content)
        except Exception as exc:  # pragma: no cover - the failure is the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors and len(results) == 3
