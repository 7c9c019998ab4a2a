"""Discord end to end: a loopback fake speaking Discord's REST and Gateway wire formats
(zlib-stream JSON) -> the discord.py adapter -> the runner -> real agents -> FakeProvider."""
from __future__ import annotations

import pytest

from gateway.platforms.discord import build
from gateway.sessions import session_key
from tests.fake_provider import slow, text, tool_calls
from tests.gateway.platforms.conftest import (LONG_ANSWER, PNG, VOICE, last_user_message,
                                              user_texts, wait_until)
from tests.gateway.platforms.fake_discord import BOT, TOKEN, FakeDiscord

GUILD = "700000000000000001"


def person(uid: str, name: str) -> dict:
    return {"id": uid, "username": name, "discriminator": "0", "global_name": None,
            "avatar": None}


ALICE, BOB = person("800000000000000001", "alice"), person("800000000000000002", "bob")
EVE = person("800000000000000003", "eve")
DM, EVE_DM, CHANNEL = "600000000000000001", "600000000000000003", "610000000000000001"


@pytest.fixture(scope="module")
def fake_discord():
    fake = FakeDiscord().start()  # one fake for the module; each test has its own gateway
    fake.guilds.append(fake.guild(GUILD, CHANNEL))
    yield fake
    fake.stop()


@pytest.fixture
def discord(fake_discord, make_gateway, monkeypatch):
    fake = fake_discord
    fake.reset()
    monkeypatch.setenv("DISCORD_ALLOWED_USERS", f"{ALICE['id']},{BOB['id']}")
    adapter = build({"bot_token": TOKEN, "api_url": fake.api, "gateway_url": fake.gateway}, {})
    gw = make_gateway(adapters=(adapter,))
    return gw, fake


def test_a_dm_turn_with_a_tool_call(discord, provider_env):
    gw, fake = discord
    provider_env.queue(tool_calls([("todo", {"todos": [{"id": "1", "content": "buy milk",
                                                        "status": "pending"}]})]),
                       text("Added **buy milk** to your list."))
    fake.push(fake.message(DM, ALICE, "remind me to buy milk"))
    [reply] = fake.wait_posted(DM)
    assert reply["content"] == "Added **buy milk** to your list."  # Discord renders Markdown
    assert any(m["role"] == "tool" for m in provider_env.requests[-1]["messages"])
    assert user_texts(gw.db, session_key("discord", "dm", DM)) == ["remind me to buy milk"]
    assert DM in fake.typing


def test_in_a_server_only_a_mention_is_answered(discord, provider_env):
    gw, fake = discord
    provider_env.queue(text("Hello, Bob."))
    fake.push(fake.message(CHANNEL, BOB, "just chatting among ourselves", guild=GUILD))
    fake.push(fake.message(CHANNEL, BOB, f"<@{BOT['id']}> say hello", guild=GUILD,
                           mentions=(BOT,)))
    assert fake.wait_posted(CHANNEL)[0]["content"] == "Hello, Bob."
    assert len(provider_env.requests) == 1 and last_user_message(provider_env) == "say hello"
    assert user_texts(gw.db, session_key("discord", "group", CHANNEL, BOB["id"])) == ["say hello"]


def test_an_unknown_user_is_refused(discord, provider_env):
    _gw, fake = discord
    fake.push(fake.message(EVE_DM, EVE, "let me in"))
    assert "hermes pairing approve discord" in fake.wait_posted(EVE_DM)[0]["content"]
    assert provider_env.requests == []


def test_a_long_answer_is_split_at_2000(discord, provider_env):
    _gw, fake = discord
    provider_env.queue(text(LONG_ANSWER))
    fake.push(fake.message(DM, ALICE, "tell me everything"))
    pieces = wait_until(lambda: (lambda got: got if sum(len(p["content"]) for p in got)
                                 >= len(LONG_ANSWER) - 200 else None)(
        [p for p in fake.posted if p["channel_id"] == DM]), what="the whole answer")
    assert len(pieces) >= 22 and all(len(p["content"]) <= 2_000 for p in pieces)
    assert "\n\n".join(p["content"] for p in pieces) == LONG_ANSWER


def test_an_image_in_and_a_file_out(discord, provider_env):
    _gw, fake = discord
    fake.files["pixel.png"] = PNG
    provider_env.queue(tool_calls([("write_file", {"path": "seen.txt", "content": "a pixel\n"})]),
                       text("One pixel.\nMEDIA: seen.txt"))
    url = f"http://127.0.0.1:{fake.port}/files/pixel.png"
    fake.push(fake.message(DM, ALICE, "what is this?", attachments=({
        "id": fake.next_id(), "filename": "pixel.png", "content_type": "image/png",
        "size": len(PNG), "url": url, "proxy_url": url},)))
    text_reply, file_reply = fake.wait_posted(DM, 2)
    parts = [m for m in provider_env.requests[0]["messages"] if m["role"] == "user"][-1]["content"]
    assert any(p.get("type") == "image_url" for p in parts)
    assert text_reply["content"] == "One pixel."
    assert file_reply["files"] == {"seen.txt": b"a pixel\n"}


