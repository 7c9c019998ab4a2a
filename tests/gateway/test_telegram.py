"""The Telegram adapter end to end: FakeTelegram (real HTTP, real python-telegram-bot) -> runner -> real
agents -> FakeProvider, and the gateway's reactions of SPEC §7 produced for real."""
from __future__ import annotations

import os
import threading
import time

import pytest

from gateway.runner import SOFT_DEFERRED
from tests.fake_provider import error_413, slow, text
from tests.gateway.conftest import pairing_main

USER, CHAT = 1001, 1001


@pytest.fixture
def tg(make_gateway, fake_telegram, monkeypatch):
    monkeypatch.setenv("TELEGRAM_ALLOWED_USERS", f"{USER},2002")
    return make_gateway(telegram=fake_telegram), fake_telegram


def _user_texts(gw, sid):
    return [m["content"] for m in gw.db.get_active_messages(sid) if m["role"] == "user"]


def test_user_gets_reply_with_typing(tg, provider_env):
    gw, fake = tg
    provider_env.queue(text("Hi there, human"))
    fake.push_message(CHAT, USER, "hello bot")
    assert fake.wait_for_sent(CHAT) == ["Hi there, human"]
    assert any(int(p["chat_id"]) == CHAT and p["action"] == "typing" for p in fake.calls_of("sendChatAction"))
    sid = gw.session_for(f"telegram:dm:{CHAT}")
    assert _user_texts(gw, sid) == ["hello bot"]


def test_unknown_user_pairs(tg, provider_env, capsys):
    gw, fake = tg
    stranger = 5555
    fake.push_message(stranger, stranger, "let me in")
    refusal = fake.wait_for_sent(stranger)[0]
    assert "hermes pairing approve telegram" in refusal
    assert provider_env.requests == []
    code = refusal.split("hermes pairing approve telegram ")[1].split()[0]
    assert pairing_main(["list"]) == 0 and code in capsys.readouterr().out
    assert pairing_main(["approve", "telegram", code]) == 0
    assert pairing_main(["approve", "telegram", code]) == 1  # one-time
    provider_env.queue(text("welcome aboard"))
    fake.push_message(stranger, stranger, "hello again")
    assert fake.wait_for_sent(stranger, 2)[1] == "welcome aboard"
    assert pairing_main(["revoke", "telegram", str(stranger)]) == 0
    fake.push_message(stranger, stranger, "still here?")
    assert "pairing approve" in fake.wait_for_sent(stranger, 3)[2]


def test_lock_contended_turn_defers_softly(tg, provider_env):
    gw, fake = tg
    provider_env.queue(text("first answer"))
    fake.push_message(CHAT, USER, "first message")
    fake.wait_for_sent(CHAT)
    key = f"telegram:dm:{CHAT}"
    sid = gw.session_for(key)
    before = gw.db.get_active_messages(sid)
    holder = f"pid={os.getpid()}:tid=1:agent=x:nonce=y"
    assert gw.db.try_acquire_compression_lock(sid, holder)
    try:
        provider_env.handler = lambda body: error_413()
        fake.push_message(CHAT, USER, "second message")
        sent = fake.wait_for_sent(CHAT, 2)
    finally:
        gw.db.release_compression_lock(sid, holder)
    assert "compression is already running" in sent[1].lower() or sent[1] == SOFT_DEFERRED
    assert gw.session_for(key) == sid
    after = gw.db.get_active_messages(sid)
    assert after[: len(before)] == before
    assert _user_texts(gw, sid) == ["first message", "second message"]
    provider_env.handler = None  # the next message goes through in the same session
    provider_env.queue(text("back to normal"))
    fake.push_message(CHAT, USER, "third message")
    assert fake.wait_for_sent(CHAT, 3)[2] == "back to normal"
    assert gw.session_for(key) == sid


def test_exhausted_turn_resets_the_chat(tg, provider_env):
    gw, fake = tg
    provider_env.queue(text("first answer"))
    fake.push_message(CHAT, USER, "remember the blue whale")
    fake.wait_for_sent(CHAT)
    key = f"telegram:dm:{CHAT}"
    old = gw.session_for(key)
    provider_env.handler = lambda body: error_413()
    fake.push_message(CHAT, USER, "this will not fit")
    notice = fake.wait_for_sent(CHAT, 2)[1]
    assert "fresh session" in notice and old in notice
    new = gw.session_for(key)
    assert new and new != old
    assert gw.db.get_session(old) is not None
    assert "remember the blue whale" in _user_texts(gw, old)
    assert any(hit.get("session_id") == old for hit in gw.db.search_messages("whale"))
    provider_env.handler = None
    provider_env.queue(text("fresh start"))
    fake.push_message(CHAT, USER, "hello again")
    assert fake.wait_for_sent(CHAT, 3)[2] == "fresh start"
    assert _user_texts(gw, new) == ["hello again"]


def test_one_turn_at_a_time_per_session_in_order(tg, provider_env):
    gw, fake = tg
    lock = threading.Lock()
    active: dict[str, int] = {}
    overlaps: list[str] = []

    def handler(body):
        # the chat a request belongs to, from its first user message
        tag = next(m["content"] for m in body["messages"] if m["role"] == "user").split()[0]
        with lock:
            active[tag] = active.get(tag, 0) + 1
            if active[tag] > 1:
                overlaps.append(tag)
        time.sleep(0.3)
        with lock:
            active[tag] -= 1
        last = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
        return text(f"answer to {last}")

    provider_env.handler = handler
    other = 2002
    for i in range(3):
        fake.push_message(CHAT, USER, f"alpha {i}")
    fake.push_message(other, other, "beta 0")
    assert fake.wait_for_sent(CHAT, 3) == [f"answer to alpha {i}" for i in range(3)]
    assert fake.wait_for_sent(other) == ["answer to beta 0"]
    assert overlaps == []


