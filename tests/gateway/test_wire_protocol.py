"""SPEC §15 against `python -m hermes_cli.main gateway run` as a subprocess: capabilities, tool progress events,
finish reasons and the `hermes` member, X-Hermes-Session-Key, checked with the tests' own SSE parser
and with the openai SDK (a plain OpenAI client must parse every stream)."""
from __future__ import annotations

import os
import socket

import openai
import pytest

from hermes_state import SessionDB
from tests.fake_provider import error, error_413, text, tool_calls
from tests.gateway.sse import parse_sse, post, request

MSG = [{"role": "user", "content": "hi"}]


@pytest.fixture
def gw(gateway_process):
    return gateway_process()


def _client(gw) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.api + "/v1", api_key=gw.key, max_retries=0, timeout=60)


def _stream(gw, payload: dict, headers: dict | None = None):
    status, hdrs, raw = post(gw.url, gw.key, {"model": "m", "stream": True, **payload}, headers)
    assert status == 200, raw
    assert hdrs["content-type"].startswith("text/event-stream")
    return hdrs, parse_sse(raw)


def test_capabilities(gw):
    status, caps = request("GET", gw.api + "/v1/capabilities", gw.key)
    assert status == 200
    assert set(caps) == {"object", "platform", "model", "auth", "features", "endpoints"}
    assert caps["object"] == "hermes.api_server.capabilities" and caps["platform"] == "hermes-agent"
    assert caps["model"] == "hermes-agent" and caps["auth"] == {"type": "bearer", "required": True}
    for feature in ("chat_completions", "chat_completions_streaming", "responses_api", "responses_streaming",
                    "tool_progress_events", "session_key_header", "sessions_api"):
        assert caps["features"][feature] is True, feature
    eps = caps["endpoints"]
    assert eps["chat_completions"] == {"method": "POST", "path": "/v1/chat/completions"}
    assert eps["responses_get"] == {"method": "GET", "path": "/v1/responses/{response_id}"}
    assert eps["session_delete"] == {"method": "DELETE", "path": "/api/sessions/{session_id}"}
    assert all(set(e) == {"method", "path"} for e in eps.values())
    status, body = request("GET", gw.api + "/v1/capabilities", None)
    assert status == 401 and body["error"]["code"] == "invalid_api_key"


def test_tool_progress_is_interleaved_with_content(gw, fake_provider):
    note = gw.home / "workspace" / "note.txt"  # the gateway's file tools stay in its workspace
    note.write_text("hello\n")
    fake_provider.queue(tool_calls([("read_file", {"path": str(note)}, "call_read1")], content="Let me look."),
                        text("The file says hello."))
    _, records = _stream(gw, {"messages": [{"role": "user", "content": "read note.txt"}]})
    assert records[-1] == (None, "[DONE]")
    names = [name for name, _ in records]
    assert set(names) == {None, "hermes.tool.progress"}
    progress = [data for name, data in records if name == "hermes.tool.progress"]
    assert [(p["toolCallId"], p["tool"], p["status"]) for p in progress] == [
        ("call_read1", "read_file", "running"), ("call_read1", "read_file", "completed")]
    assert progress[1]["ok"] is True
    chunks = [data for name, data in records[:-1] if name is None]
    text_at = [i for i, (name, data) in enumerate(records) if name is None and data != "[DONE]"
               and data["choices"] and data["choices"][0]["delta"].get("content")]
    tool_at = [i for i, (name, _) in enumerate(records) if name == "hermes.tool.progress"]
    assert text_at[0] < tool_at[0] < tool_at[1] < text_at[-1]  # "Let me look." ... tool ... the answer
    content = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert content == "Let me look.The file says hello."
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop" and "hermes" not in chunks[-1]

    # the same kind of stream through the openai SDK: it parses to the end without an error
    fake_provider.queue(tool_calls([("read_file", {"path": str(note)}, "call_read2")]), text("Still hello."))
    sdk = list(_client(gw).chat.completions.create(model="m", messages=MSG, stream=True))
    assert "".join(c.choices[0].delta.content or "" for c in sdk if c.choices) == "Still hello."
    assert [c.choices[0].finish_reason for c in sdk if c.choices][-1] == "stop"


def test_a_failed_turn_ends_with_finish_reason_error(gw, fake_provider):
    fake_provider.queue(error(401, "provider says no", type="authentication_error"))
    _, records = _stream(gw, {"messages": MSG})
    last = records[-3][1]
    assert records[-1] == (None, "[DONE]")
    assert last["choices"][0]["finish_reason"] == "error"
    assert last["hermes"] == {"completed": False, "failed": True, "partial": True,
                              "error_code": "provider_auth"}
    event, data = records[-2]  # the stream ends with the failure as an error event (issue 21)
    assert event == "error" and "rejected the credentials" in data["error"]["message"]
    fake_provider.queue(error(401, "provider says no", type="authentication_error"))
    with pytest.raises(openai.APIError, match="rejected the credentials"):
        list(_client(gw).chat.completions.create(model="m", messages=MSG, stream=True))


