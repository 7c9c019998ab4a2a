"""`hermes store migrate|status` and `hermes doctor` on PostgreSQL, as real subprocesses."""
from __future__ import annotations

import json

from hermes_state import SessionDB
from hermes_state.migrations import NAMES
from tests.cli.conftest import hermes_env, run_hermes
from tests.legacy_stores import sqlite_store
from tests.postgres import PASSWORD


def seed_sqlite(path) -> dict[str, object]:
    """A SQLite store with a row in every table; returns what to look for after the copy."""
    with SessionDB(path) as db:
        parent = db.create_session("parent", title="Parent", model="m")
        child = db.create_session("child", source="subagent", parent_session_id=parent)
        ids = db.append_messages(parent, [{"role": "user", "content": "the zeppelin plan"},
                                          {"role": "assistant", "content": "ok",
                                           "tool_calls": [{"id": "c1"}]}])
        db.replace_active_messages(parent, [{"role": "user", "content": "summary"}], ids[:1])
        db.record_delegation(parent, child, 0, "goal", "completed", started_at=1.0, duration=2.0)
        db.bind_session_key("telegram:dm:1", parent)
        db.save_response("resp_1", parent, {"id": "resp_1"})
        db.try_acquire_compression_lock(parent, "pid=1:host=elsewhere", ttl_seconds=60)
        db.add_cron_job({"id": "job1", "prompt": "p", "schedule": "every 10m", "timezone": "UTC",
                         "next_run_at": 100.0})
        run = db.claim_manual_cron_run("job1", 50.0, "me")
        db.pairing_update("telegram", lambda s: s["approved"].update({"42": {"user_name": "b"}}))
        return {"parent": parent, "run_id": run["run_id"], "max_id": db.max_message_id(parent)}


def test_migrate_copies_every_table_and_refuses_a_non_empty_target(hermes_home, pg_cluster):
    seeded = seed_sqlite(hermes_home / "state.db")
    url = pg_cluster.new_database(migrated=False)
    env = hermes_env()
    res = run_hermes("store", "migrate", "--to", url, env=env)
    assert res.returncode == 0, res.stderr
    assert PASSWORD not in res.stdout + res.stderr
    assert "messages: copying 3 rows" in res.stdout and "search built" in res.stdout
    assert "  cron_runs" in res.stdout and "pairing_state" in res.stdout
    with SessionDB(url=url) as db:
        assert db.applied_migrations() == list(NAMES)
        assert db.search_sessions("zeppelin")[0][0]["compacted"] == 1  # the compacted row too
        assert db.get_active_messages(seeded["parent"])[0]["content"] == "summary"
        assert db.list_children(seeded["parent"])[0]["status"] == "completed"
        assert db.get_session_for_key("telegram:dm:1") == seeded["parent"]
        assert db.get_response("resp_1")["body"] == {"id": "resp_1"}
        assert db.get_cron_run(seeded["run_id"])["trigger"] == "manual"
        assert db.pairing_read("telegram")["approved"] == {"42": {"user_name": "b"}}
        assert db.get_compression_lock_holder(seeded["parent"]) == "pid=1:host=elsewhere"
        new_id = db.append_message(seeded["parent"], "user", "after the copy")
        assert new_id > seeded["max_id"]  # ids continue past the copied ones

    again = run_hermes("store", "migrate", "--to", url, env=env)
    assert again.returncode == 1 and "already holds Hermes data" in again.stderr
    assert "--force" in again.stderr and len(again.stderr.strip().splitlines()) == 1
    forced = run_hermes("store", "migrate", "--to", url, "--force", env=env)
    assert forced.returncode == 0, forced.stderr
    with SessionDB(url=url) as db:
        assert db.count_sessions() == 2  # replaced, not doubled
        assert db.get_messages(seeded["parent"], include_inactive=True)[-1]["content"] == "ok"


