"""API error bodies when the provider fails (issue 21, item 8), through a real gateway process:
502 (503 with Retry-After when the provider is overloaded) with one clean OpenAI-shaped error,
"saved" only when a session kept the message, and a failed stream ending with an error event."""
from __future__ import annotations

import json
import urllib.error
import urllib.request

import openai
import pytest

from tests.fake_provider import error, server_error, text

MSG = [{"role": "user", "content": "hi"}]


def _post(gw, payload: dict, headers: dict | None = None) -> tuple[int, dict, str]:
    req = urllib.request.Request(gw.url, method="POST", data=json.dumps(payload).encode(),
                                 headers={"Content-Type": "application/json",
                                          "Authorization": f"Bearer {gw.key}", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=120) as resp:
            return resp.status, dict(resp.headers), resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read().decode()


def _one_clean_error(body: str) -> dict:
    err = json.loads(body)["error"]
    assert set(err) == {"message", "type", "param", "code"}
    msg = err["message"]
    assert ".." not in msg and msg.count("try again") <= 1 and "Sorry" not in msg, msg
    return err


@pytest.fixture
def gw(gateway_process, hermes_home):
    (hermes_home / "config.yaml").write_text("gateway:\n  warmup: false\n")
    return gateway_process()


def test_a_provider_500_is_a_502_with_one_clean_error(gw, fake_provider):
    fake_provider.default = server_error(500)
    status, _, body = _post(gw, {"model": "m", "messages": MSG})
    assert status == 502
    err = _one_clean_error(body)
    assert err["type"] == "server_error" and err["code"] == "provider_error"
    assert fake_provider.base_url in err["message"] and "after 3 retries" in err["message"]
    assert "saved" not in err["message"]  # a stateless request stores nothing


def test_an_overloaded_provider_is_a_503_with_retry_after(gw, fake_provider):
    fake_provider.default = error(503, "The model is overloaded", type="server_error",
                                  headers={"Retry-After": "1"})
    status, headers, body = _post(gw, {"model": "m", "messages": MSG})
    assert status == 503 and headers.get("Retry-After") == "1"
    assert _one_clean_error(body)["code"] == "provider_overloaded"


def test_a_keyed_request_says_its_message_is_saved(gw, fake_provider):
    fake_provider.default = server_error(500)
    status, headers, body = _post(gw, {"model": "m", "messages": MSG},
                                  {"X-Hermes-Session-Key": "failing"})
    assert status == 502
    assert _one_clean_error(body)["message"].endswith("Your message is saved in the session.")
    fake_provider.default = text("back again")
    status, _, body = _post(gw, {"model": "m", "messages": [{"role": "user", "content": "again"}]},
                            {"X-Hermes-Session-Key": "failing"})
    assert status == 200 and json.loads(body)["choices"][0]["message"]["content"] == "back again"
    sent = [m["content"] for m in fake_provider.last_request["messages"] if m["role"] == "user"]
    assert sent == ["hi", "again"]


def test_a_failed_stream_ends_with_an_error_event(gw, fake_provider):
    fake_provider.default = server_error(500)
    status, _, raw = _post(gw, {"model": "m", "messages": MSG, "stream": True})
    assert status == 200
    blocks = [b for b in raw.split("\n\n") if b.strip() and not b.startswith(":")]
    assert blocks[-1] == "data: [DONE]"
    event, data = blocks[-2].split("\n", 1)
    assert event == "event: error"
    err = _one_clean_error(data.removeprefix("data: "))
    assert err["code"] == "provider_error" and fake_provider.base_url in err["message"]
    last = json.loads(blocks[-3].removeprefix("data: "))
    assert last["choices"][0]["finish_reason"] == "error" and last["hermes"]["failed"] is True
    said = "".join(json.loads(b.removeprefix("data: "))["choices"][0]["delta"].get("content") or ""
                   for b in blocks[:-3] if b.startswith("data: {") and '"choices": [{' in b)
    assert said == ""  # the failure is an error, not an answer

    client = openai.OpenAI(base_url=gw.api + "/v1", api_key=gw.key, max_retries=0)
    with pytest.raises(openai.APIError, match="after 3 retries"):
        list(client.chat.completions.create(model="m", messages=MSG, stream=True))
