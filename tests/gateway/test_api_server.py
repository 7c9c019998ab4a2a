"""The API server driven by the real openai SDK, with real agents talking to FakeProvider."""
from __future__ import annotations

import json
import urllib.error
import urllib.request

import openai
import pytest

from tests.fake_provider import error, text
from tests.gateway.conftest import API_KEY

SESSION = "X-Hermes-Session-Id"


def _contents(body: dict) -> list[str]:
    return [m.get("content") for m in body["messages"] if m.get("role") in ("user", "assistant")]


def _client(gw, key: str | None = None) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.base_url, api_key=key or gw.api_key, max_retries=0, timeout=30)


def _post_raw(url: str, data: bytes, headers: dict | None = None) -> tuple[int, dict]:
    req = urllib.request.Request(url, data=data, method="POST",
                                 headers={"Content-Type": "application/json", "Authorization": f"Bearer {API_KEY}",
                                          **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_plain_completion_and_models(make_gateway, provider_env):
    provider_env.queue(text("Hello from the agent"))
    gw = make_gateway(api=True)
    client = _client(gw)
    out = client.chat.completions.create(model="hermes-agent", messages=[{"role": "user", "content": "hi"}])
    assert out.choices[0].message.content == "Hello from the agent"
    assert out.choices[0].finish_reason == "stop"
    assert [m.id for m in client.models.list().data] == ["hermes-agent"]


def test_streamed_completion(make_gateway, provider_env):
    provider_env.queue(text("streamed answer in pieces"))
    gw = make_gateway(api=True)
    stream = _client(gw).chat.completions.create(
        model="hermes-agent", messages=[{"role": "user", "content": "hi"}], stream=True)
    chunks = list(stream)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "streamed answer in pieces"
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_stateless_uses_client_history(make_gateway, provider_env):
    gw = make_gateway(api=True)
    history = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "my name is Ada"},
               {"role": "assistant", "content": "Hi Ada"}, {"role": "user", "content": "what is my name?"}]
    _client(gw).chat.completions.create(model="m", messages=history)
    sent = _contents(provider_env.last_request)
    assert sent[-3:] == ["my name is Ada", "Hi Ada", "what is my name?"]


def test_session_header_keeps_history(make_gateway, provider_env):
    provider_env.queue(text("noted, the number is 41"), text("it was 41"))
    gw = make_gateway(api=True)
    client = _client(gw)
    first = client.chat.completions.with_raw_response.create(
        model="m", messages=[{"role": "user", "content": "remember 41"}], extra_headers={SESSION: "work"})
    client.chat.completions.create(model="m", messages=[{"role": "user", "content": "what number?"}],
                                   extra_headers={SESSION: "work"})
    assert _contents(provider_env.requests[1])[-3:] == ["remember 41", "noted, the number is 41", "what number?"]
    sid = first.headers[SESSION]
    assert gw.session_for("api_server:session:work") == sid


def test_responses_conversation_remembers(make_gateway, provider_env):
    provider_env.queue(text("Paris is noted"), text("You said Paris"), text("named one"), text("named two"))
    gw = make_gateway(api=True)
    client = _client(gw)
    r1 = client.responses.create(model="hermes-agent", input="My city is Paris")
    assert r1.output_text == "Paris is noted"
    r2 = client.responses.create(model="hermes-agent", input="Which city?", previous_response_id=r1.id)
    assert r2.output_text == "You said Paris"
    assert _contents(provider_env.requests[1])[-3:] == ["My city is Paris", "Paris is noted", "Which city?"]
    client.responses.create(model="hermes-agent", input="first in conv", conversation="trip")
    client.responses.create(model="hermes-agent", input="second in conv", conversation="trip")
    assert _contents(provider_env.requests[3])[-3:] == ["first in conv", "named one", "second in conv"]
    with pytest.raises(openai.NotFoundError) as exc:
        client.responses.create(model="hermes-agent", input="x", previous_response_id="resp_missing")
    assert exc.value.body["code"] == "response_not_found"


def test_auth_required_with_key(make_gateway, provider_env):
    gw = make_gateway(api=True, api_key="s3cret-key")
    with pytest.raises(openai.AuthenticationError) as exc:
        _client(gw, "wrong").chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert exc.value.status_code == 401 and exc.value.body["code"] == "invalid_api_key"
    out = _client(gw, "s3cret-key").chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert out.choices[0].message.content == "ok"
    with urllib.request.urlopen(gw.base_url.replace("/v1", "/health"), timeout=10) as resp:
        assert json.loads(resp.read())["status"] == "ok"  # health needs no key


def test_oversized_body_is_413(make_gateway, provider_env):
    gw = make_gateway(api=True, max_body_bytes=10_000)
    with pytest.raises(openai.APIStatusError) as exc:
        _client(gw).chat.completions.create(model="m", messages=[{"role": "user", "content": "x" * 50_000}])
    assert exc.value.status_code == 413
    assert exc.value.body["type"] == "invalid_request_error"
    assert provider_env.requests == []
    # the server is still fine afterwards
    assert _client(gw).chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}]).choices


