"""SIGTERM during a turn, against ``python -m hermes_cli.main gateway run`` as a real subprocess: nothing received is lost."""
from __future__ import annotations

from pathlib import Path

from hermes_state import SessionDB
from tests.fake_provider import slow, text
from tests.gateway.conftest import GatewayProcess, gateway_main
from tests.gateway.fake_telegram import FakeTelegram


def _transcript(home: Path, session: str) -> list[tuple[str, str]]:
    with SessionDB(home / "state.db") as db:
        sid = db.get_session_for_key(f"api_server:session:{session}")
        assert sid, "the session key was never bound"
        return [(m["role"], m["content"]) for m in db.get_active_messages(sid) if m["role"] in ("user", "assistant")]


def test_sigterm_lets_the_running_turn_finish(hermes_home, fake_provider):
    fake_provider.queue(slow(text("finished during the drain"), 1.5))
    gw = GatewayProcess(hermes_home, fake_provider.base_url)
    reply = gw.post_async("please remember kiwi", "s1")
    assert fake_provider.wait_for_requests(1, timeout=30)
    assert gateway_main(["status"]) == 0
    assert gw.terminate_and_wait() == 0
    answer = reply.get(timeout=30)
    assert isinstance(answer, dict), answer
    assert answer["choices"][0]["message"]["content"] == "finished during the drain"
    assert _transcript(hermes_home, "s1") == [("user", "please remember kiwi"), ("assistant", "finished during the drain")]
    assert "gateway stopped" in (hermes_home / "logs" / "gateway.log").read_text()


def test_sigterm_past_the_drain_keeps_the_message_for_the_restart(hermes_home, fake_provider):
    fake_provider.queue(slow(text("never delivered"), 30))
    gw = GatewayProcess(hermes_home, fake_provider.base_url, "--drain-timeout", "0.5")
    gw.post_async("the secret word is mango", "s2")
    assert fake_provider.wait_for_requests(1, timeout=30)
    assert gw.terminate_and_wait() == 0
    assert ("user", "the secret word is mango") in _transcript(hermes_home, "s2")
    # after a restart the conversation continues with everything that was received
    fake_provider.queue(text("it was mango"))
    gw2 = GatewayProcess(hermes_home, fake_provider.base_url)
    answer = gw2.post_async("what was the word?", "s2").get(timeout=60)
    assert isinstance(answer, dict), answer
    users = [m["content"] for m in fake_provider.last_request["messages"] if m["role"] == "user"]
    assert users[0] == "the secret word is mango" and users[-1] == "what was the word?"
    assert gw2.terminate_and_wait() == 0


def test_sigterm_with_telegram_drains_and_replies(hermes_home, fake_provider):
    fake = FakeTelegram().start()
    try:
        fake_provider.queue(slow(text("drained reply"), 1.5))
        gw = GatewayProcess(hermes_home, fake_provider.base_url, api=False, TELEGRAM_BOT_TOKEN=fake.token,
                            TELEGRAM_BASE_URL=fake.base_url, TELEGRAM_ALLOWED_USERS="1001")
        fake.push_message(1001, 1001, "hello through the real CLI")
        assert fake_provider.wait_for_requests(1, timeout=30)
        assert gw.terminate_and_wait() == 0
        assert fake.sent_texts(1001) == ["drained reply"]
    finally:
        fake.stop()
    with SessionDB(hermes_home / "state.db") as db:
        sid = db.get_session_for_key("telegram:dm:1001")
        assert [(m["role"], m["content"]) for m in db.get_active_messages(sid)] == [
            ("user", "hello through the real CLI"), ("assistant", "drained reply")]
    log = (hermes_home / "logs" / "gateway.log").read_text()
    assert "telegram: polling" in log and fake.token not in log and "test-key" not in log
