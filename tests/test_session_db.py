"""SessionDB against real SQLite files, a real PostgreSQL and real OS processes (no mocks).

Tests taking ``db`` run on both backends (the ``store`` fixture); those about SQLite files
(WAL, junk files, FTS5 triggers) take ``db_path``."""
from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

import hermes_state
from hermes_state import SessionDB, SessionDBError, sqlite_schema
from hermes_state.migrations import NAMES

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "state.db"


@pytest.fixture
def db(store: SessionDB) -> SessionDB:
    return store


def holder_for(pid: int, nonce: str = "0badc0de") -> str:
    return f"pid={pid}:tid=1:agent=abc123:nonce={nonce}"


# --------------------------------------------------------------------------------- helpers for
# child processes: each waits for a "go" file so they really run at the same time.

CHILD_PRELUDE = """
import os, sys, time
from pathlib import Path
sys.path.insert(0, {repo!r})
from hermes_state import SessionDB
db_path, go, done = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
def open_db():
    return SessionDB(url=db_path) if "://" in db_path else SessionDB(db_path)
def wait_for(p):
    while not p.exists():
        time.sleep(0.005)
"""


def spawn(tmp_path: Path, body: str, db_path: Path, name: str) -> subprocess.Popen:
    script = tmp_path / f"{name}.py"
    script.write_text(CHILD_PRELUDE.format(repo=str(REPO)) + textwrap.dedent(body))
    return subprocess.Popen(
        [sys.executable, str(script), str(db_path), str(tmp_path / "go"), str(tmp_path / "done")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def read_line(proc: subprocess.Popen) -> str:
    line = proc.stdout.readline()
    if not line:
        raise AssertionError(f"child died: {proc.wait()} {proc.stderr.read()}")
    return line.strip()


# ----------------------------------------------------------------------------------- schema


def test_schema_created_and_reopen_is_idempotent(db_path: Path) -> None:
    with SessionDB(db_path) as db:
        assert db.schema_version() == len(NAMES)
        sid = db.create_session(title="first")
        db.append_message(sid, "user", "remember the walrus")
    mode = sqlite3.connect(db_path).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
    for _ in range(2):
        with SessionDB(db_path) as db:
            assert db.schema_version() == len(NAMES)
            assert [m["content"] for m in db.get_active_messages(sid)] == ["remember the walrus"]
            assert len(db.search_messages("walrus")) == 1
            assert db.integrity_check() == []
    tables = {r[0] for r in sqlite3.connect(db_path).execute(
        "SELECT name FROM sqlite_master WHERE type IN ('table', 'index')")}
    assert {"sessions", "messages", "messages_fts", "compression_locks", "session_keys",
            "idx_messages_active"} <= tables


def test_migration_from_older_version_backfills_search(db_path: Path) -> None:
    raw = sqlite3.connect(db_path, isolation_level=None)
    sqlite_schema.STEPS["core"](raw)
    raw.execute("PRAGMA user_version = 1")
    raw.execute("INSERT INTO sessions (id, source) VALUES ('old', 'cli')")
    raw.execute("INSERT INTO messages (session_id, role, content, seq) "
                "VALUES ('old', 'user', 'legacy platypus text', 1)")
    raw.close()
    with SessionDB(db_path) as db:
        assert db.schema_version() == len(NAMES)
        hits = db.search_messages("platypus")
        assert [h["session_id"] for h in hits] == ["old"]
        assert db.integrity_check() == []


def test_default_path_under_hermes_home(tmp_path: Path, monkeypatch) -> None:
    home = tmp_path / "nested" / "home"
    monkeypatch.setenv("HERMES_HOME", str(home))
    with SessionDB() as db:
        assert db.db_path == home / "state.db"
    assert (home / "state.db").is_file()


def test_non_sqlite_file_gives_clear_error_and_is_left_alone(db_path: Path) -> None:
    junk = b"this is my shopping list, not a database\n" * 50
    db_path.write_bytes(junk)
    with pytest.raises(SessionDBError) as err:
        SessionDB(db_path)
    msg = str(err.value)
    assert str(db_path) in msg and "not a usable SQLite" in msg and "Move it aside" in msg
    assert db_path.read_bytes() == junk


def test_closed_store_and_context_manager(db_path: Path) -> None:
    with SessionDB(db_path) as db:
        db.create_session("s1")
    with pytest.raises(SessionDBError, match="closed"):
        db.get_session("s1")
    db.close()  # twice is fine


# ---------------------------------------------------------------------------------- sessions


def test_session_crud(db: SessionDB) -> None:
    sid = db.create_session(source="telegram", model="m1", title="Plans", user_id="42",
                            system_prompt="be brief")
    assert re.fullmatch(r"\d{8}_\d{6}_[0-9a-f]{6}", sid)
    s = db.get_session(sid)
    assert (s["source"], s["model"], s["title"], s["user_id"], s["system_prompt"]) == \
        ("telegram", "m1", "Plans", "42", "be brief")
    assert s["message_count"] == 0 and s["compactions"] == 0 and s["ended_at"] is None
    # existing id: returned untouched
    assert db.create_session(sid, source="cli", title="Other") == sid
    assert db.get_session(sid)["title"] == "Plans"
    assert db.get_session("nope") is None

    db.set_session_model(sid, "m2")
    db.set_system_prompt(sid, "be kind")
    db.update_session_usage(sid, prompt_tokens=100, completion_tokens=7)
    db.update_session_usage(sid, prompt_tokens=50)
    db.end_session(sid, reason="user_exit")
    s = db.get_session(sid)
    assert (s["model"], s["system_prompt"], s["prompt_tokens"], s["completion_tokens"]) == \
        ("m2", "be kind", 150, 7)
    assert s["ended_at"] is not None and s["end_reason"] == "user_exit"


def test_titles_are_unique(db: SessionDB) -> None:
    a = db.create_session("a", title="Taken")
    b = db.create_session("b")
    with pytest.raises(ValueError, match="already used by session a"):
        db.set_session_title(b, "Taken")
    with pytest.raises(ValueError, match="Taken"):
        db.create_session("c", title="Taken")
    assert db.get_session("c") is None
    assert db.set_session_title(a, "Taken")  # same session may keep its own title
    assert db.set_session_title(b, "Free")
    assert db.set_session_title(a, "") and db.get_session(a)["title"] is None
    assert db.set_session_title(b, "Taken")  # freed by a


def test_resolve_session(db: SessionDB) -> None:
    db.create_session("20260101_120000_aaaaaa", title="alpha")
    db.create_session("20260101_120000_aabbbb")
    db.create_session("20260202_090000_cccccc")
    assert db.resolve_session("20260101_120000_aaaaaa") == "20260101_120000_aaaaaa"
    assert db.resolve_session("alpha") == "20260101_120000_aaaaaa"
    assert db.resolve_session("20260202") == "20260202_090000_cccccc"
    assert db.resolve_session("20260101_120000_aa") is None  # ambiguous
    assert db.resolve_session("20260101_120000_aab") == "20260101_120000_aabbbb"
    assert db.resolve_session("zzz") is None
    assert db.resolve_session("") is None


def test_list_sessions_order_preview_and_filters(db: SessionDB) -> None:
    a = db.create_session("a", source="cli")
    b = db.create_session("b", source="telegram")
    db.append_message(a, "system", "sys")
    db.append_message(a, "user", "  first   question " + "x" * 200)
    db.append_message(a, "assistant", "answer")
    db.append_message(b, "user", [{"type": "text", "text": "hi from"}, {"type": "text", "text": "a list"}])
    db.execute("UPDATE sessions SET updated_at = 1000 WHERE id = 'a'")
    db.execute("UPDATE sessions SET updated_at = 2000 WHERE id = 'b'")
    listed = db.list_sessions()
    assert [s["id"] for s in listed] == ["b", "a"]
    assert listed[0]["preview"] == "hi from a list"
    assert listed[1]["preview"].startswith("first question xxx")
    assert len(listed[1]["preview"]) <= hermes_state.PREVIEW_CHARS
    assert listed[1]["message_count"] == 3
    assert [s["id"] for s in db.list_sessions(source="cli")] == ["a"]
    assert [s["id"] for s in db.list_sessions(limit=1, offset=1)] == ["a"]


def test_delete_session_removes_everything(db: SessionDB) -> None:
    keep = db.create_session("keep")
    gone = db.create_session("gone")
    db.append_message(keep, "user", "zebra in keep")
    db.append_message(gone, "user", "zebra in gone")
    db.bind_session_key("telegram:dm:1", gone)
    db.bind_session_key("telegram:dm:2", keep)
    assert db.try_acquire_compression_lock(gone, holder_for(os.getpid()))
    assert db.delete_session(gone) is True
    assert db.get_session(gone) is None and db.get_messages(gone, include_inactive=True) == []
    assert [h["session_id"] for h in db.search_messages("zebra")] == [keep]
    assert db.get_session_for_key("telegram:dm:1") is None
    assert db.get_session_for_key("telegram:dm:2") == keep
    assert db.get_compression_lock_holder(gone) is None
    assert db.delete_session(gone) is False
    assert db.integrity_check() == []


def test_prune_sessions(db: SessionDB) -> None:
    for sid, src in (("old_cli", "cli"), ("old_tg", "telegram"), ("old_locked", "cli"),
                     ("fresh", "cli")):
        db.create_session(sid, source=src)
        db.append_message(sid, "user", f"text of {sid}")
    db.end_session("fresh")
    db.execute("UPDATE sessions SET updated_at = 1000, started_at = 1000, ended_at = NULL "
               "WHERE id LIKE 'old%'")
    assert db.try_acquire_compression_lock("old_locked", holder_for(os.getpid()))
    assert db.prune_sessions(30, source="telegram") == 1
    assert db.get_session("old_tg") is None
    assert db.prune_sessions(30) == 1
    assert db.get_session("old_cli") is None
    assert db.get_session("old_locked") is not None  # live lock: someone is working on it
    assert db.get_session("fresh") is not None
    assert db.prune_sessions(30) == 0
    assert db.integrity_check() == []


def test_session_keys(db: SessionDB) -> None:
    assert db.get_session_for_key("telegram:dm:42") is None
    db.bind_session_key("telegram:dm:42", "s1")
    db.bind_session_key("telegram:dm:42", "s2")
    assert db.get_session_for_key("telegram:dm:42") == "s2"


# ---------------------------------------------------------------------------------- messages

TOOL_CALLS = [{"id": "call_1", "type": "function",
               "function": {"name": "terminal", "arguments": "{\"command\": \"ls\"}"}}]


def test_message_round_trip(db: SessionDB) -> None:
    sid = "auto"  # append creates the session row
    ids = [
        db.append_message(sid, "system", "you are hermes"),
        db.append_message(sid, "user", [{"type": "text", "text": "what is this"},
                                        {"type": "image_url", "image_url": {"url": "data:x"}}]),
        db.append_message(sid, "assistant", None, tool_calls=TOOL_CALLS, token_count=12),
        db.append_message(sid, "tool", "a.txt b.txt", tool_call_id="call_1", tool_name="terminal"),
    ]
    ids += db.append_messages(sid, [
        {"role": "assistant", "content": "two files"},
        {"role": "user", "content": {"odd": "dict content"}},
    ])
    assert ids == sorted(ids) and len(set(ids)) == 6
    assert db.get_session(sid)["message_count"] == 6
    assert db.max_message_id(sid) == ids[-1]
    assert db.get_active_messages(sid) == [
        {"role": "system", "content": "you are hermes"},
        {"role": "user", "content": [{"type": "text", "text": "what is this"},
                                     {"type": "image_url", "image_url": {"url": "data:x"}}]},
        {"role": "assistant", "content": None, "tool_calls": TOOL_CALLS},
        {"role": "tool", "content": "a.txt b.txt", "tool_call_id": "call_1"},  # tool_name stays in the row
        {"role": "assistant", "content": "two files"},
        {"role": "user", "content": {"odd": "dict content"}},
    ]
    rows = db.get_messages(sid)
    assert [r["id"] for r in rows] == ids
    assert rows[2]["token_count"] == 12 and rows[2]["tool_calls"] == TOOL_CALLS
    assert all(r["active"] == 1 and r["compacted"] == 0 and r["created_at"] for r in rows)
    # the text of list content is searchable, the JSON keys are not
    assert [h["message_id"] for h in db.search_messages("what")] == [ids[1]]
    assert db.search_messages("image_url") == []
    assert db.max_message_id("missing") is None


def test_append_messages_is_one_transaction(db: SessionDB) -> None:
    sid = db.create_session("s")
    with pytest.raises(TypeError):
        db.append_messages(sid, [{"role": "user", "content": "ok"},
                                 {"role": "user", "content": object()}])
    with pytest.raises(ValueError, match="no role"):
        db.append_messages(sid, [{"role": "user", "content": "ok"}, {"content": "who?"}])
    assert db.get_messages(sid, include_inactive=True) == []
    assert db.get_session(sid)["message_count"] == 0


def test_compaction_in_place(db: SessionDB) -> None:
    sid = db.create_session("s", title="long chat")
    old_ids = db.append_messages(sid, [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "tell me about the aardvark"},
        {"role": "assistant", "content": "the aardvark digs"},
        {"role": "user", "content": "and the pangolin?"},
        {"role": "assistant", "content": "scales"},
    ])
    new = [{"role": "system", "content": "sys"},
           {"role": "user", "content": "[summary] discussed aardvarks and pangolins"},
           {"role": "assistant", "content": "scales"}]
    new_ids = db.replace_active_messages(sid, new, old_ids)
    assert min(new_ids) > max(old_ids)
    assert db.get_active_messages(sid) == new
    rows = db.get_messages(sid, include_inactive=True)
    assert [r["id"] for r in rows] == old_ids + new_ids
    assert all(r["active"] == 0 and r["compacted"] == 1 for r in rows[:5])
    assert all(r["active"] == 1 and r["compacted"] == 0 for r in rows[5:])
    assert [r["id"] for r in db.get_messages(sid)] == new_ids
    s = db.get_session(sid)
    assert (s["compactions"], s["message_count"]) == (1, 8)
    hits = db.search_messages("digs")
    assert [(h["message_id"], h["active"], h["session_title"]) for h in hits] == \
        [(old_ids[2], 0, "long chat")]
    assert "»digs«" in hits[0]["snippet"]
    assert db.integrity_check() == []


def test_compaction_replaces_exactly_the_given_rows(db: SessionDB) -> None:
    """Rows another writer appended (between this agent's rows and after them) stay live, after the
    new rows; the full transcript reads: replaced rows, the compaction, the other rows."""
    sid = db.create_session("s")
    mine = db.append_messages(sid, [{"role": "user", "content": f"m{i}"} for i in range(4)])
    theirs = db.append_messages(sid, [{"role": "user", "content": "their question"}])
    mine += db.append_messages(sid, [{"role": "assistant", "content": "my answer"}])
    theirs += db.append_messages(sid, [{"role": "assistant", "content": "their answer"}])
    messages, ids = db.get_active_history(sid)
    assert ids == sorted(mine + theirs) and len(messages) == 7
    assert db.get_active_messages(sid) == messages
    new_ids = db.replace_active_messages(sid, [{"role": "user", "content": "summary of mine"},
                                               {"role": "assistant", "content": "my answer"}], mine)
    assert [m["content"] for m in db.get_active_messages(sid)] == \
        ["summary of mine", "my answer", "their question", "their answer"]
    assert db.get_active_history(sid)[1] == new_ids + theirs
    rows = db.get_messages(sid, include_inactive=True)
    assert [r["id"] for r in rows] == mine + new_ids + theirs
    assert [r["compacted"] for r in rows] == [1] * 5 + [0] * 4
    db.append_message(sid, "user", "next")
    assert db.get_active_messages(sid)[-1]["content"] == "next"
    # unknown ids (or another session's) replace nothing: the new rows are appended
    other = db.create_session("o")
    db.replace_active_messages(other, [{"role": "user", "content": "x"}], [mine[0], 10**9])
    assert len(db.get_active_messages(sid)) == 5 and db.get_active_messages(other)[0]["content"] == "x"


def test_fenced_compaction_commits_only_for_the_lock_holder(db: SessionDB) -> None:
    sid = db.create_session("s")
    ids = db.append_messages(sid, [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}])
    me, thief = holder_for(os.getpid(), "aaaaaaaa"), holder_for(os.getpid(), "bbbbbbbb")
    summary = [{"role": "user", "content": "summary"}]
    with pytest.raises(hermes_state.CompressionLockLost, match="nobody"):
        db.replace_active_messages(sid, summary, ids, lock_holder=me)  # never held
    assert db.try_acquire_compression_lock(sid, me, ttl_seconds=-1)  # held, then expired...
    assert db.try_acquire_compression_lock(sid, thief)  # ...and taken over
    with pytest.raises(hermes_state.CompressionLockLost, match="nonce=bbbbbbbb"):
        db.replace_active_messages(sid, summary, ids, lock_holder=me)
    assert db.get_active_history(sid)[1] == ids and db.get_session(sid)["compactions"] == 0
    assert len(db.get_messages(sid, include_inactive=True)) == 2
    db.replace_active_messages(sid, summary, ids, lock_holder=thief)
    assert db.get_active_messages(sid) == summary


