"""Slack's HTTP Events mode end to end: signed POSTs as Slack sends them (fake_slack.deliver)
-> slack-bolt's request handling on the adapter's own port -> the runner -> FakeProvider;
answers through the fake's Web API."""
from __future__ import annotations

import time

import pytest

from gateway.platforms.slack import build
from gateway.sessions import session_key
from tests.fake_provider import text
from tests.gateway.platforms.conftest import user_texts
from tests.gateway.platforms.fake_slack import BOT_TOKEN, SIGNING_SECRET, FakeSlack, deliver

ALICE, DM = "UALICE001", "DALICE001"
_ts = iter(range(1, 10_000))


def dm(words: str) -> dict:
    return {"type": "message", "channel_type": "im", "channel": DM, "user": ALICE,
            "text": words, "ts": f"1700000100.{next(_ts):06d}"}


@pytest.fixture(scope="module")
def fake():
    server = FakeSlack().start()
    yield server
    server.stop()


@pytest.fixture
def slack(fake, make_gateway, monkeypatch):
    """A gateway receiving Slack over HTTP (no app token: the signing secret picks the mode)."""
    fake.reset()
    monkeypatch.setenv("SLACK_ALLOWED_USERS", ALICE)
    adapter = build({"bot_token": BOT_TOKEN, "signing_secret": SIGNING_SECRET, "port": 0,
                     "base_url": fake.base_url}, {})
    gw = make_gateway(adapters=(adapter,))
    assert adapter.server is not None and adapter.server.port
    return gw, f"http://127.0.0.1:{adapter.server.port}/slack/events"


def test_the_challenge_a_turn_and_a_retry_answered_once(slack, fake, provider_env):
    gw, url = slack
    status, body = deliver(url, {"token": "x", "type": "url_verification",
                                 "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"})
    assert status == 200 and "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" in body
    provider_env.queue(text("first answer"), text("second answer"))
    first = fake.envelope(dm("first"))
    assert deliver(url, first)[0] == 200
    fake.wait_posted(DM)
    assert deliver(url, first, retry=1)[0] == 200  # Slack thought we were too slow
    assert deliver(url, fake.envelope(dm("second")))[0] == 200
    assert [p["text"] for p in fake.wait_posted(DM, 2)] == ["first answer", "second answer"]
    assert len(provider_env.requests) == 2  # the retry made no turn (it would come before)
    assert user_texts(gw.db, session_key("slack", "dm", DM)) == ["first", "second"]


def test_a_bad_or_stale_signature_gets_401_and_no_turn(slack, fake, provider_env):
    gw, url = slack
    provider_env.queue(text("only this one"))
    assert deliver(url, fake.envelope(dm("forged")), secret="not-the-secret")[0] == 401
    stale = int(time.time()) - 6 * 60  # a replay of an old request, correctly signed
    assert deliver(url, fake.envelope(dm("replayed")), timestamp=stale)[0] == 401
    assert deliver(url, {"type": "url_verification", "challenge": "c"},
                   secret="not-the-secret")[0] == 401
    assert deliver(url, fake.envelope(dm("genuine")))[0] == 200
    assert [p["text"] for p in fake.wait_posted(DM)] == ["only this one"]
    assert user_texts(gw.db, session_key("slack", "dm", DM)) == ["genuine"]
    assert len(provider_env.requests) == 1


def test_mode_settings():
    from hermes_core.config import ConfigError
    from gateway.platforms.slack import http_settings

    assert http_settings({}, {}, "xapp-1") is None  # Socket Mode
    assert http_settings({}, {"SLACK_SIGNING_SECRET": "s"}, "xapp-1") is None
    got = http_settings({"mode": "http", "port": "8123"}, {"SLACK_SIGNING_SECRET": "s"}, "xapp")
    assert got is not None and (got.signing_secret, got.port, got.path) == ("s", 8123,
                                                                           "/slack/events")
    assert http_settings({"signing_secret": "s"}, {}, "").host == "127.0.0.1"
    for bad, why in (({"mode": "webhook"}, "socket or http"), ({"mode": "http"}, "signing"),
                     ({"signing_secret": "s", "port": "x"}, "port")):
        with pytest.raises(ConfigError, match=why):
            http_settings(bad, {}, "")
