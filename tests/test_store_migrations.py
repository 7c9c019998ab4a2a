"""Migrations by name, the same names on both backends (issue 22): a fresh store records every
name; stores from before the names (SQLite ``user_version``, PostgreSQL ``schema_version``)
upgrade in place and keep their rows; a store a newer Hermes migrated is refused by name.
Real SQLite files, a real PostgreSQL (tests/postgres.py), the old schemas as they shipped
(tests/legacy_stores.py)."""
from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from hermes_state import SessionDB, SessionDBError, migrations
from hermes_state.migrations import NAMES
from tests.legacy_stores import postgres_store, sqlite_store


def _open(ref: str) -> SessionDB:
    return SessionDB(url=ref) if "://" in ref else SessionDB(ref)


def _q(c: Any, sql: str) -> str:
    return sql if isinstance(c, sqlite3.Connection) else sql.replace("?", "%s")


def _old_rows(c: Any) -> None:
    """What a store of the first five migrations holds: a session with a message, a child's
    delegation record, a response, a job with a run."""
    for sid, source, parent in (("s1", "cli", None), ("kid", "subagent", "s1")):
        c.execute(_q(c, "INSERT INTO sessions (id, source, parent_session_id, started_at,"
                        " updated_at) VALUES (?, ?, ?, 1, 1)"), (sid, source, parent))
    c.execute("INSERT INTO messages (session_id, role, content, seq)"
              " VALUES ('s1', 'user', 'the old quokka note', 1)")
    c.execute("INSERT INTO delegations (child_session_id, parent_session_id, task_index, status)"
              " VALUES ('kid', 's1', 0, 'completed')")
    c.execute("INSERT INTO api_responses (id, session_id, created_at, body)"
              " VALUES ('resp_1', 's1', 1, '{\"id\": \"resp_1\"}')")
    c.execute("INSERT INTO cron_jobs (id, prompt, schedule, timezone, created_at, next_run_at)"
              " VALUES ('job1', 'p', 'every 1h', 'UTC', 1, 2)")
    c.execute("INSERT INTO cron_runs (job_id, scheduled_at, trigger, status)"
              " VALUES ('job1', 2, 'schedule', 'ok')")


def _rows_kept(db: SessionDB) -> None:
    assert db.applied_migrations() == list(NAMES) and db.schema_version() == len(NAMES)
    assert [m["content"] for m in db.get_messages("s1")] == ["the old quokka note"]
    assert db.search_sessions("quokka")[0][0]["session_id"] == "s1"  # old rows are indexed
    for prefix in ("qu*", "quo*", "quokk*"):  # fts_prefix: old rows in the prefix index too
        assert [h["session_id"] for h in db.search_sessions(prefix)[0]] == ["s1"], prefix
    assert db.get_session("s1")["last_seq"] == 1  # seq_counter: from the rows already there
    db.append_messages("s1", [{"role": "assistant", "content": "after the upgrade"}])
    assert [m["seq"] for m in db.get_messages("s1")] == [1, 2]
    assert db.list_children("s1")[0]["status"] == "completed"
    assert db.get_response("resp_1")["body"] == {"id": "resp_1"}
    assert db.get_cron_job("job1")["owner"] is None and len(db.list_cron_runs("job1")) == 1
    db.pairing_update("telegram", lambda s: s["approved"].update({"1": {}}))  # new tables work
    assert db.integrity_check() == []


def _records(db: SessionDB) -> dict[str, Any]:
    return dict(db.execute("SELECT name, applied_at FROM schema_migrations"))


# ----------------------------------------------------------------------------- both backends


def test_a_fresh_store_records_every_name_once_with_its_time(store: SessionDB) -> None:
    assert store.applied_migrations() == list(NAMES)
    assert store.schema_version() == len(NAMES) == 9
    records = _records(store)
    assert sorted(records) == sorted(NAMES) and all(records[n] > 0 for n in NAMES)
    assert store.integrity_check() == []


