"""The fake provider, driven by the real openai SDK."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import openai
import pytest
from openai import OpenAI

from tests.fake_provider import (
    FakeProvider,
    check_well_formed,
    cut_stream,
    error,
    error_413,
    estimate_prompt_tokens,
    garbage,
    overflow,
    rate_limited,
    server_error,
    size_limited_413,
    slow,
    text,
    tool_calls,
    window_limited,
)

ROOT = Path(__file__).resolve().parent.parent
USER = [{"role": "user", "content": "hello there"}]


@pytest.fixture
def client(fake_provider):
    c = OpenAI(base_url=fake_provider.base_url, api_key="test", max_retries=0, timeout=10)
    yield c
    c.close()


def ask(client, **kw):
    kw.setdefault("model", "fake-model")
    kw.setdefault("messages", USER)
    return client.chat.completions.create(**kw)


# ---------------------------------------------------------------- success replies


def test_default_reply_is_ok_and_request_recorded(fake_provider, client):
    r = ask(client, model="my-model")
    assert r.choices[0].message.content == "ok"
    assert r.choices[0].message.role == "assistant"
    assert r.choices[0].finish_reason == "stop"
    assert r.model == "my-model"
    assert r.object == "chat.completion"
    assert fake_provider.requests == [{"model": "my-model", "messages": USER}]
    assert fake_provider.request_headers[0]["authorization"] == "Bearer test"


def test_plain_text_reply_and_estimated_usage(fake_provider, client):
    fake_provider.queue(text("hello, world!"))
    r = ask(client)
    assert r.choices[0].message.content == "hello, world!"
    # "hello there" = 11 chars -> 11 // 4 + 4 * 1 message
    assert r.usage.prompt_tokens == 6 == estimate_prompt_tokens(fake_provider.requests[0])
    assert r.usage.completion_tokens == len("hello, world!") // 4 + 1
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens


def test_usage_override_and_finish_reason(fake_provider, client):
    fake_provider.queue(text("cut", usage={"prompt_tokens": 90_000}, finish_reason="length"))
    r = ask(client)
    assert r.usage.prompt_tokens == 90_000
    assert r.usage.total_tokens == 90_000 + r.usage.completion_tokens
    assert r.choices[0].finish_reason == "length"


def test_estimate_counts_tool_calls_and_tools():
    body = {
        "messages": [
            {"role": "system", "content": "x" * 40},
            {"role": "user", "content": [{"type": "text", "text": "y" * 20}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "z" * 8}}],
            },
            {"role": "tool", "tool_call_id": "a", "content": "w" * 12},
        ],
        "tools": [{"type": "function", "function": {"name": "f"}}],
    }
    tools_len = len(json.dumps(body["tools"]))
    assert estimate_prompt_tokens(body) == (40 + 20 + 8 + 12 + tools_len) // 4 + 16


def test_queue_order_then_handler_then_default(fake_provider, client):
    fake_provider.queue(text("one"), "two")
    assert fake_provider.pending == 2
    assert ask(client).choices[0].message.content == "one"
    assert ask(client).choices[0].message.content == "two"
    fake_provider.handler = lambda body: text(f"saw {len(body['messages'])}")
    assert ask(client).choices[0].message.content == "saw 1"
    fake_provider.handler = lambda body: None  # None -> default
    fake_provider.default = text("fallback")
    assert ask(client).choices[0].message.content == "fallback"
    fake_provider.reset()
    assert fake_provider.requests == [] and fake_provider.handler is None
    assert ask(client).choices[0].message.content == "ok"


def test_handler_exception_is_a_500(fake_provider, client):
    def boom(body):
        raise RuntimeError("nope")

    fake_provider.handler = boom
    with pytest.raises(openai.InternalServerError) as ei:
        ask(client)
    assert "nope" in str(ei.value)


def test_tool_call_reply(fake_provider, client):
    fake_provider.queue(
        tool_calls([("read_file", {"path": "a.txt"}), ("terminal", '{"command": "ls"')], content="let me look")
    )
    r = ask(client)
    msg = r.choices[0].message
    assert r.choices[0].finish_reason == "tool_calls"
    assert msg.content == "let me look"
    assert [tc.function.name for tc in msg.tool_calls] == ["read_file", "terminal"]
    assert json.loads(msg.tool_calls[0].function.arguments) == {"path": "a.txt"}
    assert msg.tool_calls[1].function.arguments == '{"command": "ls"'  # raw string kept verbatim
    ids = [tc.id for tc in msg.tool_calls]
    assert all(i.startswith("call_") for i in ids) and len(set(ids)) == 2


def test_tool_call_ids_per_provider_and_pinned(fake_provider, client):
    fake_provider.default = tool_calls([("f", {}), ("g", {})])  # reused reply
    assert [tc.id for tc in ask(client).choices[0].message.tool_calls] == ["call_1", "call_2"]
    assert [tc.id for tc in ask(client).choices[0].message.tool_calls] == ["call_3", "call_4"]
    fake_provider.queue(tool_calls([("f", {}, "call_fixed")]))
    assert ask(client).choices[0].message.tool_calls[0].id == "call_fixed"
    fake_provider.reset()
    fake_provider.queue(tool_calls([("f", {})]))
    assert ask(client).choices[0].message.tool_calls[0].id == "call_1"


def test_stream_chunks_and_chunk_delay(fake_provider, client):
    fake_provider.queue(text("abcdefghij", chunks=10, chunk_delay=0.02))
    t0 = time.monotonic()
    pieces = [c.choices[0].delta.content for c in ask(client, stream=True) if c.choices and c.choices[0].delta.content]
    assert pieces == list("abcdefghij")
    assert time.monotonic() - t0 >= 0.2


def test_streamed_text_reassembles_with_usage(fake_provider, client):
    content = "The quick brown fox jumps over the lazy dog."
    fake_provider.queue(text(content))
    stream = ask(client, stream=True, stream_options={"include_usage": True})
    pieces, finish, usage = [], None, None
    for chunk in stream:
        if chunk.usage:
            usage = chunk.usage
        for ch in chunk.choices:
            if ch.delta.content:
                pieces.append(ch.delta.content)
            finish = ch.finish_reason or finish
    assert "".join(pieces) == content
    assert len(pieces) >= 2
    assert finish == "stop"
    assert usage is not None and usage.completion_tokens == len(content) // 4 + 1
    assert fake_provider.requests[0]["stream"] is True


def test_streamed_without_include_usage_has_no_usage_chunk(fake_provider, client):
    chunks = list(ask(client, stream=True))
    assert all(c.usage is None for c in chunks)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "ok"


def test_streamed_tool_calls_reassemble(fake_provider, client):
    fake_provider.queue(tool_calls([("read_file", {"path": "notes/todo.md"}), ("web_search", {"q": "hermes"})]))
    calls: dict[int, dict] = {}
    finish = None
    for chunk in ask(client, stream=True):
        for ch in chunk.choices:
            finish = ch.finish_reason or finish
            for d in ch.delta.tool_calls or []:
                slot = calls.setdefault(d.index, {"id": None, "name": "", "arguments": ""})
                if d.id:
                    slot["id"] = d.id
                if d.function and d.function.name:
                    slot["name"] += d.function.name
                if d.function and d.function.arguments:
                    slot["arguments"] += d.function.arguments
    assert finish == "tool_calls"
    assert [calls[i]["name"] for i in sorted(calls)] == ["read_file", "web_search"]
    assert json.loads(calls[0]["arguments"]) == {"path": "notes/todo.md"}
    assert json.loads(calls[1]["arguments"]) == {"q": "hermes"}
    assert all(c["id"].startswith("call_") for c in calls.values())


def test_sdk_stream_helper_final_completion(fake_provider, client):
    """The SDK's own accumulator agrees with our chunk layout."""
    fake_provider.queue(tool_calls([("f", {"a": [1, 2, 3]})], content="thinking"))
    with client.chat.completions.stream(model="m", messages=USER) as s:
        final = s.get_final_completion()
    msg = final.choices[0].message
    assert msg.content == "thinking"
    assert json.loads(msg.tool_calls[0].function.arguments) == {"a": [1, 2, 3]}


