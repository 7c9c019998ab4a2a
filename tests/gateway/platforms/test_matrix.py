"""Matrix end to end against a real Synapse: people on the homeserver (MatrixUser over the
client-server API) -> the matrix-nio adapter -> the runner -> real agents -> FakeProvider."""
from __future__ import annotations

import json
import uuid

import pytest

from gateway.platforms.matrix import build
from gateway.sessions import session_key
from tests.fake_provider import slow, text, tool_calls
from tests.gateway.platforms.conftest import (LONG_ANSWER, PNG, VOICE, last_user_message,
                                              user_texts, wait_until)
from tests.gateway.platforms.matrix_user import MatrixUser

PASSWORD = "correct horse battery"


def _account(synapse, who):
    name = f"{who}-{uuid.uuid4().hex[:8]}"
    made = synapse.register(name, PASSWORD)
    return MatrixUser(synapse.url, made["user_id"], made["access_token"])


@pytest.fixture
def matrix(synapse, make_gateway, monkeypatch):
    """A fresh bot account, two allowed people and a stranger; the gateway serving the bot."""
    bot, alice, bob, eve = (_account(synapse, w) for w in ("hermes", "alice", "bob", "eve"))
    monkeypatch.setenv("MATRIX_ALLOWED_USERS", f"{alice.user_id},{bob.user_id}")
    adapter = build({"homeserver": synapse.url, "user_id": bot.user_id,
                     "access_token": bot.token, "sync_timeout": 2}, {})
    gw = make_gateway(adapters=(adapter,))
    return gw, bot, alice, bob, eve


def _dm(alice, bot):
    room = alice.create_room([bot.user_id], direct=True)
    wait_until(lambda: bot.user_id in alice.members(room), what="the bot joining the DM")
    return room


def _bot_says(person, room, bot, n=1):
    return wait_until(lambda: (lambda got: got if len(got) >= n else None)(
        person.messages(room, bot.user_id)), what=f"{n} message(s) from the bot")


def test_a_dm_turn_with_a_tool_call(matrix, provider_env):
    gw, bot, alice, _bob, _eve = matrix
    provider_env.queue(tool_calls([("todo", {"todos": [{"id": "1", "content": "buy milk",
                                                        "status": "pending"}]})]),
                       text("Added **buy milk** to your list."))
    room = _dm(alice, bot)
    alice.say(room, "remind me to buy milk")
    reply = _bot_says(alice, room, bot)[0]["content"]
    assert reply["body"] == "Added **buy milk** to your list."
    assert "<strong>buy milk</strong>" in reply["formatted_body"]
    assert any(m["role"] == "tool" for m in provider_env.requests[-1]["messages"])
    assert user_texts(gw.db, session_key("matrix", "dm", room)) == ["remind me to buy milk"]


def test_a_group_message_needs_a_mention(matrix, provider_env):
    gw, bot, alice, bob, _eve = matrix
    room = alice.create_room([bot.user_id, bob.user_id])
    bob.join(room)
    wait_until(lambda: len(alice.members(room)) == 3, what="three members")
    provider_env.queue(text("Hello, Bob."))
    bob.say(room, "just chatting among ourselves")
    bob.say(room, f"{bot.user_id}: say hello", **{"m.mentions": {"user_ids": [bot.user_id]}})
    assert _bot_says(alice, room, bot)[0]["content"]["body"] == "Hello, Bob."
    assert len(provider_env.requests) == 1 and last_user_message(provider_env) == "say hello"
    assert user_texts(gw.db, session_key("matrix", "group", room, bob.user_id)) == ["say hello"]


def test_strangers_are_refused(matrix, provider_env):
    gw, bot, alice, _bob, eve = matrix
    declined = eve.create_room([bot.user_id], direct=True)
    room = alice.create_room([bot.user_id, eve.user_id])
    eve.join(room)
    wait_until(lambda: len(alice.members(room)) == 3, what="three members")
    eve.say(room, f"{bot.user_id} let me in")
    refusal = _bot_says(alice, room, bot)[0]["content"]["body"]
    assert "hermes pairing approve matrix" in refusal
    assert bot.user_id not in eve.members(declined)  # her invite was declined, not joined
    assert provider_env.requests == []


def test_a_long_answer_is_split(matrix, provider_env):
    _gw, bot, alice, _bob, _eve = matrix
    provider_env.queue(text(LONG_ANSWER))
    room = _dm(alice, bot)
    alice.say(room, "tell me everything")
    pieces = wait_until(lambda: (lambda got: got if sum(len(e["content"]["body"]) for e in got)
                                 >= len(LONG_ANSWER) - 200 else None)(
        alice.messages(room, bot.user_id)), what="the whole answer")
    assert len(pieces) >= 3 and all(len(e["content"]["body"]) <= 16_000 for e in pieces)
    assert "\n\n".join(e["content"]["body"] for e in pieces) == LONG_ANSWER


def test_an_image_and_a_voice_note_reach_the_model(matrix, provider_env, stt):
    gw, bot, alice, _bob, _eve = matrix
    room = _dm(alice, bot)
    provider_env.queue(text("A single pixel."), text("Nothing today."))
    mxc = alice.upload(PNG, "image/png", "pixel.png")
    alice.send(room, {"msgtype": "m.image", "body": "pixel.png", "url": mxc,
                      "info": {"mimetype": "image/png", "size": len(PNG)}})
    _bot_says(alice, room, bot)
    parts = last_user_message(provider_env)
    assert parts[1]["type"] == "image_url"
    assert parts[1]["image_url"]["url"].startswith("data:image/png;base64,")
    mxc = alice.upload(VOICE, "audio/ogg", "voice.ogg")
    alice.send(room, {"msgtype": "m.audio", "body": "voice.ogg", "url": mxc,
                      "info": {"mimetype": "audio/ogg", "size": len(VOICE)},
                      "org.matrix.msc3245.voice": {}})
    said = [e["content"]["body"] for e in _bot_says(alice, room, bot, 3)]
    assert said[1] == f"🎤 “{stt.transcript}”" and said[2] == "Nothing today."
    assert stt.received[0]["data"] == VOICE and stt.received[0]["auth"] == "Bearer stt-test-key"
    assert stt.transcript in last_user_message(provider_env)


def test_a_homeserver_restart_mid_conversation_loses_nothing(matrix, provider_env, synapse):
    gw, bot, alice, _bob, _eve = matrix
    room = _dm(alice, bot)
    provider_env.queue(text("first answer"), slow(text("answer written while the server was away"),
                                                  3.0), text("third answer"))
    alice.say(room, "first")
    _bot_says(alice, room, bot)
    alice.say(room, "second")
    assert provider_env.wait_for_requests(2, timeout=30)
    synapse.restart()  # the second answer is sent while Synapse is down or starting
    alice.say(room, "third")
    said = [e["content"]["body"] for e in _bot_says(alice, room, bot, 3)]
    assert said == ["first answer", "answer written while the server was away", "third answer"]
    assert user_texts(gw.db, session_key("matrix", "dm", room)) == ["first", "second", "third"]
    state = json.loads(next((gw.db.db_path.parent / "platforms" / "matrix").glob("*.json"))
                       .read_text())
    assert state["since"]  # a restarted gateway continues from here
