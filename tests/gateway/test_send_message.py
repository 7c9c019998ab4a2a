"""``send_message`` within the sender's rights: the owner at the CLI sends anywhere (through the
platform's own sender: the fake Bot API); a chat user only to their own chat (through the
running gateway's adapters). Files: tests/gateway/platforms/test_email.py."""
from __future__ import annotations

import json

from gateway.send_message import allowed, unavailable
from hermes_core.config import load_config, load_plugins
from tests.cli.conftest import hermes_env, run_hermes
from tests.fake_provider import text, tool_calls

TEAM, ALICE = 4242, 1001


def _tool_results(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def test_who_may_send_where():
    origin = {"platform": "telegram", "chat_id": "1001", "thread_id": None}
    assert allowed(("slack", "C0123456", None), None, None)  # the owner: anywhere
    assert allowed(("telegram", "1001", "7"), "telegram:1001", origin)  # own chat, any topic
    assert not allowed(("telegram", "999", None), "telegram:1001", origin)
    assert not allowed(("email", "1001", None), "telegram:1001", origin)
    assert not allowed(("telegram", "1001", None), "webhook:gh", None)  # no chat of its own


def test_offered_only_where_there_is_somewhere_to_send(hermes_home, monkeypatch):
    load_plugins(load_config())
    assert "no chat platform is configured" in unavailable()
    (hermes_home / "config.yaml").write_text("gateway:\n  matrix:\n    homeserver: http://h\n")
    assert unavailable() is None
    (hermes_home / "config.yaml").write_text("gateway:\n  telegram:\n    allowed_users: [1]\n")
    assert unavailable() is None  # a section of its own model, written (not its default)
    (hermes_home / "config.yaml").write_text("gateway:\n  working_dir: /tmp\n")
    assert "no chat platform is configured" in unavailable()
    (hermes_home / "config.yaml").write_text("")
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", "1:x")
    assert unavailable() is None


def test_the_owner_sends_anywhere_from_the_cli(fake_provider, fake_telegram):
    fake_provider.queue(tool_calls([("send_message", {"target": f"telegram:{TEAM}",
                                                      "text": "The build is green."})]),
                        text("Told the team."))
    env = hermes_env(fake_provider, TELEGRAM_BOT_TOKEN=fake_telegram.token,
                     TELEGRAM_BASE_URL=fake_telegram.base_url)
    res = run_hermes("-z", "tell the team the build is green", env=env)
    assert res.returncode == 0, res.stderr
    assert fake_telegram.sent_texts(TEAM) == ["The build is green."]
    assert json.loads(_tool_results(fake_provider.requests[1])[0]) == {
        "sent": [f"telegram:{TEAM}"], "files": []}


def test_a_chat_user_sends_only_to_their_own_chat(make_gateway, fake_telegram, provider_env,
                                                  monkeypatch):
    monkeypatch.setenv("TELEGRAM_ALLOWED_USERS", str(ALICE))
    provider_env.queue(
        tool_calls([("send_message", {"target": f"telegram:{TEAM}", "text": "spam"})]),
        tool_calls([("send_message", {"target": "origin", "text": "A note for you."})]),
        text("Done."))
    make_gateway(telegram=fake_telegram)
    fake_telegram.push_message(ALICE, ALICE, "message the team, or me")
    assert fake_telegram.wait_for_sent(ALICE, 2) == ["A note for you.", "Done."]
    refused = _tool_results(provider_env.requests[1])[0]
    assert "you may send only to this chat" in refused and f"telegram:{TEAM}" in refused
    assert fake_telegram.sent_texts(TEAM) == []