# ---------------------------------------------------------------- error replies


def test_413_raises_status_error(fake_provider, client):
    fake_provider.queue(error_413())
    with pytest.raises(openai.APIStatusError) as ei:
        ask(client)
    assert ei.value.status_code == 413
    assert "Request entity too large" in str(ei.value)


def test_overflow_raises_bad_request(fake_provider, client):
    fake_provider.queue(overflow(250_000, 200_000))
    with pytest.raises(openai.BadRequestError) as ei:
        ask(client)
    assert "prompt is too long: 250000 tokens > 200000 maximum" in ei.value.message
    assert ei.value.body["type"] == "invalid_request_error"


def test_overflow_on_stream_request_is_an_http_error(fake_provider, client):
    fake_provider.queue(overflow(10, 5))
    with pytest.raises(openai.BadRequestError):
        ask(client, stream=True)


def test_rate_limited_has_retry_after(fake_provider, client):
    fake_provider.queue(rate_limited(7))
    with pytest.raises(openai.RateLimitError) as ei:
        ask(client)
    assert ei.value.status_code == 429
    assert ei.value.response.headers["retry-after"] == "7"


def test_server_error_and_custom_error(fake_provider, client):
    fake_provider.queue(server_error(503), error(401, "bad key", type="authentication_error"))
    with pytest.raises(openai.InternalServerError) as ei:
        ask(client)
    assert ei.value.status_code == 503
    with pytest.raises(openai.AuthenticationError) as ei2:
        ask(client)
    assert "bad key" in ei2.value.message
    # a normal reply still works afterwards on the same client
    assert ask(client).choices[0].message.content == "ok"


