"""Shared pieces of the platform tests: the speech-to-text fake, sample media, one Synapse per
test session, and a wait-until helper (never a fixed sleep)."""
from __future__ import annotations

import base64
import time
from typing import Any, Callable

import pytest

from tests.gateway.platforms.fake_stt import FakeSTT

# a 1x1 PNG, and bytes standing for an Opus voice note (the fake STT does not decode audio)
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGA"
                       "hKmMIQAAAABJRU5ErkJggg==")
VOICE = b"OggS\x00\x02" + b"\x00" * 64 + b"hermes-voice-note"
LONG_ANSWER = "\n\n".join(f"Paragraph {i}: " + ("lorem ipsum dolor sit amet " * 40).strip()
                           for i in range(40))


def wait_until(check: Callable[[], Any], timeout: float = 60, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def stt(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Voice notes go to a loopback OpenAI-compatible /audio/transcriptions."""
    fake = FakeSTT().start()
    monkeypatch.setenv("STT_BASE_URL", fake.base_url)
    monkeypatch.setenv("VOICE_TOOLS_OPENAI_KEY", "stt-test-key")
    yield fake
    fake.stop()


@pytest.fixture(scope="session")
def synapse() -> Any:
    """One real homeserver for the whole test session (start-up takes seconds)."""
    from tests.gateway.platforms.synapse import Synapse, available

    why = available()
    if why:
        pytest.skip(why)
    server = Synapse().start()
    yield server
    server.stop()


def user_texts(db: Any, key: str) -> list[Any]:
    sid = db.get_session_for_key(key)
    return [m["content"] for m in db.get_messages(sid, include_inactive=True)
            if m["role"] == "user"] if sid else []


def last_user_message(provider: Any) -> Any:
    body = provider.requests[-1]
    return [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
