"""SQLite's write-ahead log is copied back into the file off the writer's commit
(``hermes_state.wal_checkpoint``), stays bounded while a writer keeps appending, and is folded
into the file when the store closes."""
from __future__ import annotations

import sqlite3
from pathlib import Path

from hermes_state import SessionDB
from hermes_state.wal_checkpoint import Checkpointer

ANSWER = {"role": "assistant", "content": "Answer: here is a detailed reply text " * 6}


def test_the_log_stays_bounded_while_one_writer_keeps_appending(tmp_path: Path) -> None:
    """Each append adds ~60 KB of log here: 1,500 of them with no checkpoint would leave ~95 MB,
    and with only the writer's fallback (a whole checkpoint each 800 commits) ~50 MB."""
    path = tmp_path / "state.db"
    with SessionDB(path) as db:
        assert db.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0  # not in commits
        for n in range(1500):
            db.append_messages(f"s{n % 50}", [ANSWER])
        Checkpointer.settle()
        wal = path.with_name("state.db-wal").stat().st_size
        assert wal < 40 * 2**20, f"the log grew to {wal:,} bytes"
        assert len(db.get_messages("s3")) == 30


def test_closing_folds_the_log_into_the_file_and_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    db = SessionDB(path)
    for n in range(300):
        db.append_messages(f"s{n % 10}", [{"role": "user", "content": f"message {n}"}])
    db.close()
    assert not path.with_name("state.db-wal").exists()  # the last connection checkpointed it
    raw = sqlite3.connect(path)
    assert raw.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 300
    assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    raw.close()
    with SessionDB(path) as again:
        assert [m["content"] for m in again.get_messages("s4")][-1] == "message 294"
        assert len(again.search_messages("294")) == 1


def test_an_in_memory_store_has_no_log_to_checkpoint() -> None:
    with SessionDB(":memory:") as db:
        for n in range(60):
            db.append_messages("s", [ANSWER])
        assert len(db.get_messages("s")) == 60


def test_a_failed_checkpoint_after_a_commit_is_not_the_commits_failure(tmp_path: Path) -> None:
    """The writer calls ``committed`` after its COMMIT: were that to raise, the caller would
    take a written row for a failed write and could write it twice."""
    gone = sqlite3.connect(tmp_path / "gone.db")
    gone.close()  # every statement on it raises sqlite3.ProgrammingError
    checkpoints = Checkpointer(str(tmp_path / "gone.db"))
    for _ in range(2000):  # past the writer's own fallback checkpoint (800 commits)
        checkpoints.committed(gone)
    checkpoints.close()
