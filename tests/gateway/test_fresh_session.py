"""A session the gateway has just made holds nothing: its first turn reads none of it back (the
history, the session row, the store's top row), and the session is whole afterwards."""
from __future__ import annotations

import re

from tests.fake_provider import text
from tests.gateway.sse import post


def _chat(gw, key, content):
    body = {"model": "m", "messages": [{"role": "user", "content": content}]}
    return post(gw.base_url + "/chat/completions", gw.api_key, body,
                {"X-Hermes-Session-Key": key})


def test_a_new_sessions_first_turn_reads_nothing_of_it_back(make_gateway, fake_provider):
    gw = make_gateway(api=True)
    fake_provider.queue(text("warm"), text("first answer"), text("second answer"))
    assert _chat(gw, "warm-up", "hi")[0] == 200  # the agent machinery is loaded
    sent: list[str] = []
    gw.db.conn.set_trace_callback(sent.append)
    try:
        status, hdrs, body = _chat(gw, "fresh-one", "remember 7")
    finally:
        gw.db.conn.set_trace_callback(None)
    assert status == 200, body
    sid = hdrs["x-hermes-session-id"]
    mine = [q for q in sent if sid in q]
    assert mine, sent  # the turn did write it (the trace sees this connection)
    assert [q for q in mine if q.lstrip().upper().startswith("SELECT")] == []
    # three commits: the session row with its key, the user's message with the system prompt,
    # the answer
    assert sent.count("COMMIT") == 3, [q for q in sent if not q.startswith("--")]
    row = gw.db.get_session(sid)
    assert row["source"] == "api_server" and row["system_prompt"]
    assert [m["content"] for m in gw.db.get_messages(sid)] == ["remember 7", "first answer"]
    # the next turn is an ordinary one: it sees the first
    assert _chat(gw, "fresh-one", "which number?")[0] == 200
    users = [m["content"] for m in fake_provider.last_request["messages"] if m["role"] == "user"]
    assert users == ["remember 7", "which number?"]


def test_a_session_named_by_the_client_is_still_read_first(make_gateway, fake_provider):
    """Only sessions this process made are taken as empty: one the client names may hold rows."""
    gw = make_gateway(api=True)
    sid = gw.db.create_session("named-elsewhere", source="api_server")
    gw.db.append_messages(sid, [{"role": "user", "content": "written before"},
                                {"role": "assistant", "content": "noted"}])
    fake_provider.queue(text("answer"))
    status, _, body = post(gw.base_url + "/chat/completions", gw.api_key,
                           {"model": "m", "messages": [{"role": "user", "content": "go on"}]},
                           {"X-Hermes-Session-Id": sid})
    assert status == 200, body
    users = [m["content"] for m in fake_provider.last_request["messages"] if m["role"] == "user"]
    assert users == ["written before", "go on"]


def test_a_message_kept_before_the_first_turn_ends_the_freshness(tmp_path):
    """A turn stopped before it started keeps the user's message (``ensure_user_message``): the
    session is no longer empty, so the next turn must read it."""
    from gateway.sessions import SessionMap
    from hermes_state import SessionDB

    with SessionDB(tmp_path / "state.db") as db:
        sessions = SessionMap(db)
        sid = sessions.get_or_create("api_server:k")
        assert sessions.ensure_user_message(sid, "kept while stopped") is True
        assert sessions.take_fresh(sid) is False
        other = sessions.get_or_create("api_server:other")
        assert sessions.take_fresh(other, shared=True) is False  # another process may write
        assert sessions.take_fresh(other) is False  # and it stays taken
        # on a shared store, the store read under the session's lease decides: no row, fresh
        shared = [sessions.get_or_create(f"api_server:shared{i}") for i in range(3)]
        assert sessions.take_fresh(shared[0], 0, shared=True) is True
        assert sessions.take_fresh(shared[1], 12, shared=True) is False
        assert sessions.take_fresh(shared[1], 0, shared=True) is False  # taken
        assert sessions.take_fresh(shared[2], None, shared=True) is False
        third = sessions.get_or_create("api_server:third")
        assert sessions.take_fresh(third) is True and sessions.take_fresh(third) is False


def test_sessions_never_turned_are_not_remembered_without_end(tmp_path):
    """Sessions made for requests that were then refused never take their freshness: past the
    limit all are forgotten (each then costs one read), so the set cannot grow forever."""
    from gateway.sessions import SessionMap
    from hermes_state import SessionDB

    with SessionDB(tmp_path / "state.db") as db:
        sessions = SessionMap(db, fresh_limit=3)
        made = [sessions.get_or_create(f"api_server:k{i}") for i in range(4)]
        assert [sessions.take_fresh(s) for s in made] == [False, False, False, True]


def test_on_a_shared_store_the_lease_proves_a_new_session_empty(make_gateway, fake_provider,
                                                                 pg_store, pg_cluster):
    """PostgreSQL (other workers write the store too): the read made under the session's lease
    finds no row of it, so its first turn reads none of it back, as on SQLite. The server's own
    statement log is the witness."""
    pg_cluster.admin(f"ALTER DATABASE {pg_store.rsplit('/', 1)[1]} SET log_statement = 'all'")
    gw = make_gateway(api=True)
    assert gw.runner.leases.shared
    fake_provider.queue(text("warm"), text("first answer"), text("second answer"))
    assert _chat(gw, "warm-up", "hi")[0] == 200
    log = pg_cluster.root / "log"
    start = log.stat().st_size
    status, hdrs, body = _chat(gw, "fresh-on-pg", "remember 7")
    assert status == 200, body
    lines = log.read_bytes()[start:].decode(errors="replace").splitlines()
    sent = [m.group(1) for m in map(re.compile(r"execute [^:]*: (.*)").search, lines) if m]
    assert any("pg_try_advisory_lock" in q for q in sent), sent  # the log shows this turn
    reads_back = [q for q in sent if q.startswith(("SELECT * FROM sessions WHERE id",
                                                   "SELECT id, role, content",
                                                   "SELECT MAX(id) FROM messages"))]
    assert reads_back == [], sent
    sid = hdrs["x-hermes-session-id"]
    assert [m["content"] for m in gw.db.get_messages(sid)] == ["remember 7", "first answer"]
    assert gw.db.get_session(sid)["system_prompt"]
    assert _chat(gw, "fresh-on-pg", "which number?")[0] == 200
    users = [m["content"] for m in fake_provider.last_request["messages"] if m["role"] == "user"]
    assert users == ["remember 7", "which number?"]
