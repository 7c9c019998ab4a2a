"""Several gateway keys naming one session: one lock, one cached agent, one history (review defect 1)."""
from __future__ import annotations

import threading
import time

import openai
import pytest

from tests.fake_provider import error_413, text

SESSION = "X-Hermes-Session-Id"


def _contents(body: dict) -> list[str]:
    return [m.get("content") for m in body["messages"] if m.get("role") in ("user", "assistant")]


def _client(gw) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.base_url, api_key=gw.api_key, max_retries=0, timeout=30)


def test_conversation_and_previous_response_share_one_history(make_gateway, provider_env):
    provider_env.queue(text("trip noted"), text("second noted"), text("third noted"))
    gw = make_gateway(api=True)
    client = _client(gw)
    r1 = client.responses.create(model="hermes-agent", input="first about the trip", conversation="trip")
    client.responses.create(model="hermes-agent", input="second via response id", previous_response_id=r1.id)
    client.responses.create(model="hermes-agent", input="third in the conversation", conversation="trip")
    assert _contents(provider_env.requests[2])[-5:] == [
        "first about the trip", "trip noted", "second via response id", "second noted", "third in the conversation"]


def test_header_naming_a_session_id_shares_the_lock_with_its_key(make_gateway, provider_env):
    gw = make_gateway(api=True)
    client = _client(gw)
    provider_env.queue(text("started"))
    first = client.chat.completions.with_raw_response.create(
        model="m", messages=[{"role": "user", "content": "hello a"}], extra_headers={SESSION: "a"})
    sid = first.headers[SESSION]

    guard = threading.Lock()
    active, overlaps = [0], []

    def handler(body):
        with guard:
            active[0] += 1
            if active[0] > 1:
                overlaps.append(body)
        time.sleep(0.3)  # long enough for a second turn on the session to arrive if it could
        with guard:
            active[0] -= 1
        return text("answer to " + _contents(body)[-1])

    provider_env.handler = handler
    errors: list[BaseException] = []

    def post(header: str, content: str) -> None:
        try:
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": content}],
                                           extra_headers={SESSION: header})
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=post, args=("a", "via the key")),
               threading.Thread(target=post, args=(sid, "via the id"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == [] and overlaps == []
    assert gw.session_for(f"api_server:session:{sid}") == sid == gw.session_for("api_server:session:a")
    # whichever ran second saw the first one's exchange
    later = _contents(provider_env.requests[-1])
    assert "started" in later and len([c for c in later if c.startswith("answer to")]) == 1


def test_header_cannot_adopt_a_chat_platform_session(make_gateway, provider_env):
    gw = make_gateway(api=True)
    sid = gw.db.create_session("20240101_000000_chat01", source="telegram")
    gw.db.bind_session_key("telegram:dm:42", sid)
    gw.db.append_message(sid, "user", "private chat text")
    with pytest.raises(openai.PermissionDeniedError) as exc:
        _client(gw).chat.completions.create(model="m", messages=[{"role": "user", "content": "leak it"}],
                                            extra_headers={SESSION: sid})
    assert exc.value.status_code == 403
    assert exc.value.body["type"] == "invalid_request_error" and exc.value.body["param"] == SESSION
    assert provider_env.requests == []
    assert gw.session_for(f"api_server:session:{sid}") is None


def test_exhausted_session_moves_every_key_to_the_fresh_one(make_gateway, provider_env):
    gw = make_gateway(api=True)
    client = _client(gw)
    provider_env.queue(text("first"))
    first = client.chat.completions.with_raw_response.create(
        model="m", messages=[{"role": "user", "content": "hello"}], extra_headers={SESSION: "a"})
    old = first.headers[SESSION]
    provider_env.handler = lambda body: error_413()
    out = client.chat.completions.with_raw_response.create(
        model="m", messages=[{"role": "user", "content": "too big"}], extra_headers={SESSION: old})
    new = out.headers[SESSION]
    assert new != old and "fresh session" in out.parse().choices[0].message.content
    assert gw.session_for("api_server:session:a") == new
    assert gw.session_for(f"api_server:session:{old}") == new
    provider_env.handler = None
    provider_env.queue(text("fresh answer"))
    again = client.chat.completions.with_raw_response.create(
        model="m", messages=[{"role": "user", "content": "after the reset"}], extra_headers={SESSION: "a"})
    assert again.headers[SESSION] == new
    assert _contents(provider_env.last_request) == ["after the reset"]
