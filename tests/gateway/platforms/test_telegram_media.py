"""Telegram media end to end (issue 24): the fake Bot API (real HTTP, real python-telegram-bot)
-> the runner -> real agents -> FakeProvider. A photo reaches the model as an image part, a voice
note through the loopback speech-to-text with its transcript shown in the chat, a document is
saved for the agent; the agent's MEDIA: files go back up as a photo and a document."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.fake_provider import text
from tests.gateway.platforms.conftest import PNG, VOICE, last_user_message, wait_until

USER = 3003


@pytest.fixture
def tg(make_gateway, fake_telegram, monkeypatch):
    monkeypatch.setenv("TELEGRAM_ALLOWED_USERS", str(USER))
    return make_gateway(telegram=fake_telegram), fake_telegram


def test_a_photo_and_a_voice_note_reach_the_model(tg, provider_env, stt):
    _gw, fake = tg
    provider_env.queue(text("A single pixel."), text("Nothing today."))
    fake.push_message(USER, USER, "what is this?", media={"photo": PNG})
    assert fake.wait_for_sent(USER) == ["A single pixel."]
    parts = last_user_message(provider_env)
    assert parts[0] == {"type": "text", "text": "what is this?"}
    assert parts[1]["image_url"]["url"].startswith("data:image/png;base64,")  # the largest size
    fake.push_message(USER, USER, "", media={"voice": VOICE})
    said = fake.wait_for_sent(USER, 3)
    assert said[1:] == [f"🎤 “{stt.transcript}”", "Nothing today."]
    assert stt.received[0]["data"] == VOICE and stt.received[0]["name"].endswith(".ogg")
    assert last_user_message(provider_env) == f"[voice note, transcribed] {stt.transcript}"


def test_a_document_in_and_the_agents_files_out(tg, provider_env):
    gw, fake = tg
    workdir = Path(gw.runner.agent_factory.workdir)
    (workdir / "chart.png").write_bytes(PNG)
    (workdir / "report.pdf").write_bytes(b"%PDF-1.4 the report")
    provider_env.queue(text("Here you go.\nMEDIA: chart.png\nMEDIA: report.pdf\nMEDIA: /etc/passwd"))
    fake.push_message(USER, USER, "summarise this", media={
        "document": b"col1,col2\n1,2\n", "file_name": "data.csv", "mime_type": "text/csv"})
    uploads = wait_until(lambda: (lambda got: got if len(got) >= 2 else None)(fake.uploads()),
                         what="two uploads")
    assert [(m, next(iter({"photo", "document"} & set(p)))) for m, p in uploads] == \
        [("sendPhoto", "photo"), ("sendDocument", "document")]
    assert uploads[0][1]["photo"]["data"] == PNG
    assert uploads[1][1]["document"] == {"filename": "report.pdf", "data": b"%PDF-1.4 the report"}
    [answer] = fake.sent_texts(USER)
    assert answer.startswith("Here you go.") and "/etc/passwd is outside" in answer
    asked = last_user_message(provider_env)
    assert asked.startswith("summarise this\n[file saved: uploads/data.csv")
    assert (workdir / "uploads" / "data.csv").read_bytes() == b"col1,col2\n1,2\n"