def test_an_image_and_a_voice_note_reach_the_model(discord, provider_env, stt):
    _gw, fake = discord
    provider_env.queue(text("A single pixel."), text("Nothing today."))
    fake.push(fake.message(DM, ALICE, "what is this?", attachments=(
        _attachment(fake, "pixel.png", "image/png", PNG),)))
    fake.wait_posted(DM)
    parts = last_user_message(provider_env)
    assert parts[0]["text"].startswith("what is this?") and parts[1]["type"] == "image_url"
    fake.push(fake.message(DM, ALICE, "", attachments=(
        _attachment(fake, "voice-message.ogg", "audio/ogg", VOICE),)))
    said = [p["content"] for p in fake.wait_posted(DM, 3)]
    assert said[1] == f"🎤 “{stt.transcript}”" and said[2] == "Nothing today."
    assert stt.received[0]["data"] == VOICE
    assert stt.transcript in last_user_message(provider_env)


def _attachment(fake, name: str, mime: str, data: bytes) -> dict:
    fake.files[name] = data
    url = f"http://127.0.0.1:{fake.port}/files/{name}"
    return {"id": fake.next_id(), "filename": name, "content_type": mime, "size": len(data),
            "url": url, "proxy_url": url}


def test_a_thread_is_a_session_of_its_own_answered_in_the_thread(discord, provider_env):
    gw, fake = discord
    provider_env.queue(text("In the channel."), text("In the thread."), text("Still here."))
    mention = f"<@{BOT['id']}>"
    fake.push(fake.message(CHANNEL, BOB, f"{mention} hello", guild=GUILD, mentions=(BOT,)))
    fake.wait_posted(CHANNEL)
    thread = fake.open_thread(GUILD, CHANNEL, BOB, "planning")
    fake.push(fake.message(thread, BOB, f"{mention} plan the trip", guild=GUILD,
                           mentions=(BOT,)))
    assert [p["content"] for p in fake.wait_posted(thread)] == ["In the thread."]
    assert thread in fake.typing  # "typing…" where the answer goes, not in the parent channel
    fake.push(fake.message(thread, BOB, f"{mention} and then?", guild=GUILD, mentions=(BOT,)))
    assert fake.wait_posted(thread, 2)[1]["content"] == "Still here."
    assert len(fake.wait_posted(CHANNEL)) == 1  # nothing of the thread went to the channel
    in_thread = session_key("discord", "thread", CHANNEL, BOB["id"], thread)
    assert user_texts(gw.db, in_thread) == ["plan the trip", "and then?"]
    assert user_texts(gw.db, session_key("discord", "group", CHANNEL, BOB["id"])) == ["hello"]
    heard = [m["content"] for m in provider_env.requests[1]["messages"] if m["role"] == "user"]
    assert heard == ["plan the trip"]  # the thread's context holds only the thread


def test_slash_commands_are_registered_and_answered(discord, provider_env):
    _gw, fake = discord
    from gateway.commands import CHAT_COMMANDS

    registered = {c["name"]: c for c in fake.wait_commands()}
    assert set(registered) == set(CHAT_COMMANDS)
    assert registered["model"]["options"][0]["name"] == "name"
    token = fake.interact("model", ALICE, DM, text="fake-model-2")
    assert fake.wait_followups(token) == ["Model for this chat set to fake-model-2."]
    assert {"type": 5, "token": token}.items() <= fake.callbacks[0].items()  # deferred first
    provider_env.queue(text("answered by the new model"))
    fake.push(fake.message(DM, ALICE, "hello"))  # the command acted on this DM's session
    fake.wait_posted(DM)
    assert provider_env.requests[-1]["model"] == "fake-model-2"
    in_server = fake.interact("help", BOB, CHANNEL, guild=GUILD)
    assert fake.wait_followups(in_server)[0].startswith("Commands: /new")


def test_a_slash_command_from_an_unknown_user_is_refused(discord, provider_env):
    _gw, fake = discord
    fake.wait_commands()
    first = fake.interact("usage", EVE, EVE_DM)
    assert "hermes pairing approve discord" in fake.wait_followups(first)[0]
    again = fake.interact("new", EVE, EVE_DM)  # the pairing code is not repeated at once
    assert "not allowed" in fake.wait_followups(again)[0]
    assert provider_env.requests == [] and fake.posted == []


def test_a_dropped_gateway_is_resumed_and_nothing_is_lost(discord, provider_env):
    gw, fake = discord
    provider_env.queue(text("first answer"), text("second answer"))
    fake.push(fake.message(DM, ALICE, "first"))
    fake.wait_posted(DM)
    fake.drop()
    fake.push(fake.message(DM, ALICE, "second"))
    assert [p["content"] for p in fake.wait_posted(DM, 2)] == ["first answer", "second answer"]
    assert fake.resumes + fake.identifies >= 2
    assert user_texts(gw.db, session_key("discord", "dm", DM)) == ["first", "second"]


def test_an_answer_written_during_the_shutdown_drain_still_arrives(discord, provider_env):
    gw, fake = discord
    provider_env.queue(slow(text("written while shutting down"), 1.5))
    fake.push(fake.message(DM, ALICE, "take your time"))
    assert provider_env.wait_for_requests(1, timeout=30)
    gw.call(gw.runner.shutdown(drain_timeout=20))  # the turn is still running
    assert [p["content"] for p in fake.wait_posted(DM, timeout=5)] == [
        "written while shutting down"]


def test_mentions_and_kinds():
    from gateway.platforms.discord.adapter import kind_of, strip_mention

    assert strip_mention("<@!42> hi <@7>", 42) == "hi <@7>"
    assert (kind_of("image/gif"), kind_of("audio/ogg"), kind_of("")) == ("image", "voice", "file")
