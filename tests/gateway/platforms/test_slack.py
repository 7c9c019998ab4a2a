"""Slack end to end: a loopback fake speaking Slack's Web API and Socket Mode wire formats ->
the slack-bolt adapter -> the runner -> real agents -> FakeProvider."""
from __future__ import annotations

import pytest

from gateway.platforms.slack import build
from gateway.sessions import session_key
from tests.fake_provider import text, tool_calls
from tests.gateway.platforms.conftest import (LONG_ANSWER, PNG, VOICE, last_user_message,
                                              user_texts, wait_until)
from tests.gateway.platforms.fake_slack import APP_TOKEN, BOT_TOKEN, BOT_USER, FakeSlack

ALICE, BOB, EVE = "UALICE001", "UBOB00001", "UEVE00001"
DM, CHANNEL = "DALICE001", "CGENERAL1"
_ts = iter(range(1, 10_000))


def ts() -> str:
    return f"1700000000.{next(_ts):06d}"


def dm(user: str, words: str, channel: str = DM, **extra) -> dict:
    return {"type": "message", "channel_type": "im", "channel": channel, "user": user,
            "text": words, "ts": ts(), **extra}


@pytest.fixture(scope="module")
def fake_slack():
    fake = FakeSlack().start()  # one fake for the module; each test has its own gateway
    yield fake
    fake.stop()


@pytest.fixture
def slack(fake_slack, make_gateway, monkeypatch):
    fake = fake_slack
    fake.reset()
    monkeypatch.setenv("SLACK_ALLOWED_USERS", f"{ALICE},{BOB}")
    adapter = build({"bot_token": BOT_TOKEN, "app_token": APP_TOKEN,
                     "base_url": fake.base_url}, {})
    before = fake.connections
    gw = make_gateway(adapters=(adapter,))
    wait_until(lambda: fake.connections > before, what="the Socket Mode connection")
    return gw, fake


def test_a_dm_turn_with_a_tool_call(slack, provider_env):
    gw, fake = slack
    provider_env.queue(tool_calls([("todo", {"todos": [{"id": "1", "content": "buy milk",
                                                        "status": "pending"}]})]),
                       text("Added **buy milk** to your list."))
    fake.push(dm(ALICE, "remind me to buy milk"))
    [reply] = fake.wait_posted(DM)
    assert reply["text"] == "Added *buy milk* to your list." and not reply.get("thread_ts")
    assert any(m["role"] == "tool" for m in provider_env.requests[-1]["messages"])
    assert user_texts(gw.db, session_key("slack", "dm", DM)) == ["remind me to buy milk"]


def test_in_a_channel_only_a_mention_is_answered_in_its_thread(slack, provider_env):
    gw, fake = slack
    provider_env.queue(text("Hello, Bob."), text("Still here."))
    fake.push({"type": "message", "channel_type": "channel", "channel": CHANNEL, "user": BOB,
               "text": "just chatting among ourselves", "ts": ts()})
    root = ts()
    fake.push({"type": "app_mention", "channel": CHANNEL, "user": BOB, "ts": root,
               "text": f"<@{BOT_USER}> say hello"})
    [reply] = fake.wait_posted(CHANNEL)
    assert reply["text"] == "Hello, Bob." and reply["thread_ts"] == root
    fake.push({"type": "app_mention", "channel": CHANNEL, "user": BOB, "ts": ts(),
               "thread_ts": root, "text": f"<@{BOT_USER}> are you there?"})
    assert fake.wait_posted(CHANNEL, 2)[1]["thread_ts"] == root
    assert user_texts(gw.db, session_key("slack", "thread", CHANNEL, BOB, root)) == [
        "say hello", "are you there?"]  # the thread is one session
    assert len(provider_env.requests) == 2


def test_an_unknown_user_is_refused(slack, provider_env):
    _gw, fake = slack
    fake.push(dm(EVE, "let me in", channel="DEVE00001"))
    [refusal] = fake.wait_posted("DEVE00001")
    assert "hermes pairing approve slack" in refusal["text"]
    assert provider_env.requests == []


def test_a_long_answer_is_split(slack, provider_env):
    _gw, fake = slack
    provider_env.queue(text(LONG_ANSWER))
    fake.push(dm(ALICE, "tell me everything"))
    pieces = wait_until(lambda: (lambda got: got if sum(len(p["text"]) for p in got)
                                 >= len(LONG_ANSWER) - 200 else None)(
        [p for p in fake.posted if p["channel"] == DM]), what="the whole answer")
    assert len(pieces) >= 10 and all(len(p["text"]) <= 3_900 for p in pieces)
    assert "\n\n".join(p["text"] for p in pieces) == LONG_ANSWER


def _file(fake, name: str, mime: str, data: bytes) -> dict:
    fake.files[name] = data
    return {"id": "F" + name.upper()[:8], "name": name, "mimetype": mime, "size": len(data),
            "url_private_download": f"http://127.0.0.1:{fake.port}/files/{name}"}


def test_an_image_and_a_voice_note_reach_the_model(slack, provider_env, stt):
    _gw, fake = slack
    provider_env.queue(text("A single pixel."), text("Nothing today."))
    fake.push(dm(ALICE, "what is this?", subtype="file_share",
                 files=[_file(fake, "pixel.png", "image/png", PNG)]))
    fake.wait_posted(DM)
    parts = last_user_message(provider_env)
    assert parts[0]["type"] == "text" and parts[0]["text"].startswith("what is this?")
    assert any(p.get("type") == "image_url" and p["image_url"]["url"].startswith(
        "data:image/png;base64,") for p in parts)
    fake.push(dm(ALICE, "", subtype="file_share",
                 files=[_file(fake, "audio_message.m4a", "audio/mp4", VOICE)]))
    said = [p["text"] for p in fake.wait_posted(DM, 3)]
    assert said[1] == f"🎤 “{stt.transcript}”" and said[2] == "Nothing today."
    assert stt.received[0]["data"] == VOICE
    assert stt.transcript in last_user_message(provider_env)


def test_the_agents_file_is_uploaded_into_the_thread(slack, provider_env):
    _gw, fake = slack
    provider_env.queue(tool_calls([("write_file", {"path": "report.txt",
                                                   "content": "all green\n"})]),
                       text("Here is the report.\nMEDIA: report.txt"))
    root = ts()
    fake.push({"type": "app_mention", "channel": CHANNEL, "user": BOB, "ts": root,
               "text": f"<@{BOT_USER}> write the report"})
    [upload] = fake.wait_uploads()
    assert (upload["name"], upload["data"]) == ("report.txt", b"all green\n")
    assert (upload["channel"], upload["thread_ts"]) == (CHANNEL, root)
    [said] = fake.wait_posted(CHANNEL)
    assert said["text"] == "Here is the report." and said["thread_ts"] == root


def test_a_dropped_socket_is_reconnected_and_nothing_is_lost(slack, provider_env):
    gw, fake = slack
    provider_env.queue(text("first answer"), text("second answer"))
    fake.push(dm(ALICE, "first"))
    fake.wait_posted(DM)
    before = fake.connections
    fake.drop()  # Slack closes the socket; the client opens a new one
    fake.push(dm(ALICE, "second"))
    assert [p["text"] for p in fake.wait_posted(DM, 2)] == ["first answer", "second answer"]
    assert fake.connections > before
    assert user_texts(gw.db, session_key("slack", "dm", DM)) == ["first", "second"]
