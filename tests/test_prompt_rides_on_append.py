"""A new session's system prompt is stored with its first messages, in their transaction (one
commit where there were two), and is never lost on the way: a failed append keeps it for the
next one, and a session that ends before any append stores it alone."""
from __future__ import annotations

from agent.persistence import SessionRecorder
from hermes_state import SessionDB

REFUSE_BOOM = ("CREATE TRIGGER no_boom BEFORE INSERT ON messages WHEN NEW.content = 'boom'"
               " BEGIN SELECT RAISE(ABORT, 'boom refused'); END")


def _recorder(db: SessionDB, sid: str, warnings: list[str]) -> SessionRecorder:
    return SessionRecorder(db, sid, "cli", model=lambda: "m", warn=warnings.append)


def test_the_prompt_is_written_in_the_first_appends_transaction(tmp_path):
    db = SessionDB(tmp_path / "state.db")
    try:
        db.create_session("s1")  # as the gateway does, with the chat's key
        rec = _recorder(db, "s1", [])
        rec.created()
        rec.store_system_prompt("You are terse.")
        assert db.get_session("s1")["system_prompt"] is None  # it waits for the messages
        sent: list[str] = []
        db.conn.set_trace_callback(sent.append)
        rec.persist_ahead([{"role": "user", "content": "hi"}])
        rec.settle()
        db.conn.set_trace_callback(None)
        assert db.get_session("s1")["system_prompt"] == "You are terse."
        outer = [q for q in sent if not q.startswith("--")]
        begin, commit = outer.index("BEGIN IMMEDIATE"), outer.index("COMMIT")
        assert any("system_prompt" in q for q in outer[begin:commit]), outer
        assert outer.count("COMMIT") == 1, outer
    finally:
        db.close()


def test_a_failed_append_keeps_the_prompt_for_the_next_one(tmp_path):
    db = SessionDB(tmp_path / "state.db")
    try:
        warnings: list[str] = []
        rec = _recorder(db, "s2", warnings)
        db.execute(REFUSE_BOOM)
        rec.store_system_prompt("Prompt P")
        history = [{"role": "user", "content": "boom"}]
        rec.persist_ahead(history)
        rec.settle()
        assert warnings and "boom refused" in warnings[-1]
        assert (db.get_session("s2") or {}).get("system_prompt") is None
        assert db.get_messages("s2") == []
        db.execute("DROP TRIGGER no_boom")
        history.append({"role": "assistant", "content": "ok"})
        rec.persist(history)  # both messages now, and the prompt with them
        assert db.get_session("s2")["system_prompt"] == "Prompt P"
        assert [m["content"] for m in db.get_messages("s2")] == ["boom", "ok"]
    finally:
        db.close()


def test_a_session_ended_before_any_append_still_stores_its_prompt(tmp_path):
    db = SessionDB(tmp_path / "state.db")
    try:
        rec = _recorder(db, "s3", [])
        rec.store_system_prompt("Prompt Q")
        rec.end("user_exit")
        row = db.get_session("s3")
        assert row["system_prompt"] == "Prompt Q" and row["end_reason"] == "user_exit"
    finally:
        db.close()
