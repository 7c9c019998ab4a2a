"""Stores made before owners existed (issue 20) upgrade in place, losing nothing: chat sessions get
their owner from source + user_id, jobs keep everything and get no owner (the owner's own)."""
from __future__ import annotations

import sqlite3

from hermes_state import SessionDB
from hermes_state import postgres_schema, sqlite_schema


def _old_rows(c) -> None:
    for sid, source, user in (("chat", "telegram", "42"), ("cli1", "cli", None), ("api", "api_server", None),
                              ("sub", "subagent", "42")):
        c.execute("INSERT INTO sessions (id, source, user_id, started_at) VALUES (?, ?, ?, 1)"
                  .replace("?", "%s" if not isinstance(c, sqlite3.Connection) else "?"), (sid, source, user))
    c.execute("INSERT INTO messages (session_id, role, content, seq) VALUES (?, 'user', 'kept', 1)"
              .replace("?", "%s" if not isinstance(c, sqlite3.Connection) else "?"), ("chat",))
    c.execute("INSERT INTO cron_jobs (id, prompt, schedule, timezone, origin, created_at, next_run_at)"
              " VALUES ('job1', 'p', 'every 1h', 'UTC', '{\"platform\": \"telegram\", \"chat_id\": \"42\"}',"
              " 1, 2)")


def _check(db: SessionDB) -> None:
    assert db.get_session("chat")["owner"] == "telegram:42"
    assert [db.get_session(s)["owner"] for s in ("cli1", "api", "sub")] == [None, None, None]
    assert db.get_messages("chat")[0]["content"] == "kept"
    job = db.get_cron_job("job1")
    assert (job["owner"], job["policy"], job["origin"]["chat_id"], job["next_run_at"]) == (None, None, "42", 2)
    assert db.search_sessions("kept", owner="telegram:42")[0][0]["session_id"] == "chat"
    assert db.search_sessions("kept", owner="telegram:7")[0] == []


def test_sqlite_store_upgrades_in_place(tmp_path):
    path = tmp_path / "state.db"
    conn = sqlite3.connect(path, isolation_level=None)
    for number, migration in enumerate(sqlite_schema.MIGRATIONS[:6], start=1):
        migration(conn)
        conn.execute(f"PRAGMA user_version = {number}")
    _old_rows(conn)
    conn.close()
    with SessionDB(path) as db:
        assert db.schema_version() == len(sqlite_schema.MIGRATIONS)
        _check(db)


def test_postgres_store_upgrades_in_place(pg_cluster):
    import psycopg

    url = pg_cluster.new_database(migrated=False)
    with psycopg.connect(url, autocommit=True) as conn:
        with conn.transaction():
            conn.execute("CREATE TABLE schema_version (version BIGINT NOT NULL)")
            for number, statements in enumerate(postgres_schema.MIGRATIONS[:2], start=1):
                for sql in statements:
                    conn.execute(sql)
                conn.execute("INSERT INTO schema_version (version) VALUES (%s)", (number,))
            _old_rows(conn)
    with SessionDB(url=url) as db:
        assert db.schema_version() == len(postgres_schema.MIGRATIONS)
        _check(db)