def test_error_with_raw_body(fake_provider, client):
    fake_provider.queue(error(502, "ignored", body="<html>bad gateway</html>"))
    with pytest.raises(openai.APIStatusError) as ei:
        ask(client)
    assert ei.value.status_code == 502
    assert ei.value.response.text == "<html>bad gateway</html>"


def test_cut_stream_raises_in_client(fake_provider, client):
    fake_provider.queue(cut_stream("partial answer that never fin"))
    got = []
    with pytest.raises(Exception) as ei:
        for chunk in ask(client, stream=True):
            for ch in chunk.choices:
                got.append(ch.delta.content or "")
    assert not isinstance(ei.value, AssertionError)
    assert "".join(got) and "partial answer that never fin".startswith("".join(got))
    # the server is still fine
    assert ask(client).choices[0].message.content == "ok"


def test_cut_non_stream_raises(fake_provider, client):
    fake_provider.queue(cut_stream())
    with pytest.raises(openai.APIConnectionError):
        ask(client)
    assert ask(client).choices[0].message.content == "ok"


def test_garbage_body_raises(fake_provider, client):
    fake_provider.queue(garbage())
    with pytest.raises(Exception) as ei:
        ask(client)
    assert not isinstance(ei.value, AssertionError)
    fake_provider.queue(garbage("{}"))
    with pytest.raises(Exception):
        r = ask(client)
        r.choices[0].message  # noqa: B018 - an empty object has no choices
    assert ask(client).choices[0].message.content == "ok"


# ---------------------------------------------------------------- helpers


def test_window_limited_handler(fake_provider, client):
    fake_provider.handler = FakeProvider.window_limited(50, lambda body: text("fits"))
    assert ask(client).choices[0].message.content == "fits"
    big = [{"role": "user", "content": "x" * 400}]
    with pytest.raises(openai.BadRequestError) as ei:
        ask(client, messages=big)
    assert f"prompt is too long: {400 // 4 + 4} tokens > 50 maximum" in ei.value.message
    fake_provider.handler = window_limited(50)  # no factory -> default
    assert ask(client).choices[0].message.content == "ok"


def test_size_limited_413_handler(fake_provider, client):
    fake_provider.handler = size_limited_413(2000)
    assert ask(client).choices[0].message.content == "ok"
    with pytest.raises(openai.APIStatusError) as ei:
        ask(client, messages=[{"role": "user", "content": "y" * 3000}])
    assert ei.value.status_code == 413
    assert len(fake_provider.raw_requests[-1]) > 2000


