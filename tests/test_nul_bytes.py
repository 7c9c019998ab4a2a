"""A NUL byte in text (issue 20 item 5): PostgreSQL refuses it in TEXT, so one NUL in a message used
to stop every later save of that session, and `hermes store migrate` of a store holding one failed.
Both backends now store it the same way: replaced by U+FFFD, everything around it kept."""
from __future__ import annotations

from hermes_state import SessionDB
from hermes_state.common import NUL_REPLACEMENT
from tests.cli.conftest import hermes_env, run_hermes
from tests.fake_provider import text, tool_calls


def test_both_backends_store_a_nul_the_same_way(store):
    sid = store.create_session("nul", title="a\x00title")
    ids = store.append_messages(sid, [{"role": "user", "content": "before\x00after the zeppelin"},
                                      {"role": "assistant", "content": None,
                                       "tool_calls": [{"id": "c\x001", "type": "function",
                                                       "function": {"name": "t", "arguments": "{}"}}]},
                                      {"role": "tool", "tool_call_id": "c\x001", "content": "x\x00y"}])
    assert len(ids) == 3
    rows = store.get_messages(sid)
    assert rows[0]["content"] == f"before{NUL_REPLACEMENT}after the zeppelin"
    assert rows[1]["tool_calls"][0]["id"] == "c\x001"  # inside JSON it is escaped, so it round-trips
    assert rows[2]["content"] == f"x{NUL_REPLACEMENT}y"
    assert store.get_session(sid)["title"] == f"a{NUL_REPLACEMENT}title"
    assert store.append_message(sid, "user", "the next save") > ids[-1]
    assert [h["session_id"] for h in store.search_sessions("zeppelin")[0]] == [sid]
    assert store.search_sessions("\x00")[0] == []  # a query with one does not raise either


def test_a_nul_in_a_turn_costs_no_later_turn(configured_store, make_agent, fake_provider):
    fake_provider.queue(tool_calls([("terminal", {"command": "printf 'bin\\000ary'"})]),
                        text("first answer"), text("second answer"))
    db = SessionDB()
    try:
        agent = make_agent(session_db=db)
        assert agent.run_conversation("dump it\x00 please")["final_response"] == "first answer"
        assert agent.run_conversation("and then?")["final_response"] == "second answer"
        stored = [m["content"] for m in db.get_active_messages(agent.session_id)
                  if m["role"] in ("user", "assistant") and m.get("content")]
    finally:
        db.close()
    assert stored == [f"dump it{NUL_REPLACEMENT} please", "first answer", "and then?", "second answer"]


def test_store_migrate_copies_a_store_holding_nul_bytes(hermes_home, pg_cluster):
    import sqlite3

    path = hermes_home / "state.db"
    with SessionDB(path) as db:
        sid = db.create_session("old")
        db.append_message(sid, "user", "clean")
    with sqlite3.connect(path) as raw:  # what an older Hermes (or another tool) may have written
        raw.execute("INSERT INTO messages (session_id, role, content, seq) VALUES (?, ?, ?, ?)",
                    (sid, "tool", "bin\x00ary output", 2))
    url = pg_cluster.new_database(migrated=False)
    res = run_hermes("store", "migrate", "--to", url, env=hermes_env())
    assert res.returncode == 0, res.stderr
    with SessionDB(url=url) as db:
        assert [m["content"] for m in db.get_messages(sid)] == ["clean", f"bin{NUL_REPLACEMENT}ary output"]