def test_corrupt_rows_do_not_break_reads(db: SessionDB) -> None:
    sid = db.create_session("s")
    bad_tc = db.append_message(sid, "assistant", "calling", tool_calls=TOOL_CALLS)
    bad_content = db.append_message(sid, "user", [{"type": "text", "text": "parts"}])
    db.append_message(sid, "user", "fine")
    db.execute("UPDATE messages SET tool_calls = '{not json' WHERE id = ?", (bad_tc,))
    db.execute("UPDATE messages SET content_parts = '[broken' WHERE id = ?", (bad_content,))
    rows = db.get_messages(sid)
    assert rows[0]["tool_calls"] == "{not json" and rows[0]["content"] == "calling"
    assert rows[1]["content"] == "parts"  # falls back to the readable text
    assert db.get_active_messages(sid) == [
        {"role": "assistant", "content": "calling"},
        {"role": "user", "content": "parts"},
        {"role": "user", "content": "fine"},
    ]
    assert len(db.list_sessions()) == 1


# ------------------------------------------------------------------------------------ search


def test_search_filters_and_nasty_queries(db: SessionDB) -> None:
    a = db.create_session("a", title="A")
    b = db.create_session("b")
    db.append_message(a, "user", "the foo-bar widget and an unbalanced quote")
    db.append_message(a, "assistant", "ratio a:b is fine; (parens) too")
    db.append_message(b, "user", "another foo-bar mention")
    db.append_message(b, "tool", "output", tool_call_id="c", tool_name="web_search")

    assert {h["session_id"] for h in db.search_messages("foo-bar")} == {a, b}
    assert [h["session_id"] for h in db.search_messages("foo-bar", session_id=b)] == [b]
    assert [h["role"] for h in db.search_messages("foo-bar", role="user", session_id=a)] == ["user"]
    assert [h["role"] for h in db.search_messages("a:b")] == ["assistant"]
    assert [h["session_id"] for h in db.search_messages('"unbalanced')] == [a]
    assert [h["role"] for h in db.search_messages("web_search")] == ["tool"]
    assert db.search_messages("foo OR nothinglikethis", limit=1)[0]["session_id"] in (a, b)
    for nasty in ["*", '"', "(", "parens)", "NOT", "foo AND", "-", "a:", ":", "'", "c++ $x",
                  '"foo" "bar', "^", "NEAR(", "", "   "]:
        assert isinstance(db.search_messages(nasty), list), nasty
    assert db.search_messages("*") == []
    hit = db.search_messages("widget")[0]
    assert set(hit) == {"session_id", "message_id", "role", "snippet", "created_at", "active",
                        "session_title"}
    assert hit["session_title"] == "A" and "»widget«" in hit["snippet"]