def test_delay_does_not_block_concurrent_requests(fake_provider):
    fake_provider.handler = lambda body: slow(text("slow"), 1.0) if body["messages"][0]["content"] == "slow" else text("fast")
    results = {}

    def run(word):
        c = OpenAI(base_url=fake_provider.base_url, api_key="t", max_retries=0, timeout=10)
        t0 = time.monotonic()
        r = ask(c, messages=[{"role": "user", "content": word}])
        results[word] = (r.choices[0].message.content, time.monotonic() - t0)
        c.close()

    slow_t = threading.Thread(target=run, args=("slow",))
    slow_t.start()
    assert fake_provider.wait_for_requests(1)
    run("fast")
    assert results["fast"][0] == "fast" and results["fast"][1] < 0.8
    slow_t.join(5)
    assert results["slow"][0] == "slow" and results["slow"][1] >= 0.9


def test_keep_alive_many_requests_one_client(fake_provider, client):
    for i in range(30):
        fake_provider.queue(text(f"n{i}"))
        assert ask(client).choices[0].message.content == f"n{i}"
        if i % 3 == 0:
            assert "".join(c.choices[0].delta.content or "" for c in ask(client, stream=True) if c.choices) == "ok"
    assert len(fake_provider.requests) == 40


def test_models_and_health(fake_provider, client):
    models = client.models.list()
    assert [m.id for m in models.data] == ["fake-model"]
    assert models.data[0].owned_by == "test"
    root = fake_provider.base_url[: -len("/v1")]
    with urllib.request.urlopen(root + "/health", timeout=5) as resp:
        assert resp.status == 200 and json.loads(resp.read())["status"] == "ok"


def test_stop_closes_port_and_joins_thread():
    fp = FakeProvider().start()
    c = OpenAI(base_url=fp.base_url, api_key="t", max_retries=0, timeout=5)
    assert ask(c).choices[0].message.content == "ok"  # leaves an idle keep-alive connection
    thread = fp._thread
    t0 = time.monotonic()
    fp.stop()
    assert time.monotonic() - t0 < 3
    assert thread is not None and not thread.is_alive()
    with pytest.raises(openai.APIConnectionError):
        ask(c)
    c.close()
    fp.stop()  # idempotent


def test_context_manager():
    with FakeProvider() as fp:
        assert fp.base_url.startswith("http://127.0.0.1:") and fp.base_url.endswith("/v1")
        c = OpenAI(base_url=fp.base_url, api_key="t", max_retries=0, timeout=5)
        assert ask(c).choices[0].message.content == "ok"
        c.close()


def test_async_client(fake_provider):
    import asyncio

    async def go():
        c = openai.AsyncOpenAI(base_url=fake_provider.base_url, api_key="t", max_retries=0, timeout=10)
        fake_provider.queue(slow(text("a"), 0.3), slow(text("b"), 0.3), slow(text("c"), 0.3))
        t0 = time.monotonic()
        rs = await asyncio.gather(*(c.chat.completions.create(model="m", messages=USER) for _ in range(3)))
        elapsed = time.monotonic() - t0
        await c.close()
        return sorted(r.choices[0].message.content for r in rs), elapsed

    contents, elapsed = asyncio.run(go())
    assert contents == ["a", "b", "c"]
    assert elapsed < 0.85  # the three delays overlapped


# ---------------------------------------------------------------- check_well_formed


def _tc(cid, name="f", args="{}"):
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


GOOD = [
    {"role": "system", "content": "sys"},
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": None, "tool_calls": [_tc("a"), _tc("b")]},
    {"role": "tool", "tool_call_id": "a", "content": "1"},
    {"role": "tool", "tool_call_id": "b", "content": "2"},
    {"role": "assistant", "content": "done"},
    {"role": "user", "content": "more"},
    {"role": "assistant", "content": None, "tool_calls": [_tc("c")]},
    {"role": "tool", "tool_call_id": "c", "content": "3"},
    {"role": "user", "content": "interjection after a tool result is allowed"},
]


def test_well_formed_accepts_valid():
    assert check_well_formed({"messages": GOOD}) == []
    assert check_well_formed(GOOD) == []
    assert check_well_formed({"messages": [{"role": "user", "content": "x"}]}) == []


