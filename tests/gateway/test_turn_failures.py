"""Turns that fail, are interrupted, or end: the user's message is kept, the reply tells the truth, and
every agent the runner lets go has its provider client closed (review defects 2, 5, 6)."""
from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request

import openai
import pytest

from tests.fake_provider import error_413, slow, text

SESSION = "X-Hermes-Session-Id"
USER, CHAT = 1001, 1001


def _client(gw) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.base_url, api_key=gw.api_key, max_retries=0, timeout=30)


def _user_texts(gw, sid):
    return [m["content"] for m in gw.db.get_messages(sid) if m["role"] == "user"]


class Breaks:
    """Wraps the real agent factory; raises while ``broken``."""

    def __init__(self) -> None:
        self.broken = True

    def __call__(self, real):
        def make(**kwargs):
            if self.broken:
                raise RuntimeError("agent construction blew up")
            return real(**kwargs)

        make.default_model = getattr(real, "default_model", None)
        return make


@pytest.fixture
def closes(monkeypatch):
    """Every AIAgent.close() call (the real method still runs)."""
    from run_agent import AIAgent

    closed: list[object] = []
    real_close = AIAgent.close

    def spy(self):
        closed.append(self)
        real_close(self)

    monkeypatch.setattr(AIAgent, "close", spy)
    return closed


class Made:
    """Wraps the real agent factory; remembers each agent built."""

    def __init__(self) -> None:
        self.agents: list[object] = []

    def __call__(self, real):
        def make(**kwargs):
            agent = real(**kwargs)
            self.agents.append(agent)
            return agent

        make.default_model = getattr(real, "default_model", None)
        return make


# -- defect 2: a failure before the agent runs ---------------------------------------------------
def test_agent_factory_failure_keeps_the_message_api(make_gateway, provider_env):
    breaks = Breaks()
    gw = make_gateway(api=True, wrap_factory=breaks)
    with pytest.raises(openai.InternalServerError) as exc:
        _client(gw).chat.completions.create(model="m", messages=[{"role": "user", "content": "keep me"}],
                                            extra_headers={SESSION: "w"})
    assert "saved" in exc.value.body["message"]
    sid = gw.session_for("api_server:session:w")
    assert _user_texts(gw, sid) == ["keep me"]
    breaks.broken = False
    provider_env.queue(text("works now"))
    _client(gw).chat.completions.create(model="m", messages=[{"role": "user", "content": "again"}],
                                        extra_headers={SESSION: "w"})
    users = [m["content"] for m in provider_env.last_request["messages"] if m["role"] == "user"]
    assert users == ["keep me", "again"]


def test_agent_factory_failure_keeps_the_message_telegram(make_gateway, fake_telegram, provider_env, monkeypatch):
    monkeypatch.setenv("TELEGRAM_ALLOWED_USERS", str(USER))
    gw = make_gateway(telegram=fake_telegram, wrap_factory=Breaks())
    fake_telegram.push_message(CHAT, USER, "do not lose this")
    reply = fake_telegram.wait_for_sent(CHAT)[0]
    assert "failed" in reply and "saved" in reply
    assert _user_texts(gw, gw.session_for(f"telegram:dm:{CHAT}")) == ["do not lose this"]


def test_failure_says_saved_only_when_the_write_worked(make_gateway, provider_env):
    gw = make_gateway(api=True, wrap_factory=Breaks())

    def refuse(*_a, **_k):
        raise OSError("disk full")

    gw.runner.sessions.ensure_user_message = refuse
    with pytest.raises(openai.InternalServerError) as exc:
        _client(gw).chat.completions.create(model="m", messages=[{"role": "user", "content": "lost"}],
                                            extra_headers={SESSION: "w2"})
    assert "is saved" not in exc.value.body["message"]
    assert "could not be saved" in exc.value.body["message"]


# -- defect 5: an interrupted turn is not a success ---------------------------------------------
def _interrupt_when_running(gw, provider_env, key: str) -> threading.Thread:
    def go():
        assert provider_env.wait_for_requests(1, timeout=30)
        assert gw.call(_stop(gw.runner, key))

    t = threading.Thread(target=go, daemon=True)
    t.start()
    return t


async def _stop(runner, key):
    return runner.stop_turn(key)