def test_a_lock_deferred_turn_is_partial_not_failed(gw, fake_provider, hermes_home):
    key = {"X-Hermes-Session-Key": "deferred-demo"}
    fake_provider.queue(text("first answer"))
    status, hdrs, _ = post(gw.url, gw.key, {"model": "m", "messages": MSG}, key)
    sid = hdrs["x-hermes-session-id"]
    holder = f"pid={os.getpid()}:tid=1:agent=test:nonce=00000000"
    with SessionDB(hermes_home / "state.db") as db:
        assert db.try_acquire_compression_lock(sid, holder)
        try:
            fake_provider.handler = lambda body: error_413()
            hdrs, records = _stream(gw, {"messages": [{"role": "user", "content": "second"}]}, key)
        finally:
            db.release_compression_lock(sid, holder)
            fake_provider.handler = None
    last = records[-2][1]
    assert last["choices"][0]["finish_reason"] == "stop"
    assert last["hermes"] == {"completed": False, "failed": False, "partial": True,
                              "error_code": "compression_deferred"}
    assert hdrs["x-hermes-session-id"] == sid


def test_session_key_follows_a_reset_and_works_with_responses(gw, fake_provider):
    client = _client(gw)
    key = {"X-Hermes-Session-Key": "kitchen-display"}
    fake_provider.queue(text("noted: 41"), text("it was 41"))
    first = client.chat.completions.with_raw_response.create(model="m", messages=[
        {"role": "user", "content": "remember 41"}], extra_headers=key)
    sid = first.headers["X-Hermes-Session-Id"]
    again = client.chat.completions.with_raw_response.create(model="m", messages=[
        {"role": "user", "content": "which number?"}], extra_headers=key)
    assert again.headers["X-Hermes-Session-Id"] == sid
    users = [m["content"] for m in fake_provider.last_request["messages"] if m["role"] == "user"]
    assert users == ["remember 41", "which number?"]
    fake_provider.handler = lambda body: error_413()  # compression cannot help: the session is reset
    reset = client.chat.completions.with_raw_response.create(model="m", messages=MSG, extra_headers=key)
    fake_provider.handler = None
    new = reset.headers["X-Hermes-Session-Id"]
    assert new != sid and reset.parse().choices[0].finish_reason == "error"
    assert reset.parse().model_extra["hermes"]["error_code"] == "compression_exhausted"
    fake_provider.queue(text("fresh start"))
    r = client.responses.with_raw_response.create(model="hermes-agent", input="after the reset", extra_headers=key)
    assert r.headers["X-Hermes-Session-Id"] == new and r.parse().output_text == "fresh start"
    users = [m["content"] for m in fake_provider.last_request["messages"] if m["role"] == "user"]
    assert users == ["after the reset"]
    # the older header still names the conversation the same way
    fake_provider.queue(text("same conversation"))
    old_style = client.chat.completions.with_raw_response.create(
        model="m", messages=[{"role": "user", "content": "via the old header"}],
        extra_headers={"X-Hermes-Session-Id": "kitchen-display"})
    assert old_style.headers["X-Hermes-Session-Id"] == new


def _raw_request(port: int, header_bytes: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(header_bytes)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
        return data


@pytest.mark.parametrize("headers", [
    {"X-Hermes-Session-Key": "k" * 300},
    {"X-Hermes-Session-Id": "i" * 300},
    {"X-Hermes-Session-Key": "a", "X-Hermes-Session-Id": "i" * 300},
])
def test_bad_session_keys_are_400(gw, fake_provider, headers):
    status, _, body = post(gw.url, gw.key, {"model": "m", "messages": MSG}, headers)
    assert status == 400 and '"invalid_session_key"' in body
    assert fake_provider.requests == []


def test_a_session_key_with_control_characters_is_400(gw, fake_provider):
    body = b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}'
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{gw.port}\r\n"
            f"Authorization: Bearer {gw.key}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n").encode()
    reply = _raw_request(gw.port, head + b"X-Hermes-Session-Key: bad\x01key\r\n\r\n" + body)
    assert reply.split(b" ", 2)[1] == b"400"  # refused by the HTTP parser already
    reply = _raw_request(gw.port, head + b"X-Hermes-Session-Key: bad\tkey\r\n\r\n" + body)
    assert reply.split(b" ", 2)[1] == b"400" and b'"invalid_session_key"' in reply  # a tab is legal HTTP
    assert fake_provider.requests == []
