"""A /stop between "turn accepted" and "turn started" stops the turn that follows it, and the user is
told (issue 15 item 6). Real Telegram adapter (FakeTelegram), real runner and agents, FakeProvider."""
from __future__ import annotations

import threading

import pytest

from gateway.runner import STOPPED_BEFORE_START
from tests.fake_provider import slow, text
from tests.waiting import wait_until

USER = CHAT = 1001
KEY = f"telegram:dm:{CHAT}"


class Gate:
    """Wraps the agent factory; ``hold()`` makes agent creation (or the agent's turn) wait for ``go``."""

    def __init__(self, where: str) -> None:
        self.where, self.entered, self.go = where, threading.Event(), threading.Event()

    def __call__(self, real):
        def make(**kwargs):
            if self.where == "factory" and not self.go.is_set():
                self.entered.set()
                assert self.go.wait(30)
            agent = real(**kwargs)
            if self.where == "turn":
                run = agent.run_conversation

                def late_start(*args, **kw):  # the thread runs, the agent's turn has not begun yet
                    if not self.go.is_set():
                        self.entered.set()
                        assert self.go.wait(30)
                    return run(*args, **kw)

                agent.run_conversation = late_start
            return agent

        make.default_model = getattr(real, "default_model", None)
        return make


@pytest.fixture
def allowed(monkeypatch):
    monkeypatch.setenv("TELEGRAM_ALLOWED_USERS", str(USER))


def _users(gw) -> list[str]:
    sid = gw.session_for(KEY)
    return [m["content"] for m in gw.db.get_messages(sid, include_inactive=True) if m["role"] == "user"]


def test_stop_while_the_agent_is_being_made(make_gateway, fake_telegram, provider_env, allowed):
    gate = Gate("factory")
    gw = make_gateway(telegram=fake_telegram, wrap_factory=gate)
    fake_telegram.push_message(CHAT, USER, "do the slow thing")
    assert gate.entered.wait(20)
    fake_telegram.push_message(CHAT, USER, "/stop")
    assert fake_telegram.wait_for_sent(CHAT) == ["Stopping the current turn."]
    gate.go.set()
    provider_env.queue(text("answer to the next one"))
    fake_telegram.push_message(CHAT, USER, "next one")
    assert fake_telegram.wait_for_sent(CHAT, 2)[1] == "answer to the next one"
    assert len(provider_env.requests) == 1  # the stopped turn never reached the model
    assert _users(gw) == ["do the slow thing", "next one"]  # its words are kept
    # and the model sees them: the agent made for the stopped turn reads the kept message
    said = [m.get("content") for m in provider_env.last_request["messages"]]
    assert "do the slow thing" in said and said[-1] == "next one"


def test_stop_reaches_a_message_still_waiting_in_the_queue(make_gateway, fake_telegram, provider_env, allowed):
    gate = Gate("factory")
    gw = make_gateway(telegram=fake_telegram, wrap_factory=gate)
    fake_telegram.push_message(CHAT, USER, "first")
    assert gate.entered.wait(20)
    fake_telegram.push_message(CHAT, USER, "second, queued")
    fake_telegram.push_message(CHAT, USER, "/stop")  # the running one
    fake_telegram.push_message(CHAT, USER, "/stop")  # the one accepted but not started
    assert fake_telegram.wait_for_sent(CHAT, 2) == ["Stopping the current turn.",
                                                    "Stopping your last message before it starts."]
    fake_telegram.push_message(CHAT, USER, "/stop")
    assert fake_telegram.wait_for_sent(CHAT, 3)[2] == "Nothing is running."
    gate.go.set()
    assert fake_telegram.wait_for_sent(CHAT, 4)[3] == STOPPED_BEFORE_START  # told when it is skipped
    provider_env.queue(text("fresh answer"))
    fake_telegram.push_message(CHAT, USER, "third")
    assert fake_telegram.wait_for_sent(CHAT, 5)[4] == "fresh answer"
    assert len(provider_env.requests) == 1
    assert _users(gw) == ["first", "second, queued", "third"]


def test_stop_just_before_the_agent_begins_its_turn_is_not_lost(make_gateway, fake_telegram, provider_env,
                                                                  allowed):
    gate = Gate("turn")
    gw = make_gateway(telegram=fake_telegram, wrap_factory=gate)
    provider_env.queue(slow(text("this answer must not arrive"), 10))
    fake_telegram.push_message(CHAT, USER, "start something")
    assert gate.entered.wait(20)
    fake_telegram.push_message(CHAT, USER, "/stop")  # the agent clears interrupts when its turn begins
    assert fake_telegram.wait_for_sent(CHAT) == ["Stopping the current turn."]
    gate.go.set()
    sid = gw.session_for(KEY)
    wait_until(lambda: not gw.runner.is_busy(sid), 30, "the stopped turn to end (cut, or never sent)")
    if provider_env.pending:  # stopped before it asked the provider: its slow reply was never taken
        provider_env.reset()
    provider_env.queue(text("after the stop"))
    fake_telegram.push_message(CHAT, USER, "are you there?")
    assert fake_telegram.wait_for_sent(CHAT, 2, timeout=30)[1] == "after the stop"
    assert "this answer must not arrive" not in fake_telegram.sent_texts(CHAT)
    assert _users(gw)[:2] == ["start something", "are you there?"]
