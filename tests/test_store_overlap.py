"""The user's message is written while the model request is out (``SessionRecorder.persist_ahead``):
on PostgreSQL the append's round trip and the server's work overlap the wire instead of adding to
the turn. What must hold: the request does not wait for the write, the store's order is still the
history's, everything is written when ``run_conversation`` returns, a failed write is reported,
and a fenced write (a gateway worker's lease) still happens before the request goes out."""
from __future__ import annotations

import threading

import psycopg
import pytest

from hermes_state import SessionDB


@pytest.fixture
def pg_store(pg_url):
    db = SessionDB(url=pg_url)
    try:
        yield db
    finally:
        db.close()


def _contents(db: SessionDB, sid: str) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in db.get_messages(sid)]


def test_the_request_goes_out_while_the_users_message_is_being_written(pg_url, pg_store,
                                                                       make_agent,
                                                                       fake_provider):
    """A write held up by a lock on the session's row does not hold up the request; once the
    lock goes, both rows are stored in order and the turn has waited for them."""
    agent = make_agent(session_db=pg_store)
    assert agent.run_conversation("first")["completed"]
    sid = agent.session_id
    blocker = psycopg.connect(pg_url)
    blocker.execute("SELECT 1 FROM sessions WHERE id = %s FOR UPDATE", (sid,))  # tx stays open
    fake_provider.requests.clear()
    result: dict = {}
    turn = threading.Thread(target=lambda: result.update(agent.run_conversation("second")))
    turn.start()
    try:
        assert fake_provider.wait_for_requests(1, timeout=20), "the request waited for the write"
        assert ("user", "second") not in _contents(pg_store, sid)  # still held by the lock
    finally:
        blocker.rollback()
        blocker.close()
    turn.join(30)
    assert result.get("completed"), result
    assert _contents(pg_store, sid) == [("user", "first"), ("assistant", "ok"),
                                        ("user", "second"), ("assistant", "ok")]


def test_a_write_that_fails_in_the_background_is_reported_and_the_turn_goes_on(pg_store,
                                                                               make_agent):
    pg_store.execute("ALTER TABLE messages ADD CONSTRAINT no_boom CHECK (content <> 'boom')")
    notes: list[str] = []
    agent = make_agent(session_db=pg_store, status_callback=lambda kind, msg: notes.append(msg))
    result = agent.run_conversation("boom")
    assert result["completed"] and result["final_response"] == "ok"
    assert any("Could not save messages" in n and "no_boom" in n for n in notes), notes
    assert _contents(pg_store, agent.session_id) == []  # all or nothing, as before


def test_on_sqlite_the_users_message_is_on_disk_before_the_request(make_agent, fake_provider,
                                                                   tmp_path):
    """SQLite's write is this process's own CPU: it is done at once, before the wire."""
    db = SessionDB(tmp_path / "state.db")
    seen: list[list[tuple[str, str]]] = []
    agent = make_agent(session_db=db)
    fake_provider.handler = lambda body: seen.append(_contents(db, agent.session_id)) or None
    assert agent.run_conversation("hello")["completed"]
    assert seen == [[("user", "hello")]]
    db.close()
