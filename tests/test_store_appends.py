"""Appends on both backends (``hermes_state/messages.py``): on PostgreSQL an append is one
pipelined round trip whose INSERT reads the next ``seq`` itself, so these pin what that must
keep: concurrent writers never interleave a session's order, batches past ``INSERT_BATCH`` stay
in order, the counters move in the same transaction, and a failed append leaves nothing."""
from __future__ import annotations

import threading

import pytest

from hermes_state import appends
from hermes_state.common import LeaseLost
from tests.postgres import terminate_backend


def test_concurrent_appends_to_one_session_keep_each_batch_together(store):
    sid = store.create_session()
    start = threading.Barrier(4)
    errors: list[BaseException] = []

    def writer(name: str) -> None:
        try:
            start.wait(10)
            for n in range(10):
                store.append_messages(sid, [{"role": "user", "content": f"{name}{n}a"},
                                            {"role": "assistant", "content": f"{name}{n}b"}])
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in "wxyz"]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    texts = [m["content"] for m in store.get_messages(sid)]
    assert len(texts) == 80
    pairs = list(zip(texts[::2], texts[1::2]))
    assert all(a[:-1] == b[:-1] and a.endswith("a") and b.endswith("b") for a, b in pairs)
    seqs = [int(r[0]) for r in store.execute(
        "SELECT seq FROM messages WHERE session_id = ? ORDER BY seq", (sid,))]
    assert seqs == list(range(1, 81))
    assert store.get_session(sid)["message_count"] == 80


def test_a_batch_past_the_insert_limit_keeps_its_order_and_ids(store, monkeypatch):
    monkeypatch.setattr(appends, "INSERT_BATCH", 3)
    sid = store.create_session()
    first = store.append_message(sid, "user", "zero")
    ids = store.append_messages(sid, [{"role": "user", "content": str(n)} for n in range(8)],
                                usage=(11, 4))
    assert len(ids) == 8 and ids == sorted(ids) and ids[0] > first
    history, row_ids = store.get_active_history(sid)
    assert [m["content"] for m in history] == ["zero", *map(str, range(8))]
    assert row_ids == [first, *ids]
    s = store.get_session(sid)
    assert (s["message_count"], s["prompt_tokens"], s["completion_tokens"]) == (9, 11, 4)


def test_an_append_that_fails_leaves_nothing(store):
    sid = store.create_session()
    store.append_message(sid, "user", "kept")

    class Lost:
        def check(self, tx) -> None:
            raise LeaseLost("the lock was lost")

    with pytest.raises(LeaseLost):
        store.append_messages(sid, [{"role": "assistant", "content": "x"}], usage=(5, 5),
                              fence=Lost())
    with pytest.raises(ValueError):
        store.append_messages(sid, [{"role": "assistant", "content": "y"}, {"content": "z"}])
    assert [m["content"] for m in store.get_messages(sid)] == ["kept"]
    s = store.get_session(sid)
    assert (s["message_count"], s["prompt_tokens"]) == (1, 0)


def test_a_role_without_temp_privilege_still_appends(pg_cluster, pg_url):
    """The one-statement append needs no TEMP privilege (no function, nothing per connection)."""
    import psycopg

    from hermes_state import SessionDB

    database = pg_url.rsplit("/", 1)[1]
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute("CREATE ROLE notemp LOGIN PASSWORD 'notemp-pw'")
        admin.execute(f"REVOKE TEMPORARY ON DATABASE {database} FROM PUBLIC")
        admin.execute("GRANT ALL ON SCHEMA public TO notemp")
        admin.execute("GRANT ALL ON ALL TABLES IN SCHEMA public TO notemp")
        admin.execute("GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO notemp")
    url = pg_url.replace("postgres:hermes-test-pw@", "notemp:notemp-pw@")
    with psycopg.connect(url, autocommit=True) as probe:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            probe.execute("CREATE TEMP TABLE t (x int)")
    db = SessionDB(url=url)
    try:
        sid = db.create_session()
        ids = db.append_messages(sid, [{"role": "user", "content": "a"},
                                       {"role": "assistant", "content": "b"}], usage=(3, 2))
        ids.append(db.append_message(sid, "user", "c"))
        history, row_ids = db.get_active_history(sid)
        assert [m["content"] for m in history] == ["a", "b", "c"] and row_ids == ids
        assert db.get_session(sid)["prompt_tokens"] == 3
    finally:
        db.close()


def test_rows_written_without_the_counter_are_followed_not_overtaken(store):
    """An older Hermes (or an import) writes ``MAX(seq) + 1`` and leaves ``last_seq`` alone: the
    next append still goes after its rows, and a compaction leaves the counter at the top."""
    sid = store.create_session()
    store.append_messages(sid, [{"role": "user", "content": "one"}])
    store.execute("INSERT INTO messages (session_id, role, content, seq) VALUES (?, 'user',"
                  " 'by an older writer', 7)", (sid,))
    ids = store.append_messages(sid, [{"role": "assistant", "content": "a"},
                                      {"role": "user", "content": "b"}])
    history, row_ids = store.get_active_history(sid)
    assert [m["content"] for m in history] == ["one", "by an older writer", "a", "b"]
    assert [m["seq"] for m in store.get_messages(sid)][-2:] == [8, 9] and row_ids[-2:] == ids
    store.replace_active_messages(sid, [{"role": "user", "content": "summary"}], row_ids[:2])
    top = store.execute("SELECT MAX(seq) FROM messages WHERE session_id = ?", (sid,))[0][0]
    assert store.get_session(sid)["last_seq"] == top
    store.append_message(sid, "assistant", "last")
    assert [m["content"] for m in store.get_active_messages(sid)] == ["summary", "a", "b", "last"]


def test_a_fenced_append_after_the_lock_died_writes_nothing(pg_cluster, pg_url):
    """PostgreSQL checks the lease inside the append statement itself: once the lock's
    connection is gone, the append raises ``LeaseLost`` and no row or counter moved."""
    import psycopg

    from hermes_state import SessionDB

    db = SessionDB(url=pg_url)
    try:
        sid = db.create_session()
        with db.advisory_lock(f"turn:{sid}", wait=0) as got:
            assert got
            fence = db.lock_fence(f"turn:{sid}")
            db.append_messages(sid, [{"role": "user", "content": "kept"}], fence=fence)
            with psycopg.connect(pg_url, autocommit=True) as admin:
                terminate_backend(admin, fence.pid)
            with pytest.raises(LeaseLost):
                db.append_messages(sid, [{"role": "assistant", "content": "lost"}],
                                   usage=(3, 3), fence=fence)
        assert [m["content"] for m in db.get_messages(sid)] == ["kept"]
        s = db.get_session(sid)
        assert (s["message_count"], s["prompt_tokens"], s["last_seq"]) == (1, 0, 1)
    finally:
        db.close()
