"""Resuming a session shows what it holds (issue 21, item 1): the REPL banner, `/resume`,
`/history` and `/compress` all see the stored history, which loads lazily in the agent."""
from __future__ import annotations

import json

from tests.cli.test_repl import Repl
from tests.fake_provider import text


def _make_titled_session(hermes, fake_provider) -> str:
    fake_provider.queue(text("Paris is the capital of France."))
    assert hermes("-z", "what is the capital of France?").returncode == 0
    fake_provider.queue(text("About 2.1 million people live there."))
    assert hermes("-z", "and how many people live there?", "-c").returncode == 0
    sid = json.loads(hermes("sessions", "list", "--json").stdout)[0]["id"]
    assert hermes("sessions", "rename", sid, "my first chat").returncode == 0
    return sid


def test_resume_flag_shows_the_count_and_the_last_exchange(hermes, fake_provider):
    sid = _make_titled_session(hermes, fake_provider)
    repl = Repl(fake_provider, "-r", "my first chat")
    try:
        banner = repl.out
        assert f"Resumed session {sid} (my first chat) with 4 messages" in banner
        assert "you: and how many people live there?" in banner
        assert "hermes: About 2.1 million people live there." in banner
        assert "capital of France?" not in banner  # only the last exchange

        out = repl.say("/history", until="million")
        assert "you: what is the capital of France?" in out
        out = repl.say("/compress", until="summarise")
        assert "Nothing to compress: all 4 messages are kept verbatim" in out

        fake_provider.queue(text("You asked about Paris."))
        repl.say("what did I ask first?", until="You asked about Paris")
        sent = [m["content"] for m in fake_provider.requests[-1]["messages"]
                if m["role"] != "system"]
        assert sent[:4] == ["what is the capital of France?", "Paris is the capital of France.",
                            "and how many people live there?",
                            "About 2.1 million people live there."]
        assert repl.quit() == 0
    finally:
        if repl.child.isalive():
            repl.child.terminate(force=True)


def test_slash_resume_and_history_see_the_stored_messages(hermes, fake_provider):
    sid = _make_titled_session(hermes, fake_provider)
    repl = Repl(fake_provider)
    try:
        out = repl.say("/resume my first chat", until="whole conversation")
        assert f"Resumed session {sid} (my first chat) with 4 messages" in out
        assert "hermes: About 2.1 million people live there." in out
        out = repl.say("/history", until="million")
        assert "No messages yet" not in out and "you: what is the capital of France?" in out
    finally:
        repl.child.terminate(force=True)


def test_q_with_resume_names_the_session_and_its_size(hermes, fake_provider):
    sid = _make_titled_session(hermes, fake_provider)
    res = hermes("chat", "-q", "one more?", "-r", "my first chat")
    assert res.returncode == 0, res.stderr
    assert f"resumed session {sid} (4 messages)" in res.stderr