def test_interrupted_turn_is_503(make_gateway, provider_env):
    provider_env.queue(slow(text("never arrives"), 20))
    gw = make_gateway(api=True)
    stopper = _interrupt_when_running(gw, provider_env, "api_server:session:i")
    req = urllib.request.Request(gw.base_url + "/chat/completions", method="POST", data=json.dumps(
        {"model": "m", "messages": [{"role": "user", "content": "slow one"}]}).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {gw.api_key}", SESSION: "i"})
    with pytest.raises(urllib.error.HTTPError) as exc:
        urllib.request.urlopen(req, timeout=60)
    stopper.join(30)
    assert exc.value.code == 503 and exc.value.headers["Retry-After"] == "5"
    body = json.loads(exc.value.read())
    assert body["error"]["code"] == "interrupted"


def test_interrupted_stream_ends_with_finish_reason_error(make_gateway, provider_env):
    provider_env.queue(slow(text("never arrives"), 20))
    gw = make_gateway(api=True)
    stopper = _interrupt_when_running(gw, provider_env, "api_server:session:j")
    stream = _client(gw).chat.completions.create(model="m", messages=[{"role": "user", "content": "slow"}],
                                                 stream=True, extra_headers={SESSION: "j"})
    chunks = list(stream)
    stopper.join(30)
    assert chunks[-1].choices[0].finish_reason == "error"
    assert chunks[-1].model_extra["hermes"]["error_code"] == "interrupted"
    assert "interrupt" in "".join(c.choices[0].delta.content or "" for c in chunks if c.choices).lower()


# -- defect 6: agents the runner drops are closed --------------------------------------------------
def test_stateless_turn_closes_its_agent(make_gateway, provider_env, closes):
    made = Made()
    gw = make_gateway(api=True, wrap_factory=made)
    for i in range(3):
        _client(gw).chat.completions.create(model="m", messages=[{"role": "user", "content": f"hi {i}"}])
    assert len(made.agents) == 3 and all(a in closes for a in made.agents)


def test_evicted_rotated_and_failed_agents_are_closed(make_gateway, provider_env, closes):
    made = Made()
    gw = make_gateway(api=True, wrap_factory=made, max_cached_agents=1)
    client = _client(gw)

    def post(session: str, content: str) -> None:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": content}],
                                       extra_headers={SESSION: session})

    post("one", "first")
    post("two", "second")  # only one agent may stay cached: the agent of "one" goes
    assert made.agents[0] in closes and made.agents[1] not in closes
    provider_env.handler = lambda body: error_413()
    post("two", "too big")  # exhausted: rotation drops the agent of "two"
    assert made.agents[1] in closes
    provider_env.handler = None
    from tests.fake_provider import error

    provider_env.queue(error(401, "bad key", type="authentication_error"))
    with pytest.raises(openai.InternalServerError):
        post("two", "fails")  # a failure drops the cached agent
    assert made.agents[2] in closes
    post("two", "works")
    live = made.agents[3]
    assert live not in closes
    gw.call(gw.runner.shutdown(drain_timeout=5))
    assert live in closes


def test_past_the_cache_limit_the_oldest_tenth_goes_at_once(make_gateway, provider_env, closes):
    made = Made()
    gw = make_gateway(api=True, wrap_factory=made, max_cached_agents=10)
    client = _client(gw)
    for i in range(11):
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}],
                                       extra_headers={SESSION: f"s{i}"})
    # the eleventh agent takes the cache past 10: the two least recently used go, down to 9
    assert gw.runner.session_counts()["cached_agents"] == 9
    assert made.agents[0] in closes and made.agents[1] in closes
    assert not any(a in closes for a in made.agents[2:])
    client.chat.completions.create(model="m", messages=[{"role": "user", "content": "again"}],
                                   extra_headers={SESSION: "s0"})  # rebuilt from the store
    assert gw.runner.session_counts()["cached_agents"] == 10 and len(closes) == 2
    sent = [m["content"] for m in provider_env.last_request["messages"] if m["role"] == "user"]
    assert sent == ["hi", "again"] == _user_texts(gw, gw.session_for("api_server:session:s0"))


def test_store_false_keeps_no_response_and_binds_no_key(make_gateway, provider_env):
    gw = make_gateway(api=True)
    client = _client(gw)
    r = client.responses.create(model="hermes-agent", input="forget me", store=False)
    with pytest.raises(openai.NotFoundError):
        client.responses.create(model="hermes-agent", input="x", previous_response_id=r.id)
    provider_env.queue(text("remembered"), text("transient"), text("still only one"))
    client.responses.create(model="hermes-agent", input="kept in the conversation", conversation="c1")
    r2 = client.responses.create(model="hermes-agent", input="not kept", conversation="c1", store=False)
    assert [m["content"] for m in provider_env.last_request["messages"] if m["role"] == "user"][-2:] == [
        "kept in the conversation", "not kept"]
    with pytest.raises(openai.NotFoundError):
        client.responses.create(model="hermes-agent", input="x", previous_response_id=r2.id)
    client.responses.create(model="hermes-agent", input="third", conversation="c1")
    users = [m["content"] for m in provider_env.last_request["messages"] if m["role"] == "user"]
    assert users == ["kept in the conversation", "third"]
