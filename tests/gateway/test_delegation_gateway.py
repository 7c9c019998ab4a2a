"""Delegation behind the gateway: `/stop` in a chat, or an API client that leaves, stops the subagents."""
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


def test_an_api_client_that_goes_away_stops_the_subagents(gateway_process, fake_provider):
    import http.client
    import json

    from hermes_state import SessionDB

    gw = gateway_process()
    fake_provider.handler = Router(parent=[delegate("wait a", "wait b"), text("after the stop")],
                                   children={"wait a": [slow(text("never a"), 60)],
                                             "wait b": [slow(text("never b"), 60)]})
    conn = http.client.HTTPConnection("127.0.0.1", gw.port, timeout=30)
    conn.request("POST", "/v1/chat/completions", body=json.dumps(
        {"model": "m", "stream": True, "messages": [{"role": "user", "content": "split the work"}]}),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {gw.key}",
                 "X-Hermes-Session-Key": "leaver"})
    resp = conn.getresponse()
    sid = resp.getheader("X-Hermes-Session-Id")
    assert resp.status == 200 and sid
    assert fake_provider.wait_for_requests(3, timeout=30)  # the turn's call and both children's
    conn.sock.shutdown(2)
    conn.close()

    deadline = time.monotonic() + 30
    with SessionDB() as db:
        while [c["status"] for c in db.list_children(sid)] != ["interrupted", "interrupted"]:
            assert time.monotonic() < deadline, db.list_children(sid)
            time.sleep(0.05)
    assert sum(is_child(b) for b in fake_provider.requests) == 2
