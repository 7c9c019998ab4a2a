"""What only PostgreSQL has (SPEC §16): named migrations under an advisory lock, several
processes on one database, a cross-host cron claim, errors that never show the password, a
database restarted under an open store. Real server (tests/postgres.py), real processes."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from hermes_state import SessionDB, SessionDBError
from hermes_state import postgres_schema
from hermes_state.migrations import NAMES

REPO = Path(__file__).resolve().parents[1]
NOW = 1_800_000_000.0


def run_children(tmp_path: Path, body: str, url: str, n: int) -> list[str]:
    """``n`` processes run ``body`` (with ``db_url`` and ``wait_for_go()``) at the same moment;
    returns each one's stdout. They start, then all are released together."""
    script = tmp_path / "child.py"
    script.write_text(textwrap.dedent(f"""
        import sys, time
        from pathlib import Path
        sys.path.insert(0, {str(REPO)!r})
        db_url, go = sys.argv[1], Path(sys.argv[2])
        def wait_for_go():
            print("ready", flush=True)
            while not go.exists():
                time.sleep(0.005)
    """) + textwrap.dedent(body))
    procs = [subprocess.Popen([sys.executable, str(script), url, str(tmp_path / "go")],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(n)]
    try:
        for p in procs:
            assert p.stdout.readline().strip() == "ready", p.stderr.read()
        (tmp_path / "go").touch()
        outs = []
        for p in procs:
            out, err = p.communicate(timeout=120)
            assert p.returncode == 0, err
            outs.append(out.strip())
        return outs
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def recorded(url: str) -> list[str]:
    """Every row of ``schema_migrations``, by name (a name twice would show twice)."""
    import psycopg
    with psycopg.connect(url) as conn:
        return [r[0] for r in conn.execute("SELECT name FROM schema_migrations ORDER BY name")]


def test_a_migration_run_twice_is_a_no_op(pg_cluster):
    url = pg_cluster.new_database(migrated=False)
    with SessionDB(url=url) as db:
        assert db.backend == "postgresql" and db.schema_version() == len(NAMES)
        db.create_session("kept")
    import psycopg
    with psycopg.connect(url, autocommit=True) as conn:
        assert postgres_schema.migrate(conn, "test") == 0  # nothing left to apply
    with SessionDB(url=url) as db:
        assert db.get_session("kept") and db.integrity_check() == []
    assert recorded(url) == sorted(NAMES)


def test_processes_migrating_at_once_apply_each_migration_once(pg_cluster, tmp_path):
    url = pg_cluster.new_database(migrated=False)
    outs = run_children(tmp_path, """
        wait_for_go()
        from hermes_state import SessionDB
        with SessionDB(url=db_url) as db:
            db.create_session()
            print(db.schema_version())
    """, url, 4)
    assert outs == [str(len(NAMES))] * 4
    assert recorded(url) == sorted(NAMES)
    with SessionDB(url=url) as db:
        assert db.count_sessions() == 4


def test_processes_upgrading_an_old_database_at_once_record_each_name_once(pg_cluster,
                                                                           tmp_path):
    from tests.legacy_stores import postgres_store

    url = pg_cluster.new_database(migrated=False)
    postgres_store(url, 1)
    outs = run_children(tmp_path, """
        wait_for_go()
        from hermes_state import SessionDB
        with SessionDB(url=db_url) as db:
            print(",".join(db.applied_migrations()))
    """, url, 4)
    assert outs == [",".join(NAMES)] * 4
    assert recorded(url) == sorted(NAMES)  # a name twice would fail its primary key anyway


def test_four_processes_claim_one_cron_occurrence_once(pg_url, tmp_path):
    with SessionDB(url=pg_url) as db:
        db.add_cron_job({"id": "job1", "prompt": "p", "schedule": "every 10m", "timezone": "UTC",
                         "next_run_at": NOW})
    outs = run_children(tmp_path, f"""
        import os
        from hermes_state import SessionDB
        def plan(job, now):
            return {{"fire_at": job["next_run_at"], "missed": [], "note": None,
                     "next_run_at": job["next_run_at"] + 600}}
        db = SessionDB(url=db_url)
        wait_for_go()
        print(len(db.claim_due_cron_runs({NOW!r}, f"w{{os.getpid()}}", plan)))
    """, pg_url, 4)
    assert sorted(outs) == ["0", "0", "0", "1"]
    with SessionDB(url=pg_url) as db:
        runs = db.list_cron_runs("job1")
        assert len(runs) == 1 and runs[0]["scheduled_at"] == NOW
        job = db.get_cron_job("job1")
        assert job["run_count"] == 1 and job["next_run_at"] == NOW + 600


def test_wrong_password_and_unreachable_host_name_the_url_without_password(pg_cluster):
    bad = pg_cluster.url("postgres", password="not-the-password")
    with pytest.raises(SessionDBError) as err:
        SessionDB(url=bad)
    msg = str(err.value)
    assert "not-the-password" not in msg and "hermes-test-pw" not in msg
    assert f"postgresql://postgres@127.0.0.1:{pg_cluster.port}/postgres" in msg
    assert "password authentication failed" in msg and "\n" not in msg

    from tests.postgres import free_port
    nowhere = f"postgresql://me:s3cret@127.0.0.1:{free_port()}/x"
    with pytest.raises(SessionDBError) as err:
        SessionDB(url=nowhere)
    assert "s3cret" not in str(err.value) and "postgresql://me@127.0.0.1:" in str(err.value)
    assert "cannot reach the session store" in str(err.value)

    with pytest.raises(SessionDBError, match="must be a postgresql:// URL"):
        SessionDB(url="mysql://u:p@h/db")
    with pytest.raises(SessionDBError, match="must be a postgresql:// URL"):
        SessionDB("mysql://u:p@h/db")  # a URL where the path goes is never a file


def test_a_url_passed_as_the_path_opens_that_database_not_a_file(pg_cluster, pg_url, tmp_path,
                                                                monkeypatch):
    monkeypatch.chdir(tmp_path)
    with SessionDB(pg_url) as db:
        assert db.backend == "postgresql"
        sid = db.create_session()
    with SessionDB(url=pg_url) as db:
        assert db.get_session(sid) is not None
    assert not (tmp_path / "postgresql:").exists()  # no folder with a SQLite file in it


def test_a_restarted_database_fails_the_call_in_flight_and_serves_the_next(pg_cluster, pg_url):
    db = SessionDB(url=pg_url)
    try:
        sid = db.create_session()
        db.append_message(sid, "user", "before the restart")
        started, outcome = threading.Event(), {}

        def slow() -> None:
            started.set()
            try:
                db.execute("SELECT pg_sleep(60)")
                outcome["result"] = "finished"
            except SessionDBError as exc:
                outcome["error"] = str(exc)

        worker = threading.Thread(target=slow)
        worker.start()
        started.wait(10)
        import psycopg
        with psycopg.connect(pg_cluster.url(), autocommit=True) as admin:  # the query is running
            for _ in range(500):
                if admin.execute("SELECT count(*) FROM pg_stat_activity WHERE query LIKE "
                                 "'SELECT pg_sleep%'").fetchone()[0]:
                    break
                threading.Event().wait(0.01)
        pg_cluster.restart()
        worker.join(60)
        assert "error" in outcome and "hermes-test-pw" not in outcome["error"]
        assert "the next call reconnects" in outcome["error"]
        db.append_message(sid, "user", "after the restart")  # a fresh connection
        assert [m["content"] for m in db.get_active_messages(sid)] == ["before the restart",
                                                                      "after the restart"]
    finally:
        db.close()


def test_advisory_lock_dies_with_its_process(pg_url, tmp_path):
    script = tmp_path / "holder.py"
    script.write_text(textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(REPO)!r})
        from hermes_state import SessionDB
        db = SessionDB(url=sys.argv[1])
        with db.advisory_lock("turn:s1", wait=0) as got:
            print(got, flush=True)
            time.sleep(600)
    """))
    proc = subprocess.Popen([sys.executable, str(script), pg_url], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "True"
        with SessionDB(url=pg_url) as db:
            with db.advisory_lock("turn:s1", wait=0) as got:
                assert got is False  # held by the other process
            with db.advisory_lock("turn:s1", wait=0.2) as got:
                assert got is False  # waited, gave up
            with db.advisory_lock("turn:other", wait=0) as got:
                assert got is True  # names are independent
            proc.kill()
            proc.wait()
            with db.advisory_lock("turn:s1", wait=30) as got:
                assert got is True  # its connection dropped with it
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_configuration_chooses_the_backend(pg_url, hermes_home, monkeypatch):
    from tests.conftest import write_config
    from hermes_core.config import load_config

    with SessionDB.from_config(load_config()) as db:
        assert db.backend == "sqlite" and db.db_path == hermes_home / "state.db"
    write_config(hermes_home, f"store:\n  url: {pg_url}\n  pool_size: 3\n")
    with SessionDB.from_config(load_config()) as db:
        assert db.backend == "postgresql" and db.pool_stats()["max_size"] == 3
        assert "hermes-test-pw" not in db.label and db.db_path is None
    with SessionDB() as db:  # the store itself never reads config.yaml
        assert db.backend == "sqlite"
    with SessionDB(hermes_home / "explicit.db") as db:
        assert db.backend == "sqlite"  # an explicit path stays SQLite
    write_config(hermes_home, "store:\n  url: postgresql://nobody:pw@127.0.0.1:1/none\n")
    monkeypatch.setenv("HERMES_DATABASE_URL", pg_url)  # the environment wins
    with SessionDB.from_config(load_config()) as db:
        assert db.backend == "postgresql" and db.count_sessions() == 0