def test_a_store_a_newer_hermes_migrated_is_refused_by_name(store: SessionDB,
                                                            store_ref: str) -> None:
    store.create_session("kept")
    store.execute("INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)",
                  ("zz_from_the_future", 1.0))
    store.close()
    with pytest.raises(SessionDBError) as err:
        _open(store_ref)
    msg = str(err.value)
    assert "zz_from_the_future" in msg and "newer Hermes" in msg and "\n" not in msg
    assert err.value.unusable_config  # the CLI exits 2
    if "://" not in store_ref:  # the refused file is untouched
        raw = sqlite3.connect(store_ref)
        assert raw.execute("SELECT id FROM sessions").fetchall() == [("kept",)]
        assert raw.execute("SELECT count(*) FROM schema_migrations").fetchone()[0] == len(NAMES) + 1


def test_integrity_check_names_a_missing_migration(store: SessionDB) -> None:
    store.execute("DELETE FROM schema_migrations WHERE name = 'owners'")
    assert store.schema_version() == len(NAMES) - 1
    assert "migrations not applied: owners" in store.integrity_check()


def _owner_column_already_there(c: Any) -> None:
    _old_rows(c)
    c.execute("ALTER TABLE sessions ADD COLUMN owner TEXT")  # the owners step will collide


def test_a_failing_step_is_named_and_leaves_the_store_as_it_was(tmp_path, pg_cluster) -> None:
    path = tmp_path / "old.db"
    sqlite_store(path, 6, _owner_column_already_there)
    url = pg_cluster.new_database(migrated=False)
    postgres_store(url, 2, _owner_column_already_there)
    for ref in (str(path), url):
        with pytest.raises(SessionDBError) as err:
            _open(ref)
        msg = str(err.value)
        assert "cannot upgrade the session store" in msg and "migration 'owners' failed" in msg
        assert "as it was" in msg
    raw = sqlite3.connect(path)
    assert raw.execute("SELECT count(*) FROM sessions").fetchone()[0] == 2
    assert raw.execute("PRAGMA user_version").fetchone()[0] == 6
    assert sorted(r[0] for r in raw.execute("SELECT name FROM schema_migrations")) == \
        sorted(NAMES[:6])


# ----------------------------------------------------------------------------- SQLite


def _sqlite_schema(path: Path) -> set[tuple[str, str, str]]:
    conn = sqlite3.connect(path)
    try:
        return set(conn.execute("SELECT type, name, sql FROM sqlite_master"))
    finally:
        conn.close()


def test_a_sqlite_file_at_user_version_5_upgrades_in_place(tmp_path: Path) -> None:
    old = tmp_path / "old.db"
    sqlite_store(old, 5, _old_rows)
    with SessionDB(old) as db:
        _rows_kept(db)
        records = _records(db)
    # the first five are recorded from the old version number (when: unknown), the rest now
    assert [n for n in NAMES if records[n] is None] == list(NAMES[:5])
    assert records["pairing"] > 0 and records["owners"] > 0
    raw = sqlite3.connect(old)
    assert raw.execute("PRAGMA user_version").fetchone()[0] == 9  # an older Hermes opens it too
    raw.close()
    fresh = tmp_path / "fresh.db"
    SessionDB(fresh).close()
    assert _sqlite_schema(old) == _sqlite_schema(fresh)


def test_a_current_sqlite_file_from_before_the_names_records_them_all(tmp_path: Path) -> None:
    old = tmp_path / "old.db"
    sqlite_store(old, 7, _old_rows)
    with SessionDB(old) as db:
        _rows_kept(db)
        records = _records(db)
    assert {records[n] for n in NAMES[:7]} == {None}  # nothing re-ran; the later names ran now
    assert all(records[n] > 0 for n in NAMES[7:])


def test_a_migration_a_numbered_hermes_applied_meanwhile_is_recorded_not_rerun(tmp_path):
    """Two versions upgrading one file at once: the old one applies ``owners`` (and bumps
    user_version) between this one's steps, so the name is missing while its columns exist."""
    path = tmp_path / "state.db"
    with SessionDB(path) as db:
        db.execute("DELETE FROM schema_migrations WHERE name = 'owners'")
    with SessionDB(path) as db:  # running owners again would fail: its columns exist
        assert db.applied_migrations() == list(NAMES) and _records(db)["owners"] is None