# ---------------------------------------------------------------------------- concurrency


def test_threads_share_one_store(db: SessionDB) -> None:
    sid = db.create_session("s")
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(50):
                db.append_message(sid, "user", f"t{n}-{i}")
                db.get_active_messages(sid)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(db.get_messages(sid)) == 200 and db.get_session(sid)["message_count"] == 200


def test_two_processes_append_to_one_session(tmp_path: Path, db_path: Path) -> None:
    with SessionDB(db_path) as db:
        sid = db.create_session("shared")
    body = """
        db = SessionDB(db_path)
        print("ready", flush=True)
        wait_for(go)
        for i in range(200):
            db.append_message("shared", "user", f"{sys.argv[4]}-{i}")
            time.sleep(0.001)  # spread the writes so the two processes overlap more
        print("finished", flush=True)
    """
    procs = []
    for name in ("p1", "p2"):
        script = tmp_path / f"{name}.py"
        script.write_text(CHILD_PRELUDE.format(repo=str(REPO)) + textwrap.dedent(body))
        procs.append(subprocess.Popen(
            [sys.executable, str(script), str(db_path), str(tmp_path / "go"),
             str(tmp_path / "done"), name], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True))
    for p in procs:
        assert read_line(p) == "ready"
    (tmp_path / "go").touch()
    for p in procs:
        assert read_line(p) == "finished"
        assert p.wait(timeout=60) == 0
    with SessionDB(db_path) as db:
        rows = db.get_messages(sid)
        contents = [r["content"] for r in rows]
        assert len(rows) == 400
        assert sorted(contents) == sorted(f"{n}-{i}" for n in ("p1", "p2") for i in range(200))
        assert len({r["id"] for r in rows}) == 400 and len({r["seq"] for r in rows}) == 400
        for n in ("p1", "p2"):  # each writer's own order is preserved
            mine = [c for c in contents if c.startswith(n + "-")]
            assert mine == [f"{n}-{i}" for i in range(200)]
        assert db.get_session(sid)["message_count"] == 400
        assert db.integrity_check() == []


