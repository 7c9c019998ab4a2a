"""Delegation behind the gateway: `/stop` in a chat reaches the subagents of the running turn."""
from __future__ import annotations

import time

import pytest

from tests.fake_provider import slow, text
from tests.subagent_script import Router, delegate, is_child

USER, CHAT = 1001, 1001


@pytest.fixture
def tg(make_gateway, fake_telegram, monkeypatch):
    monkeypatch.setenv("TELEGRAM_ALLOWED_USERS", str(USER))
    return make_gateway(telegram=fake_telegram), fake_telegram


def test_stop_in_a_chat_interrupts_the_subagents(tg, provider_env):
    gw, fake = tg
    provider_env.handler = Router(parent=[delegate("wait a", "wait b"), text("after the stop")],
                                  children={"wait a": [slow(text("never a"), 60)],
                                            "wait b": [slow(text("never b"), 60)]})
    fake.push_message(CHAT, USER, "split the work")
    assert provider_env.wait_for_requests(3, timeout=20)  # the turn's call and both children's
    fake.push_message(CHAT, USER, "/stop")
    assert fake.wait_for_sent(CHAT)[0] == "Stopping the current turn."

    sid = gw.session_for(f"telegram:dm:{CHAT}")
    deadline = time.monotonic() + 20
    while [c["status"] for c in gw.db.list_children(sid)].count("interrupted") < 2:  # recorded at the end
        assert time.monotonic() < deadline, gw.db.list_children(sid)
        time.sleep(0.05)
    children = gw.db.list_children(sid)
    assert [c["status"] for c in children] == ["interrupted", "interrupted"]
    assert sum(is_child(b) for b in provider_env.requests) == 2
