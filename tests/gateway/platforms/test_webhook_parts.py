"""The webhook's pure parts: signatures, the settings' errors, and the prompt template."""
from __future__ import annotations

import pytest

from gateway.platforms.webhook.prompt import decode, render
from gateway.platforms.webhook.settings import WebhookConfigError, read_hook, read_hooks
from gateway.platforms.webhook.signing import (TOLERANCE, check, sign, sign_stripe, signature_ok,
                                               stripe_problem)


def test_signatures():
    body = b'{"zen": "Keep it logically awesome."}'
    good = sign("s3cret", body)
    assert good.startswith("sha256=") and len(good) == 7 + 64
    assert signature_ok("s3cret", body, good) and signature_ok("s3cret", body, good[7:].upper())
    assert not signature_ok("s3cret", body + b"\n", good)
    assert not signature_ok("other", body, good)
    assert not signature_ok("s3cret", body, None) and not signature_ok("", body, sign("", body))
    assert not signature_ok("s3cret", body, "sha256=\udcff")  # undecodable header: refused


def test_stripe_signatures():
    body, now = b'{"id": "evt_1"}', 1_700_000_000
    good = sign_stripe("whsec", body, now)
    assert stripe_problem("whsec", body, good, now) is None
    assert stripe_problem("whsec", body, good, now + TOLERANCE) is None
    assert "from now" in stripe_problem("whsec", body, good, now + TOLERANCE + 1)
    assert "from now" in stripe_problem("whsec", body, good, now - TOLERANCE - 1)  # clock skew
    rotated = f"t={now},v1={'0' * 64},{good.split(',')[1]},v0=abc"  # two secrets during a roll
    assert stripe_problem("whsec", body, rotated, now) is None
    assert stripe_problem("whsec", body + b" ", good, now).startswith("Wrong")
    assert stripe_problem("whsec", body, f"t={now}", now).startswith("Malformed")
    assert stripe_problem("whsec", body, "v1=ab,t=x", now).startswith("Malformed")
    assert stripe_problem("whsec", body, None, now).startswith("Missing")
    headers = {"Stripe-Signature": good, "X-Hub-Signature-256": sign("whsec", body)}
    assert check("stripe", "whsec", body, headers, now) is None
    assert check("github", "whsec", body, headers, now) is None
    assert check("github", "whsec", body, {"Stripe-Signature": good}, now).startswith("Missing")


def test_settings_name_what_is_wrong():
    hook = read_hook("gh", {"secret_env": "GH", "deliver": "telegram:42", "events": "push, ping"},
                     {"GH": "x"})
    assert hook.secret == "x" and hook.events == {"push", "ping"} and "x" not in repr(hook)
    with pytest.raises(WebhookConfigError, match="GH .secret_env. is not set"):
        read_hook("gh", {"secret_env": "GH", "deliver": "telegram:42"}, {})
    with pytest.raises(WebhookConfigError, match="deliver: no delivery target"):
        read_hook("gh", {"secret": "x"}, {})
    with pytest.raises(WebhookConfigError, match="deliver 'origin' needs a chat"):
        read_hook("gh", {"secret": "x", "deliver": "origin"}, {})
    hooks, errors = read_hooks({"webhooks": {"ok": {"secret": "x", "deliver": "local"},
                                             "bad name!": {}}}, {})
    assert list(hooks) == ["ok"] and len(errors) == 1 and "a webhook name is" in errors[0]
    assert read_hooks({}, {}) == ({}, [])
    assert read_hook("s", {"secret": "x", "deliver": "local", "signature": "Stripe"},
                     {}).signature == "stripe"
    assert read_hook("g", {"secret": "x", "deliver": "local"}, {}).signature == "github"
    with pytest.raises(WebhookConfigError, match="signature is one of github, stripe, not 'svix'"):
        read_hook("s", {"secret": "x", "deliver": "local", "signature": "svix"}, {})


def test_the_prompt_template():
    payload = {"action": "closed", "issue": {"title": "Crash", "labels": [{"name": "bug"}]}}
    said = render("{event}: {issue.title} [{issue.labels.0.name}] {missing.field}", "gh", "issues",
                  payload)
    assert said == "issues: Crash [bug] {missing.field}"
    assert '"action": "closed"' in render("{payload}", "gh", "", payload)
    assert len(render("{payload}", "gh", "", "x" * 50_000)) < 20_100
    assert decode(b"payload=%7B%22a%22%3A1%7D") == {"a": 1} and decode(b"plain") == "plain"