def test_processes_open_a_fresh_file_at_once(tmp_path: Path, db_path: Path) -> None:
    body = """
        print("ready", flush=True)
        wait_for(go)
        db = SessionDB(db_path)
        db.append_message("s", "user", f"hello from {os.getpid()}")
        print(db.schema_version(), flush=True)
    """
    procs = [spawn(tmp_path, body, db_path, f"open{i}") for i in range(4)]
    for p in procs:
        assert read_line(p) == "ready"
    (tmp_path / "go").touch()
    for p in procs:
        assert read_line(p) == str(len(NAMES))
        assert p.wait(timeout=60) == 0
    with SessionDB(db_path) as db:
        assert len(db.get_messages("s")) == 4
        assert db.integrity_check() == []


# --------------------------------------------------------------------------------- locks


def test_lock_race_between_processes(tmp_path: Path, db_path: Path) -> None:
    SessionDB(db_path).close()
    body = """
        db = SessionDB(db_path)
        holder = f"pid={os.getpid()}:tid=1:agent=a:nonce={os.getpid():08x}"
        print("ready", flush=True)
        wait_for(go)
        print(db.try_acquire_compression_lock("s", holder), holder, flush=True)
        wait_for(done)  # stay alive so the winner is not reclaimed as dead
    """
    procs = [spawn(tmp_path, body, db_path, f"racer{i}") for i in range(4)]
    try:
        for p in procs:
            assert read_line(p) == "ready"
        (tmp_path / "go").touch()
        results = [read_line(p).split(" ", 1) for p in procs]
        winners = [holder for ok, holder in results if ok == "True"]
        assert len(winners) == 1, results
        assert sorted(ok for ok, _ in results) == ["False", "False", "False", "True"]
        with SessionDB(db_path) as db:
            assert db.get_compression_lock_holder("s") == winners[0]
    finally:
        (tmp_path / "done").touch()
        for p in procs:
            p.wait(timeout=60)
    assert [p.returncode for p in procs] == [0, 0, 0, 0]


