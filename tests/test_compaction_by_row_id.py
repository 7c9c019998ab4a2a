"""Compaction and /undo touch exactly this agent's rows, by id; a history that cannot be read stops the turn.

Real processes on one state.db, the loopback provider, real SQLite failures (issue 15, item 2).
"""
from __future__ import annotations

import io
import sqlite3
import threading
import time

import pytest

from agent.persistence import HistoryLoadError
from hermes_cli.chat import ChatSession
from hermes_cli.render import Renderer
from hermes_state import SessionDB
from tests.conftest import write_config
from tests.fake_provider import text, tool_calls
from tests.test_compression_e2e import SUMMARY, chat_requests, is_summary_request, seeded_session
from tests.test_compression_lock_processes import outcome, start_worker


def _answer(body: dict) -> str:
    return f"answer to {body['messages'][-1]['content']}"


def _wait_for_summary_request(fp, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not any(is_summary_request(b) for b in list(fp.requests)):
        assert time.monotonic() < deadline, "no summary was requested"
        time.sleep(0.02)


@pytest.mark.usefixtures("configured_store")  # SQLite and PostgreSQL
def test_rows_another_process_appends_during_a_compaction_stay_live(fake_provider, hermes_home, make_agent):
    write_config(hermes_home, "model:\n  context_length: 16000\n")
    sid = seeded_session(40, size=1300)  # ~14k tokens, over the 7k threshold: A's turn compacts first
    release = threading.Event()

    def reply(body):
        if is_summary_request(body):
            release.wait(60)  # A holds the lock, its own message not yet written, until B is done
            return text(SUMMARY)
        return text(_answer(body))

    fake_provider.handler = reply
    try:
        a = start_worker(sid, fake_provider.base_url, "turn", "message from A")
        _wait_for_summary_request(fake_provider)
        b = start_worker(sid, fake_provider.base_url, "turn", "message from B")
        from_b = outcome(b)  # B found the lock held: it skipped compressing and was answered
    finally:
        release.set()
    from_a = outcome(a)
    assert from_a["completed"] and from_a["compactions"] == 1
    assert from_b["completed"] and from_b["compactions"] == 0

    stored = [m["content"] for m in SessionDB().get_active_messages(sid)]
    assert "message from B" in stored and "answer to message from B" in stored

    agent = make_agent(session_id=sid)  # the next turn, from a fresh process's point of view
    assert agent.run_conversation("next question")["completed"]
    sent = [str(m.get("content")) for m in chat_requests(fake_provider)[-1]["messages"]]
    summary_at = next(i for i, c in enumerate(sent) if "CONTEXT SUMMARY" in c)
    assert sent.index("message from B") > summary_at
    assert sent.index("answer to message from B") > summary_at
    assert sent.index("message from A") > summary_at and sent[-1] == "next question"
    assert not any(c.startswith("filler 20 ") for c in sent)  # the middle of the seeded turns was compacted


@pytest.mark.usefixtures("configured_store")  # SQLite and PostgreSQL
def test_undo_takes_back_only_this_agents_turn(make_agent, fake_provider):
    fake_provider.handler = lambda body: text(_answer(body))
    agent = make_agent()
    agent.run_conversation("first")
    fake_provider.queue(tool_calls([("todo", {})]), text("second answer"))
    agent.run_conversation("second")
    sid = agent.session_id
    assert outcome(start_worker(sid, fake_provider.base_url, "turn", "message from B"))["completed"]

    assert agent.undo_last_turn() == "second"
    db = SessionDB()
    assert [m["content"] for m in db.get_active_messages(sid)] == \
        ["first", "answer to first", "message from B", "answer to message from B"]
    undone = [r for r in db.get_messages(sid, include_inactive=True) if not r["active"]]
    assert [r["role"] for r in undone] == ["user", "assistant", "tool", "assistant"]
    assert undone[0]["content"] == "second" and undone[-1]["content"] == "second answer"
    assert [m["content"] for m in agent.messages] == ["first", "answer to first"]


def _compacted_agent(make_agent, fake_provider):
    """An agent whose history was just compacted with the user's last message right after the head."""
    fake_provider.handler = lambda body: text(SUMMARY) if is_summary_request(body) else text(_answer(body))
    agent = make_agent()
    agent.context_compressor.protect_first_n = 2  # head [user, assistant]: the tail starts with a user message
    for i in range(8):
        assert agent.run_conversation(f"question {i} " + "q" * 400)["completed"]
    assert agent.compress()["compressed"]
    return agent


@pytest.mark.usefixtures("configured_store")  # SQLite and PostgreSQL
def test_undo_never_removes_a_summary_and_retry_never_resends_one(make_agent, fake_provider):
    agent = _compacted_agent(make_agent, fake_provider)
    sid = agent.session_id
    summary_at = next(i for i, m in enumerate(agent.messages) if "CONTEXT SUMMARY" in str(m["content"]))
    after = [m["content"] for m in agent.messages[summary_at + 1:] if m["role"] == "user"]
    assert len(after) >= 2 and all(c.startswith("question ") for c in after)  # the user's words, unmerged

    out = io.StringIO()
    chat = ChatSession(lambda _sid: agent, Renderer(out=out, spinner=False), db=SessionDB())

    def resent_once(content: str) -> None:
        sent = chat_requests(fake_provider)[-1]["messages"]
        assert sent[-1] == {"role": "user", "content": content}
        assert sum("CONTEXT SUMMARY" in str(m.get("content")) for m in sent) == 1

    chat.handle_line("/retry")
    resent_once(after[-1])
    for _ in after[1:]:
        chat.handle_line("/undo")
    chat.handle_line("/retry")  # the first message after the summary: resent alone, the summary stays put
    resent_once(after[0])
    chat.handle_line("/undo")
    assert out.getvalue().count("Removed your last message") == len(after)
    chat.handle_line("/undo")  # only the summary is left after the head: nothing more to undo
    chat.handle_line("/retry")
    assert "Nothing to undo." in out.getvalue() and "Nothing to retry yet." in out.getvalue()
    active = SessionDB().get_active_messages(sid)
    assert sum("CONTEXT SUMMARY" in str(m.get("content")) for m in active) == 1
    assert active == agent.messages and len(active) == summary_at + 2  # head, summary, its acknowledgement


def test_a_history_that_cannot_be_read_fails_the_turn_and_writes_nothing(make_agent, fake_provider, hermes_home):
    sid = seeded_session(3, size=10)
    path = hermes_home / "state.db"
    raw = sqlite3.connect(path)
    raw.execute("DROP TABLE messages")  # a damaged store: the session row is there, its messages are not
    raw.commit()
    raw.close()
    before = SessionDB().get_session(sid)
    agent = make_agent(session_id=sid)
    result = agent.run_conversation("are you there?")
    assert result["failed"] is True and result["completed"] is False
    assert f"Session {sid} could not be read" in result["error"] and "no such table" in result["error"]
    assert "hermes doctor" in result["error"] and "Nothing was sent or saved" in result["error"]
    assert fake_provider.requests == []
    assert SessionDB().get_session(sid) == before  # no system prompt stored, no counters moved
    assert agent.run_conversation("again?")["failed"] is True  # never goes on with an empty history
    for action in (agent.compress, agent.undo_last_turn):
        with pytest.raises(HistoryLoadError, match="could not be read"):
            action()
    assert fake_provider.requests == [] and SessionDB().get_session(sid) == before


def test_an_unopenable_store_fails_a_resumed_turn_and_leaves_the_file_alone(make_agent, fake_provider, hermes_home):
    sid = seeded_session(3, size=10)
    path = hermes_home / "state.db"
    for extra in ("state.db-wal", "state.db-shm"):
        (hermes_home / extra).unlink(missing_ok=True)
    junk = b"this is not a database" * 100
    path.write_bytes(junk)
    warnings = []
    agent = make_agent(session_id=sid, status_callback=lambda kind, msg: warnings.append((kind, msg)))
    result = agent.run_conversation("hello?")
    assert result["failed"] is True
    assert f"Session {sid} could not be read" in result["error"] and "not a usable SQLite" in result["error"]
    assert fake_provider.requests == [] and path.read_bytes() == junk
