"""Skills through the gateway's Telegram path (FakeTelegram -> runner -> real agents -> FakeProvider):
`/skill text` attaches the skill, /help lists skills, and the review runs after the reply is sent,
its one line following in the same chat."""
from __future__ import annotations

import pytest

from tests.fake_provider import text, tool_calls
from tests.test_skill_review import Script, busy_turn
from tests.test_skills_loader import write_skill

USER = CHAT = 1001


@pytest.fixture
def tg(make_gateway, fake_telegram, monkeypatch, hermes_home):
    monkeypatch.setenv("TELEGRAM_ALLOWED_USERS", str(USER))
    write_skill(hermes_home / "skills", "ops/deploy-app", "name: deploy-app\ndescription: Deploy the app.",
                body="Run make deploy and watch the logs.\n")
    return make_gateway(telegram=fake_telegram), fake_telegram


def test_a_skill_command_attaches_the_skill(tg, provider_env):
    gw, fake = tg
    provider_env.queue(text("Deployed to staging."))
    fake.push_message(CHAT, USER, "/deploy_app staging please")  # Telegram commands allow only _
    assert fake.wait_for_sent(CHAT) == ["Deployed to staging."]
    user = provider_env.requests[0]["messages"][-1]["content"]
    assert user.startswith('[The user invoked the skill "deploy-app"')
    assert "Run make deploy and watch the logs." in user and user.endswith("staging please")
    sid = gw.session_for(f"telegram:dm:{CHAT}")
    stored = [m["content"] for m in gw.db.get_active_messages(sid) if m["role"] == "user"]
    assert stored == [user]
    fake.push_message(CHAT, USER, "/help")
    help_text = fake.wait_for_sent(CHAT, 2)[1]
    assert "Skills (send /<skill> [text] to use one):" in help_text and "/deploy-app" in help_text
    provider_env.queue(text("No such skill, answering anyway."))
    fake.push_message(CHAT, USER, "/nonexistent thing")
    assert fake.wait_for_sent(CHAT, 3)[2] == "No such skill, answering anyway."
    assert provider_env.requests[-1]["messages"][-1]["content"] == "/nonexistent thing"


def test_the_review_runs_after_the_reply_and_reports_in_the_chat(tg, provider_env, hermes_home):
    gw, fake = tg
    script = Script(provider_env)
    script.main += busy_turn(10, "All ten done.", view="deploy-app")
    script.review += [tool_calls([("skill_manage", {"action": "patch", "name": "deploy-app",
                                                    "old_string": "watch the logs.",
                                                    "new_string": "watch the logs, then curl /health."})]),
                      text("patched")]
    fake.push_message(CHAT, USER, "do the ten steps")
    sent = fake.wait_for_sent(CHAT, 2)
    assert sent[0] == "All ten done."
    assert sent[1].startswith("Skill review: patched 'deploy-app'")
    assert "curl /health" in (hermes_home / "skills/ops/deploy-app/SKILL.md").read_text()
    assert "Skills this conversation used: deploy-app." in script.review_requests[0]["messages"][-1]["content"]