def _start_holder(tmp_path: Path, db_path: Path | str) -> tuple[subprocess.Popen, str]:
    body = """
        db = open_db()
        holder = f"pid={os.getpid()}:tid=1:agent=feed:nonce=12345678"
        assert db.try_acquire_compression_lock("s", holder, ttl_seconds=3600)
        print(holder, flush=True)
        time.sleep(600)
    """
    proc = spawn(tmp_path, body, db_path, "holder")
    return proc, read_line(proc)


def test_sigkilled_holder_is_reclaimed_immediately(tmp_path: Path, db: SessionDB,
                                                  store_ref: str) -> None:
    proc, holder = _start_holder(tmp_path, store_ref)
    try:
        me = holder_for(os.getpid())
        assert db.get_compression_lock_holder("s") == holder
        assert db.try_acquire_compression_lock("s", me) is False  # alive: respected
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        assert db.get_compression_lock_holder("s") is None
        assert db.try_acquire_compression_lock("s", me) is True  # TTL (1 h) not expired
        assert db.get_compression_lock_holder("s") == me
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_unreaped_killed_holder_counts_as_dead(tmp_path: Path, db: SessionDB,
                                               store_ref: str) -> None:
    proc, holder = _start_holder(tmp_path, store_ref)
    try:
        proc.send_signal(signal.SIGKILL)
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped: a zombie
        assert hermes_state.holder_is_dead(holder)
        assert db.try_acquire_compression_lock("s", holder_for(os.getpid())) is True
    finally:
        proc.kill()
        proc.wait()


