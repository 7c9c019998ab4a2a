"""Discord end to end: a loopback fake speaking Discord's REST and Gateway wire formats
(zlib-stream JSON) -> the discord.py adapter -> the runner -> real agents -> FakeProvider."""
from __future__ import annotations

import pytest

from gateway.platforms.discord import build
from gateway.sessions import session_key
from tests.fake_provider import text, tool_calls
from tests.gateway.platforms.conftest import (LONG_ANSWER, PNG, last_user_message, user_texts,
                                              wait_until)
from tests.gateway.platforms.fake_discord import BOT, TOKEN, FakeDiscord

GUILD = "700000000000000001"


def person(uid: str, name: str) -> dict:
    return {"id": uid, "username": name, "discriminator": "0", "global_name": None,
            "avatar": None}


ALICE, BOB = person("800000000000000001", "alice"), person("800000000000000002", "bob")
EVE = person("800000000000000003", "eve")
DM, EVE_DM, CHANNEL = "600000000000000001", "600000000000000003", "610000000000000001"


@pytest.fixture
def discord(make_gateway, monkeypatch):
    fake = FakeDiscord().start()
    monkeypatch.setenv("DISCORD_ALLOWED_USERS", f"{ALICE['id']},{BOB['id']}")
    adapter = build({"bot_token": TOKEN, "api_url": fake.api, "gateway_url": fake.gateway}, {})
    gw = make_gateway(adapters=(adapter,))
    yield gw, fake
    fake.stop()


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


def test_mentions_and_kinds():
    from gateway.platforms.discord.adapter import kind_of, strip_mention

    assert strip_mention("<@!42> hi <@7>", 42) == "hi <@7>"
    assert (kind_of("image/gif"), kind_of("audio/ogg"), kind_of("")) == ("image", "voice", "file")