def test_group_messages_are_keyed_per_user_and_long_replies_split(tg, provider_env):
    gw, fake = tg
    group = -100777
    long_reply = "\n\n".join(f"Paragraph {i} " + "word " * 300 for i in range(6))  # ~9,000 chars
    provider_env.queue(text("for user one"), text(long_reply))
    fake.push_message(group, USER, "hi from one", chat_type="supergroup")
    fake.wait_for_sent(group, 1)
    fake.push_message(group, 2002, "hi from two", chat_type="supergroup")
    sent = fake.wait_for_sent(group, 4)
    s1, s2 = gw.session_for(f"telegram:group:{group}:{USER}"), gw.session_for(f"telegram:group:{group}:2002")
    assert s1 and s2 and s1 != s2
    pieces = sent[1:]
    assert len(pieces) == 3 and all(len(p) <= 4096 for p in pieces)
    assert all(p.startswith("Paragraph") for p in pieces)
    assert "\n\n".join(pieces).split() == long_reply.split()


def test_slash_commands(tg, provider_env):
    gw, fake = tg
    provider_env.queue(text("answer one"))
    fake.push_message(CHAT, USER, "hello")
    fake.wait_for_sent(CHAT)
    key = f"telegram:dm:{CHAT}"
    old = gw.session_for(key)
    fake.push_message(CHAT, USER, "/usage")
    assert old in fake.wait_for_sent(CHAT, 2)[1]
    fake.push_message(CHAT, USER, "/model other-model")
    assert "other-model" in fake.wait_for_sent(CHAT, 3)[2]
    fake.push_message(CHAT, USER, "/stop")
    assert fake.wait_for_sent(CHAT, 4)[3] == "Nothing is running."
    fake.push_message(CHAT, USER, "/new")
    assert "new session" in fake.wait_for_sent(CHAT, 5)[4].lower()
    assert gw.session_for(key) not in (None, old)
    assert gw.db.get_session(old) is not None
    fake.push_message(CHAT, USER, "after reset")
    fake.wait_for_sent(CHAT, 6)
    assert provider_env.last_request["model"] == "other-model"


def test_interrupt_policy_stops_the_running_turn(make_gateway, fake_telegram, provider_env, monkeypatch):
    monkeypatch.setenv("TELEGRAM_ALLOWED_USERS", str(USER))
    gw = make_gateway(telegram=fake_telegram, busy_policy="interrupt")
    provider_env.queue(slow(text("too slow to matter"), 20), text("answer to the second"))
    fake_telegram.push_message(CHAT, USER, "first, slow")
    assert provider_env.wait_for_requests(1, timeout=20)
    fake_telegram.push_message(CHAT, USER, "second, urgent")
    assert fake_telegram.wait_for_sent(CHAT) == ["answer to the second"]
    sid = gw.session_for(f"telegram:dm:{CHAT}")
    assert _user_texts(gw, sid) == ["first, slow", "second, urgent"]


def test_a_failed_summary_is_told_to_the_chat_once(tg, provider_env):
    from tests.fake_provider import server_error
    from tests.test_compression_e2e import is_summary_request

    gw, fake = tg
    for i in range(8):
        provider_env.queue(text(f"answer {i}"))
        # long enough that the history, not the fixed prompt (tools, skills index), dominates the
        # request: a 413 without a stated limit aims the window at 3/4 of what was sent
        fake.push_message(CHAT, USER, f"message {i} " + "x" * 1200)
        fake.wait_for_sent(CHAT, i + 1)
    state = {"rejected": False}

    def reply(body):
        if is_summary_request(body):
            return server_error(500)
        if not state["rejected"]:
            state["rejected"] = True
            return error_413()
        return text("answer after compaction")

    provider_env.handler = reply
    fake.push_message(CHAT, USER, "one more")
    fake.wait_for(lambda: "answer after compaction" in fake.sent_texts(CHAT))
    turn = fake.sent_texts(CHAT)[8:]
    # told once, before the answer (a note that a message is cut for the tiny window may join it)
    failed = [i for i, t in enumerate(turn) if "summary failed" in t.lower()]
    assert len(failed) == 1 and turn[failed[0]].startswith("⚠")
    assert turn[-1] == "answer after compaction" and failed[0] < len(turn) - 1
    sid = gw.session_for(f"telegram:dm:{CHAT}")
    stored = [m["content"] for m in gw.db.get_messages(sid, include_inactive=True) if m["role"] == "user"]
    assert all(any(s.startswith(f"message {i} ") for s in stored) for i in range(8))


def test_replies_in_a_forum_topic_go_back_to_that_topic(tg, provider_env):
    gw, fake = tg
    group, topic = -100777, 42
    provider_env.queue(text("answer in the topic"))
    fake.push_message(group, USER, "question in a topic", chat_type="supergroup", thread_id=topic)
    assert fake.wait_for_sent(group) == ["answer in the topic"]
    sent = [p for p in fake.calls_of("sendMessage") if int(p["chat_id"]) == group]
    assert int(sent[0]["message_thread_id"]) == topic
    typing = [p for p in fake.calls_of("sendChatAction") if int(p["chat_id"]) == group]
    assert typing and all(int(p["message_thread_id"]) == topic for p in typing)  # "typing…" there
    assert gw.session_for(f"telegram:thread:{group}:{topic}:{USER}") is not None
