"""A session the gateway has just made holds nothing: its first turn reads none of it back (the
history, the session row, the store's top row), and the session is whole afterwards."""
from __future__ import annotations

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
        third = sessions.get_or_create("api_server:third")
        assert sessions.take_fresh(third) is True and sessions.take_fresh(third) is False


def test_on_a_shared_store_only_the_read_under_the_lease_proves_a_session_empty(pg_url):
    """Other processes write a PostgreSQL store: a session made here is fresh only when the
    read made under its lease found no row of it (mark 0); no read, or a row, and it is not."""
    from gateway.sessions import SessionMap
    from hermes_state import SessionDB

    with SessionDB(url=pg_url) as db:
        sessions = SessionMap(db)
        assert sessions.shared
        made = [sessions.get_or_create(f"api_server:shared{i}") for i in range(3)]
        assert sessions.take_fresh(made[0], 0) is True
        assert sessions.take_fresh(made[1], 12) is False  # another worker wrote a row
        assert sessions.take_fresh(made[1], 0) is False  # and it stays taken
        assert sessions.take_fresh(made[2]) is False  # nothing read under a lease


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
    from tests.postgres import StatementLog

    log = StatementLog(pg_cluster, pg_store)
    gw = make_gateway(api=True)
    assert gw.runner.leases.shared
    fake_provider.queue(text("warm"), text("first answer"), text("second answer"))
    assert _chat(gw, "warm-up", "hi")[0] == 200
    log.begin()
    status, hdrs, body = _chat(gw, "fresh-on-pg", "remember 7")
    assert status == 200, body
    sent = log.sent()
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