def test_bad_requests_are_400_in_openai_format(make_gateway, provider_env):
    gw = make_gateway(api=True)
    url = gw.base_url + "/chat/completions"
    status, body = _post_raw(url, b"{not json")
    assert status == 400 and body["error"]["code"] == "invalid_json"
    status, body = _post_raw(url, json.dumps({"model": "m"}).encode())
    assert status == 400 and body["error"]["param"] == "messages"
    status, body = _post_raw(url, json.dumps({"messages": [{"role": "assistant", "content": "x"}]}).encode())
    assert status == 400
    status, body = _post_raw(gw.base_url + "/nowhere", b"{}")
    assert status == 404 and "error" in body


def test_agent_failure_is_500(make_gateway, provider_env):
    provider_env.default = error(401, "invalid api key at provider", type="authentication_error")
    gw = make_gateway(api=True)
    with pytest.raises(openai.InternalServerError) as exc:
        _client(gw).chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}],
                                            extra_headers={SESSION: "failing"})
    assert exc.value.body["type"] == "server_error"
    sid = gw.session_for("api_server:session:failing")
    assert "hi" in [m["content"] for m in gw.db.get_active_messages(sid) if m["role"] == "user"]


def _sse_events(url: str, payload: dict) -> tuple[int, list]:
    """POST and parse the SSE body by hand: (status, [decoded data events, '[DONE]'])."""
    req = urllib.request.Request(url, data=json.dumps(payload).encode(), method="POST",
                                 headers={"Content-Type": "application/json", "Authorization": f"Bearer {API_KEY}"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        raw = resp.read().decode()
        status = resp.status
    events = []
    for block in raw.split("\n\n"):  # named events ("event: error") carry their data line too
        data = next((ln[6:] for ln in block.split("\n") if ln.startswith("data: ")), None)
        if data is not None:
            events.append(data if data == "[DONE]" else json.loads(data))
    return status, events


def test_streamed_text_before_a_tool_call_is_not_repeated(make_gateway, provider_env, hermes_home):
    from tests.fake_provider import tool_calls

    (hermes_home / "note.txt").write_text("hello\n")
    provider_env.queue(tool_calls([("read_file", {"path": str(hermes_home / "note.txt")})], content="Let me look."),
                       text("The file says hello."))
    gw = make_gateway(api=True)
    stream = _client(gw).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "what is in note.txt?"}], stream=True)
    chunks = list(stream)
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert streamed.count("The file says hello.") == 1
    assert streamed.endswith("The file says hello.")
    assert chunks[-1].choices[0].finish_reason == "stop"


@pytest.mark.parametrize("route,payload,param", [
    ("chat/completions", {"messages": [{"role": "user", "content": "hi"}], "stream": True, "stream_options": "yes"},
     "stream_options"),
    ("chat/completions", {"messages": [{"role": "wizard", "content": "x"}, {"role": "user", "content": "hi"}]},
     "messages"),
    ("chat/completions", {"messages": [{"role": "user", "content": "hi"}], "stream_options": ["x"]},
     "stream_options"),
    ("responses", {"input": "hi", "instructions": 5}, "instructions"),
    ("responses", {"input": "hi", "conversation": 12}, "conversation"),
    ("responses", {"input": "hi", "conversation": {"name": "x"}}, "conversation"),
    ("responses", {"input": [{"role": "wizard", "content": "x"}, {"role": "user", "content": "hi"}]}, "input"),
])
def test_bad_fields_are_400_before_any_turn(make_gateway, provider_env, route, payload, param):
    gw = make_gateway(api=True)
    status, body = _post_raw(f"{gw.base_url}/{route}", json.dumps({"model": "m", **payload}).encode())
    assert status == 400, body
    assert body["error"]["type"] == "invalid_request_error" and body["error"]["param"] == param
    assert provider_env.requests == []


def test_error_after_the_stream_started_is_an_sse_event(make_gateway, provider_env, monkeypatch):
    import gateway.platforms.api_server.chat as chat

    def broken_usage(_result):
        raise RuntimeError("usage exploded")

    monkeypatch.setattr(chat, "usage_of", broken_usage)
    provider_env.queue(text("answer before the bug"))
    gw = make_gateway(api=True)
    status, events = _sse_events(gw.base_url + "/chat/completions", {
        "model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True,
        "stream_options": {"include_usage": True}})
    assert status == 200
    errors = [e for e in events if isinstance(e, dict) and "error" in e]
    assert len(errors) == 1 and errors[0]["error"]["type"] == "server_error"
    assert "usage exploded" not in json.dumps(errors)
    assert events[-1] == "[DONE]"
