"""Webhooks on the real gateway subprocess: a signed GitHub-style event becomes a turn whose
answer reaches the configured Telegram chat (the fake Bot API); unsigned, wrongly signed and
unknown hooks are refused before any turn."""
from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any, Optional

import pytest

from gateway.platforms.webhook.signing import sign, sign_stripe
from tests.fake_provider import text
from tests.gateway.fake_telegram import FakeTelegram

CHAT = 4242
SECRET = "webhook-secret-for-tests"
STRIPE_SECRET = "whsec_stripe-secret-for-tests"
EVENT = {"action": "opened", "number": 7,
         "pull_request": {"title": "Fix the flaky clock", "user": {"login": "octocat"}}}


@pytest.fixture
def gateway(hermes_home, gateway_process):
    (hermes_home / "config.yaml").write_text(
        "gateway:\n  webhooks:\n    github:\n      secret_env: GH_HOOK_SECRET\n"
        f"      deliver: telegram:{CHAT}\n      events: [pull_request]\n"
        "      prompt: 'PR #{number} \"{pull_request.title}\" by {pull_request.user.login} "
        "was {action}. Summarise.'\n"
        "    stripe:\n      secret_env: STRIPE_HOOK_SECRET\n      signature: stripe\n"
        f"      deliver: telegram:{CHAT}\n      prompt: 'Stripe says {{type}}: {{data.object.amount}}'\n"
        "    broken:\n      deliver: telegram:1\n")  # no secret: named in the log, not served
    fake = FakeTelegram().start()
    gw = gateway_process(TELEGRAM_BOT_TOKEN=fake.token, TELEGRAM_BASE_URL=fake.base_url,
                         TELEGRAM_ALLOWED_USERS="1", GH_HOOK_SECRET=SECRET, STRIPE_HOOK_SECRET=STRIPE_SECRET)
    yield gw, fake
    fake.stop()


def post(gw: Any, name: str, body: bytes, signature: Optional[str], event: str = "pull_request",
         delivery: str = "d-1", header: str = "X-Hub-Signature-256") -> tuple[int, dict]:
    headers = {"Content-Type": "application/json", "X-GitHub-Event": event,
               "X-GitHub-Delivery": delivery} if header != "Stripe-Signature" else \
        {"Content-Type": "application/json"}
    if signature is not None:
        headers[header] = signature
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


def test_a_stripe_signed_event_within_tolerance_is_answered(gateway, fake_provider):
    gw, fake = gateway
    fake_provider.queue(text("A payment of 4200 succeeded."))
    body = json.dumps({"id": "evt_1", "type": "payment_intent.succeeded",
                       "data": {"object": {"amount": 4200}}}).encode()
    now = int(time.time())

    def stripe(signature: Optional[str]) -> tuple[int, dict]:
        return post(gw, "stripe", body, signature, header="Stripe-Signature")

    status, error = stripe(sign_stripe(STRIPE_SECRET, body, now - 400))  # stale: a replay
    assert status == 401 and "more than 300s from now" in error["error"]["message"]
    assert stripe(sign(STRIPE_SECRET, body))[0] == 401  # GitHub's form is not Stripe's
    assert post(gw, "stripe", body, sign(STRIPE_SECRET, body))[0] == 401
    assert stripe(sign_stripe("whsec_other", body, now))[0] == 401
    assert fake_provider.requests == []
    assert stripe(sign_stripe(STRIPE_SECRET, body, now - 60)) == (202, {"accepted": True,
                                                                       "id": "evt_1"})
    assert fake.wait_for_sent(CHAT, 1) == ["A payment of 4200 succeeded."]
    asked = [m for m in fake_provider.requests[0]["messages"] if m["role"] == "user"][-1]
    assert asked["content"] == "Stripe says payment_intent.succeeded: 4200"
    assert stripe(sign_stripe(STRIPE_SECRET, body, now)) == (200, {"duplicate": True,
                                                                   "id": "evt_1"})