def test_store_errors_are_one_line_exit_2_without_the_password(hermes_home, pg_cluster):
    env = hermes_env()
    seed_sqlite(hermes_home / "state.db")
    bad = pg_cluster.url("postgres", password="wrong-pw")
    res = run_hermes("store", "migrate", "--to", bad, env=env)
    assert res.returncode == 2 and "wrong-pw" not in res.stderr + res.stdout
    assert len(res.stderr.strip().splitlines()) == 1 and "postgresql://postgres@127.0.0.1" in res.stderr
    assert run_hermes("store", "migrate", "--to", "sqlite:///x", env=env).returncode == 2
    missing = run_hermes("store", "migrate", "--to", pg_cluster.new_database(), "--from",
                         str(hermes_home / "nope.db"), env=env)
    assert missing.returncode == 2 and "no SQLite store at" in missing.stderr
    down = run_hermes("sessions", "list", env=hermes_env(HERMES_DATABASE_URL=bad))
    assert down.returncode == 2 and "wrong-pw" not in down.stderr
    assert "cannot reach the session store" in down.stderr


def test_status_and_doctor_on_postgresql(hermes_home, pg_url):
    env = hermes_env(HERMES_DATABASE_URL=pg_url)
    st = run_hermes("store", "status", "--json", env=env)
    assert st.returncode == 0, st.stderr
    info = json.loads(st.stdout)
    assert info["backend"] == "postgresql" and PASSWORD not in st.stdout
    assert info["schema_version"] == len(NAMES) and info["pool"]["max_size"] >= 1
    assert info["migrations"] == list(NAMES)
    doc = run_hermes("doctor", env=env)
    line = next(x for x in doc.stdout.splitlines() if "session store" in x)
    assert "PostgreSQL postgresql://postgres@127.0.0.1" in line and "reachable" in line
    assert "schema version" in line and "pool" in line and PASSWORD not in doc.stdout


def test_migrate_from_a_file_of_numbered_migrations_records_every_name(hermes_home, pg_cluster):
    def rows(c) -> None:
        c.execute("INSERT INTO sessions (id, source) VALUES ('old', 'cli')")
        c.execute("INSERT INTO messages (session_id, role, content, seq)"
                  " VALUES ('old', 'user', 'an old walrus', 1)")

    sqlite_store(hermes_home / "state.db", 5, rows)  # from before pairing and owners
    url = pg_cluster.new_database(migrated=False)
    res = run_hermes("store", "migrate", "--to", url, env=hermes_env())
    assert res.returncode == 0, res.stderr
    with SessionDB(hermes_home / "state.db") as src, SessionDB(url=url) as dst:
        assert src.applied_migrations() == dst.applied_migrations() == list(NAMES)
        assert dst.search_sessions("walrus")[0][0]["session_id"] == "old"
    st = run_hermes("store", "status", "--json", env=hermes_env(HERMES_DATABASE_URL=url))
    assert json.loads(st.stdout)["migrations"] == list(NAMES)


def test_a_store_a_newer_hermes_migrated_is_one_line_exit_2(hermes_home, pg_cluster):
    with SessionDB(hermes_home / "state.db") as db:
        db.create_session("kept")
        db.execute("INSERT INTO schema_migrations (name, applied_at) VALUES ('zz_next', 1)")
    env = hermes_env()
    for args in (("store", "status", "--json"), ("sessions", "list")):
        res = run_hermes(*args, env=env)
        assert res.returncode == 2 and "zz_next" in res.stderr and "newer Hermes" in res.stderr
        assert len(res.stderr.strip().splitlines()) == 1 and res.stdout == ""
    url = pg_cluster.new_database(migrated=False)
    res = run_hermes("store", "migrate", "--to", url, env=env)
    assert res.returncode == 2 and "zz_next" in res.stderr
    import psycopg
    with psycopg.connect(url) as conn:  # the target was not touched
        assert conn.execute("SELECT to_regclass('sessions')").fetchone()[0] is None
