"""Webhooks on the real gateway subprocess: a signed GitHub-style event becomes a turn whose
answer reaches the configured Telegram chat (the fake Bot API); unsigned, wrongly signed and
unknown hooks are refused before any turn."""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any, Optional

import pytest

from gateway.platforms.webhook.signing import sign
from tests.fake_provider import text
from tests.gateway.fake_telegram import FakeTelegram

CHAT = 4242
SECRET = "webhook-secret-for-tests"
EVENT = {"action": "opened", "number": 7,
         "pull_request": {"title": "Fix the flaky clock", "user": {"login": "octocat"}}}


@pytest.fixture
def gateway(hermes_home, gateway_process):
    (hermes_home / "config.yaml").write_text(
        "gateway:\n  webhooks:\n    github:\n      secret_env: GH_HOOK_SECRET\n"
        f"      deliver: telegram:{CHAT}\n      events: [pull_request]\n"
        "      prompt: 'PR #{number} \"{pull_request.title}\" by {pull_request.user.login} "
        "was {action}. Summarise.'\n"
        "    broken:\n      deliver: telegram:1\n")  # no secret: named in the log, not served
    fake = FakeTelegram().start()
    gw = gateway_process(TELEGRAM_BOT_TOKEN=fake.token, TELEGRAM_BASE_URL=fake.base_url,
                         TELEGRAM_ALLOWED_USERS="1", GH_HOOK_SECRET=SECRET)
    yield gw, fake
    fake.stop()


def post(gw: Any, name: str, body: bytes, signature: Optional[str], event: str = "pull_request",
         delivery: str = "d-1") -> tuple[int, dict]:
    headers = {"Content-Type": "application/json", "X-GitHub-Event": event,
               "X-GitHub-Delivery": delivery}
    if signature is not None:
        headers["X-Hub-Signature-256"] = signature
    req = urllib.request.Request(f"{gw.api}/webhooks/{name}", data=body, headers=headers,
                                 method="POST")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_a_signed_event_is_answered_in_the_delivery_chat(gateway, fake_provider):
    gw, fake = gateway
    fake_provider.queue(text("octocat opened PR #7: a fix for the flaky clock."))
    body = json.dumps(EVENT).encode()
    status, answer = post(gw, "github", body, sign(SECRET, body))  # no API key: the signature
    assert (status, answer) == (202, {"accepted": True, "id": "d-1"})
    assert fake.wait_for_sent(CHAT, 1) == ["octocat opened PR #7: a fix for the flaky clock."]
    [request] = fake_provider.requests
    asked = [m for m in request["messages"] if m["role"] == "user"][-1]["content"]
    assert asked == 'PR #7 "Fix the flaky clock" by octocat was opened. Summarise.'
    assert post(gw, "github", body, sign(SECRET, body)) == (200, {"duplicate": True, "id": "d-1"})
    assert post(gw, "github", body, sign(SECRET, body), event="star", delivery="d-2") \
        == (200, {"ignored": "star"})
    assert len(fake_provider.requests) == 1  # a retry and an unwanted event start no turn


def test_bad_or_missing_signatures_are_refused(gateway, fake_provider):
    gw, _fake = gateway
    body = json.dumps(EVENT).encode()
    status, error = post(gw, "github", body, None)
    assert status == 401 and error["error"]["code"] == "invalid_signature"
    assert post(gw, "github", body, sign("another secret", body))[0] == 401
    assert post(gw, "github", body + b" ", sign(SECRET, body))[0] == 401  # body changed
    status, error = post(gw, "broken", body, sign(SECRET, body))
    assert status == 404 and "gateway.webhooks.broken" in error["error"]["message"]
    assert fake_provider.requests == []
    assert gw.terminate_and_wait() == 0
    log = (gw.home / "logs" / "gateway.log").read_text()
    assert "gateway.webhooks.broken" in log and "no secret" in log
    assert SECRET not in log