def test_expired_lock_is_reclaimed(db: SessionDB) -> None:
    first, second = holder_for(os.getpid(), "aaaaaaaa"), holder_for(os.getpid(), "bbbbbbbb")
    assert db.try_acquire_compression_lock("s", first, ttl_seconds=-1)
    assert db.get_compression_lock_holder("s") is None  # expired
    assert db.try_acquire_compression_lock("s", second) is True
    assert db.get_compression_lock_holder("s") == second
    assert db.try_acquire_compression_lock("s", first) is False


def test_refresh_and_release_only_by_owner(db: SessionDB) -> None:
    owner, other = holder_for(os.getpid(), "aaaaaaaa"), holder_for(os.getpid(), "bbbbbbbb")
    assert db.get_compression_lock_holder("s") is None
    assert db.refresh_compression_lock("s", owner) is False  # nothing to refresh
    assert db.try_acquire_compression_lock("s", owner, ttl_seconds=-1)
    assert db.refresh_compression_lock("s", other) is False
    assert db.refresh_compression_lock("s", owner, ttl_seconds=300) is True
    assert db.get_compression_lock_holder("s") == owner  # the refresh revived the lease
    assert db.try_acquire_compression_lock("s", owner) is True  # re-acquire by owner
    assert db.try_acquire_compression_lock("s", other) is False
    assert db.release_compression_lock("s", other) is False
    assert db.get_compression_lock_holder("s") == owner
    assert db.release_compression_lock("s", owner) is True
    assert db.release_compression_lock("s", owner) is False
    assert db.try_acquire_compression_lock("s", other) is True