def test_well_formed_empty():
    assert check_well_formed({"messages": []}) == ["empty messages list"]
    assert check_well_formed({}) == ["empty messages list"]


def test_well_formed_orphan_tool_result():
    msgs = [
        {"role": "user", "content": "hi"},
        {"role": "tool", "tool_call_id": "ghost", "content": "x"},
    ]
    probs = check_well_formed({"messages": msgs})
    assert len(probs) == 1 and "ghost" in probs[0] and "no preceding" in probs[0]


def test_well_formed_tool_result_not_right_after_its_call():
    msgs = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [_tc("a")]},
        {"role": "tool", "tool_call_id": "a", "content": "x"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "again"},
        {"role": "tool", "tool_call_id": "a", "content": "late duplicate"},
    ]
    probs = check_well_formed(msgs)
    assert len(probs) == 1 and "tool_call_id a" in probs[0]


def test_well_formed_unanswered_tool_call():
    msgs = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [_tc("a"), _tc("b")]},
        {"role": "tool", "tool_call_id": "a", "content": "x"},
        {"role": "user", "content": "next"},
    ]
    probs = check_well_formed(msgs)
    assert len(probs) == 1 and "b" in probs[0] and "no tool result" in probs[0]
    # also at the very end of the list
    probs = check_well_formed(msgs[:2])
    assert len(probs) == 2 and all("no tool result" in p for p in probs)


def test_well_formed_duplicate_result():
    msgs = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [_tc("a")]},
        {"role": "tool", "tool_call_id": "a", "content": "x"},
        {"role": "tool", "tool_call_id": "a", "content": "y"},
    ]
    probs = check_well_formed(msgs)
    assert len(probs) == 1 and "second time" in probs[0]


def test_well_formed_consecutive_users_and_assistants():
    users = [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
    probs = check_well_formed(users)
    assert probs == ["consecutive user messages at 0 and 1"]
    asst = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "system", "content": "neutral"},
        {"role": "assistant", "content": "c"},
    ]
    probs = check_well_formed(asst)
    assert probs == ["consecutive assistant messages at 1 and 3"]
    # a system message between two users does not make them alternate
    sys_between = [{"role": "user", "content": "a"}, {"role": "system", "content": "s"}, {"role": "user", "content": "b"}]
    assert len(check_well_formed(sys_between)) == 1


def test_well_formed_bad_arguments_type():
    msgs = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": {"x": 1}}}]},
        {"role": "tool", "tool_call_id": "a", "content": "x"},
    ]
    probs = check_well_formed(msgs)
    assert len(probs) == 1 and "not a string" in probs[0]


def test_requests_sent_by_sdk_are_well_formed(fake_provider, client):
    ask(client, messages=GOOD)
    assert check_well_formed(fake_provider.requests[0]) == []


# ---------------------------------------------------------------- subprocess mode


def test_subprocess_mode_prints_ready_and_serves():
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fake_provider", "--port", "0", "--reply", "from subprocess", "--delay", "0.1"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        line = proc.stdout.readline().strip()
        assert line.startswith("READY http://127.0.0.1:") and line.endswith("/v1"), line
        base_url = line.split(" ", 1)[1]
        c = OpenAI(base_url=base_url, api_key="t", max_retries=0, timeout=10)
        t0 = time.monotonic()
        r = ask(c)
        assert r.choices[0].message.content == "from subprocess"
        assert time.monotonic() - t0 >= 0.09
        c.close()
    finally:
        proc.terminate()
        try:
            rc = proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert rc == 0, proc.stderr.read()


def test_stop_during_delayed_request_is_prompt():
    fp = FakeProvider().start()
    fp.queue(slow(text("never"), 30))
    errors = []

    def run():
        c = OpenAI(base_url=fp.base_url, api_key="t", max_retries=0, timeout=10)
        try:
            ask(c)
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            c.close()

    t = threading.Thread(target=run)
    t.start()
    assert fp.wait_for_requests(1)
    t0 = time.monotonic()
    fp.stop()
    assert time.monotonic() - t0 < 3
    t.join(5)
    assert not t.is_alive()