# ----------------------------------------------------------------------------- PostgreSQL


def _pg_schema(url: str) -> tuple[list[tuple], list[tuple]]:
    """Every column (with its type, default and generation) and index of the database."""
    import psycopg

    with psycopg.connect(url) as conn:
        cols = conn.execute(
            "SELECT table_name, ordinal_position, column_name, data_type, is_nullable,"
            " column_default, is_generated, generation_expression FROM information_schema.columns"
            " WHERE table_schema = 'public' AND table_name <> 'schema_version'"
            " ORDER BY 1, 2").fetchall()
        idx = conn.execute("SELECT indexname, indexdef FROM pg_indexes"
                           " WHERE schemaname = 'public' ORDER BY 1").fetchall()
    return cols, idx


def test_a_postgres_database_at_version_1_upgrades_in_place(pg_cluster) -> None:
    url = pg_cluster.new_database(migrated=False)
    postgres_store(url, 1, _old_rows)
    with SessionDB(url=url) as db:
        _rows_kept(db)
        records = _records(db)
        legacy = db.execute("SELECT max(version) FROM schema_version")[0][0]
    assert [n for n in NAMES if records[n] is None] == list(NAMES[:5])
    assert records["pairing"] > 0 and records["owners"] > 0
    assert legacy == 5  # kept current: a host still on the numbered Hermes opens it too
    fresh = pg_cluster.new_database(migrated=False)
    SessionDB(url=fresh).close()
    assert _pg_schema(url) == _pg_schema(fresh)  # the split steps build the same schema


def test_a_postgres_database_at_version_3_records_them_all(pg_cluster) -> None:
    url = pg_cluster.new_database(migrated=False)
    postgres_store(url, 3)
    with SessionDB(url=url) as db:
        assert db.applied_migrations() == list(NAMES)
        assert {_records(db)[n] for n in NAMES[:7]} == {None}
        # a host still on the numbered Hermes applied owners while this one was upgrading
        db.execute("DELETE FROM schema_migrations WHERE name = 'owners'")
    with SessionDB(url=url) as db:  # recorded from schema_version, not run twice
        assert db.applied_migrations() == list(NAMES) and _records(db)["owners"] is None


# ----------------------------------------------------------------------------- pure logic


def test_old_version_numbers_map_onto_names() -> None:
    assert migrations.from_user_version(0, "x") == []
    assert migrations.from_user_version(5, "x") == list(NAMES[:5])
    assert migrations.from_schema_version(0, "x") == []
    assert migrations.from_schema_version(1, "x") == list(NAMES[:5])
    assert migrations.from_schema_version(2, "x") == list(NAMES[:6])
    assert migrations.from_schema_version(5, "x") == list(NAMES)
    for fn, too_new in ((migrations.from_user_version, 10), (migrations.from_schema_version, 6)):
        with pytest.raises(SessionDBError, match="newer Hermes"):
            fn(too_new, "x")
    assert migrations.prefix_count(NAMES[:3]) == 3
    assert migrations.prefix_count(["core", "cron"]) == 1
    assert [migrations.legacy_schema_version(NAMES[:n]) for n in (4, 5, 6, 7)] == [0, 1, 2, 3]


def test_names_come_back_in_order_and_unknown_ones_are_named() -> None:
    assert migrations.in_order(["owners", "core", "zz", "fts"]) == ["core", "fts", "owners", "zz"]
    assert migrations.pending(["core", "cron"]) == [n for n in NAMES if n not in ("core", "cron")]
    assert migrations.problems(NAMES) == []
    assert migrations.problems([*NAMES[:6], "zz"]) == [
        "migrations not applied: owners, seq_counter, fts_prefix", "migrations this Hermes does not know: zz"]
    migrations.refuse_unknown(NAMES, "x")
    with pytest.raises(SessionDBError, match=r"store /s.db has migrations .*\(a, b\)"):
        migrations.refuse_unknown([*NAMES, "b", "a"], "/s.db")
    with pytest.raises(AssertionError, match="missing"):
        migrations.check_steps("test", {n: None for n in NAMES[:-1]})