def test_dead_pid_holder_and_unparseable_holder(db: SessionDB) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    dead = holder_for(gone.pid)
    db.execute("INSERT INTO compression_locks VALUES ('d', ?, 0, 1e12)", (dead,))
    db.execute("INSERT INTO compression_locks VALUES ('u', 'someone-else', 0, 1e12)")
    me = holder_for(os.getpid())
    assert db.get_compression_lock_holder("d") is None
    assert db.try_acquire_compression_lock("d", me) is True
    assert db.get_compression_lock_holder("u") == "someone-else"  # unknown pid: assume alive
    assert db.try_acquire_compression_lock("u", me) is False
    assert hermes_state.holder_is_dead(f"pid={os.getpid()}") is False
    assert hermes_state.holder_is_dead("pid=1:host=some-other-machine") is False


def test_lock_fails_closed_on_database_error(db_path: Path) -> None:
    db = SessionDB(db_path)
    raw = sqlite3.connect(db_path)
    raw.execute("DROP TABLE compression_locks")
    raw.commit()
    raw.close()
    me = holder_for(os.getpid())
    assert db.try_acquire_compression_lock("s", me) is False
    assert db.refresh_compression_lock("s", me) is False
    assert db.release_compression_lock("s", me) is False
    db.close()


# --------------------------------------------------------------------------------- health


def test_integrity_check_reports_search_index_drift(db_path: Path) -> None:
    db = SessionDB(db_path)
    sid = db.create_session("s")
    db.append_messages(sid, [{"role": "user", "content": "one"}, {"role": "user", "content": "two"}])
    assert db.integrity_check() == []
    raw = sqlite3.connect(db.db_path)
    raw.execute("DROP TRIGGER messages_fts_ai")
    raw.execute("INSERT INTO messages (session_id, role, content) VALUES ('s', 'user', 'ghost')")
    raw.commit()
    raw.close()
    assert db.search_messages("ghost") == []
    problems = db.integrity_check()
    assert any("trigger messages_fts_ai is missing" in p for p in problems), problems
    assert any("search index out of sync" in p for p in problems), problems
    assert any("search index has 2 entries for 3 messages" in p for p in problems), problems
    db.rebuild_search_index()
    assert [h["role"] for h in db.search_messages("ghost")] == ["user"]
    assert db.integrity_check() == ["search index trigger messages_fts_ai is missing"]
    db.close()


def test_keys_for_session_lists_every_bound_key(db: SessionDB) -> None:
    sid = db.create_session("shared")
    db.bind_session_key("telegram:dm:1", sid)
    db.bind_session_key("api_server:session:x", sid)
    db.bind_session_key("telegram:dm:2", db.create_session("other"))
    assert db.keys_for_session(sid) == ["api_server:session:x", "telegram:dm:1"]
    assert db.keys_for_session("nobody") == []
