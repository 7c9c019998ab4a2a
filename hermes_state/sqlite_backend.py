"""The SQLite dialect: one file, one connection per SessionDB, FTS5 search, a process-local lock.

The file is shared by the CLI, the gateway and cron, possibly several OS processes at once.
Hence: WAL mode, a busy timeout, and every write in a ``BEGIN IMMEDIATE`` transaction with
bounded retries. ``advisory_lock`` is a lock of this process only (a SQLite store serves one
host and, for the gateway, one worker process: ``--workers`` above 1 needs PostgreSQL).
"""
from __future__ import annotations

import os
import random
import sqlite3
import threading
import time
from concurrent.futures import Future
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Optional, TypeVar

from . import sqlite_schema
from .appends import fenced_insert
from .backend import Fence, Row, Tx
from .common import SessionDBError, clean_params, logger
from .migrations import pending, refuse_unknown
from .sqlite_schema import FTS_TRIGGERS
from .wal_checkpoint import Checkpointer

T = TypeVar("T")

BUSY_TIMEOUT_MS = 10_000
WRITE_ATTEMPTS = 5

_NAMED_LOCKS: dict[str, threading.Lock] = {}
_NAMED_LOCKS_GUARD = threading.Lock()


def is_busy(exc: BaseException) -> bool:
    msg = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in msg or "busy" in msg)


class _Tx:
    """The connection a write transaction gets: text parameters cleaned like on PostgreSQL
    (``clean_params``), so both backends store the same thing."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def execute(self, sql: str, params: Iterable[Any] = ()) -> sqlite3.Cursor:
        return self.conn.execute(sql, clean_params(params))

    def executemany(self, sql: str, seq: Iterable[Iterable[Any]]) -> sqlite3.Cursor:
        return self.conn.executemany(sql, (clean_params(p) for p in seq))

    def returning(self, sql: str, params: Iterable[Any] = ()) -> Callable[[], list[Any]]:
        cur = self.execute(sql, params)
        cur.row_factory = sqlite3.Row  # by position and by name, as ``read`` gives them
        rows = cur.fetchall()  # SQLite commits only once they are read
        return lambda: rows

    def __getattr__(self, name: str) -> Any:
        return getattr(self.conn, name)


class SQLiteBackend:
    name = "sqlite"
    errors: tuple[type[BaseException], ...] = (sqlite3.Error,)
    FOR_UPDATE = ""  # BEGIN IMMEDIATE already serialises writers
    GREATEST = "MAX"
    WRITING_WITH = False  # SQLite: a WITH clause cannot insert

    def __init__(self, db_path: str | os.PathLike[str]) -> None:
        from hermes_core.home import create_private_file, ensure_private_dir, tighten_store
        self.db_path = Path(db_path).expanduser()
        self.label = str(self.db_path)
        self._lock = threading.RLock()
        self._conn: Optional[sqlite3.Connection] = None
        self._checkpoints: Optional[Checkpointer] = None
        try:
            # private from the first byte; SQLite copies the mode to -wal/-shm
            if str(db_path) != ":memory:":
                ensure_private_dir(self.db_path.parent, tighten_existing=False)
                create_private_file(self.db_path)
                tighten_store(self.db_path)
            conn = sqlite3.connect(str(self.db_path), timeout=BUSY_TIMEOUT_MS / 1000,
                                   isolation_level=None, check_same_thread=False)
        except (OSError, sqlite3.Error) as exc:
            raise SessionDBError(f"cannot open the session store {self.db_path}: {exc}") from exc
        self._conn = conn
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA foreign_keys = ON")
            if self._set_wal() == "wal":  # the first statement that reads the file
                Checkpointer.take_over(conn)
                self._checkpoints = Checkpointer(str(self.db_path))
        except sqlite3.DatabaseError as exc:
            self.close()
            if is_busy(exc):
                raise SessionDBError(f"the session store {self.db_path} stays locked by another "
                                     f"process ({exc}); try again") from exc
            raise SessionDBError(
                f"{self.db_path} is not a usable SQLite session store ({exc}). Move it aside "
                f"(e.g. rename it to {self.db_path.name}.bad) and Hermes will create a new one, "
                "or restore it from a backup.") from exc
        conn.execute("PRAGMA synchronous = NORMAL")
        try:
            self._migrate()
        except SessionDBError:
            self.close()
            raise
        except sqlite3.Error as exc:
            self.close()
            raise SessionDBError(f"cannot upgrade the session store {self.db_path}: {exc}"
                                 ) from exc

    # -- connection plumbing -----------------------------------------------------------------

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise SessionDBError(f"the session store {self.db_path} is closed")
        return self._conn

    def _set_wal(self) -> str:
        """The journal mode now ("wal" but for ``:memory:``). Switching to WAL needs a moment of
        exclusivity; a fresh file opened by several processes at once can see "locked" here,
        so retry like any write."""
        for attempt in range(WRITE_ATTEMPTS):
            try:
                return str(self.conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]).lower()
            except sqlite3.OperationalError as exc:
                if not is_busy(exc) or attempt == WRITE_ATTEMPTS - 1:
                    raise
                time.sleep(0.05 * (attempt + 1) + random.random() * 0.05)
        raise AssertionError("unreachable")

    def _migrate(self) -> None:
        """Apply the migrations this file has not recorded, each in its own write transaction
        (another process may be migrating too: each step re-reads what is recorded). Cheap (one
        read) when up to date; a file a newer Hermes migrated is refused."""
        done = self.applied_migrations()
        refuse_unknown(done, self.label)
        if not pending(done):
            return
        done = self.write(lambda c: sqlite_schema.recorded(c, self.label))
        for name in pending(done):
            def step(c: Tx, name: str = name) -> bool:
                return sqlite_schema.apply(c, name, self.label)
            try:
                self.write(step)
            except sqlite3.Error as exc:
                raise SessionDBError(
                    f"cannot upgrade the session store {self.db_path}: migration {name!r} failed "
                    f"({exc}); the store is as it was before that migration"
                ) from exc

    def write(self, fn: Callable[[Tx], T], pipelined: bool = False) -> T:
        """Run ``fn(conn)`` in one BEGIN IMMEDIATE transaction, retrying a bounded number of times
        when another process holds the write lock past the busy timeout. (``pipelined`` matters
        only over a network: a local file has no round trips to save.)"""
        with self._lock:
            conn = self.conn
            for attempt in range(WRITE_ATTEMPTS):
                try:
                    conn.execute("BEGIN IMMEDIATE")
                    try:
                        result = fn(_Tx(conn))
                        conn.execute("COMMIT")
                        self._committed(conn)
                        return result
                    except BaseException:
                        if conn.in_transaction:
                            conn.execute("ROLLBACK")
                        raise
                except sqlite3.OperationalError as exc:
                    if not is_busy(exc) or attempt == WRITE_ATTEMPTS - 1:
                        raise
                    time.sleep(min(1.0, 0.05 * 2 ** attempt) * (0.5 + random.random()))
            raise AssertionError("unreachable")

    def _committed(self, conn: sqlite3.Connection) -> None:
        if self._checkpoints is not None:  # (wal_checkpoint: why not inside the commit)
            self._checkpoints.committed(conn)

    def append_rows(self, session_id: str, rows: list[tuple[Any, ...]],
                    usage: Optional[tuple[int, int]], fence: Optional[Fence],
                    prompt: Optional[str] = None) -> list[int]:
        return self.write(lambda c: fenced_insert(c, session_id, rows, usage, fence, prompt))()

    def read(self, sql: str, params: Iterable[Any] = ()) -> list[Row]:
        with self._lock:
            cur = self.conn.execute(sql, clean_params(params))
            cur.row_factory = sqlite3.Row
            return cur.fetchall()

    def write_one(self, sql: str, params: Iterable[Any] = ()) -> int:
        """``sql`` in a write transaction of its own (see ``StoreBackend.write_one``)."""
        return self.write(lambda c: c.execute(sql, params).rowcount)

    def submit(self, fn: Callable[[], T]) -> Future[T]:
        """``fn`` at once, its outcome as a finished future (see ``StoreBackend.submit``)."""
        done: Future[T] = Future()
        try:
            done.set_result(fn())
        except Exception as exc:  # the caller's ``result()`` raises it
            done.set_exception(exc)
        return done

    def read_with(self, fn: Callable[[Tx], T], pipelined: bool = False) -> T:
        """``fn(conn)`` outside a write transaction (several reads on one connection)."""
        with self._lock:
            return fn(_Tx(self.conn))

    def close(self) -> None:
        with self._lock:
            if self._checkpoints is not None:
                self._checkpoints.close()  # first: the writer's close is then the last one
                self._checkpoints = None
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def applied_migrations(self) -> list[str]:
        return self.read_with(sqlite_schema.applied)

    def pool_stats(self) -> dict[str, int]:
        return {}

    # -- named lock ----------------------------------------------------------------------------

    @staticmethod
    def lock_fence(name: str) -> None:
        """Nothing to fence: one process uses a SQLite store; no other can take a lock over."""
        return None

    @contextmanager
    def advisory_lock(self, name: str, wait: Optional[float]) -> Iterator[bool]:
        """A lock of this process only (not reentrant): the SQLite store has one worker."""
        with _NAMED_LOCKS_GUARD:
            lock = _NAMED_LOCKS.setdefault(name, threading.Lock())
        got = lock.acquire(timeout=-1 if wait is None else max(0.0, float(wait)))
        try:
            yield got
        finally:
            if got:
                lock.release()

    # -- full-text search (FTS5) ----------------------------------------------------------------

    def match_text(self, query: str) -> str:
        """What goes to ``MATCH``: the FTS5 query as the user wrote it."""
        return query

    def is_query_error(self, exc: BaseException) -> bool:
        """A query the FTS syntax rejects (retried quoted), not a store failure."""
        return isinstance(exc, sqlite3.OperationalError) and not is_busy(exc)

    def search_messages_sql(self, where: str) -> str:
        return ("SELECT m.session_id, m.id AS message_id, m.role,"
                " snippet(messages_fts, -1, '»', '«', '…', 12) AS snippet, m.created_at,"
                " m.active, s.title AS session_title FROM messages_fts"
                " JOIN messages AS m ON m.id = messages_fts.rowid"
                " LEFT JOIN sessions AS s ON s.id = m.session_id WHERE messages_fts MATCH ?"
                f"{where} ORDER BY rank LIMIT ?")

    def snippet(self, match: str, message_id: int) -> str:
        rows = self.read("SELECT snippet(messages_fts, 0, '»', '«', '…', 16) FROM messages_fts"
                         " WHERE messages_fts MATCH ? AND rowid = ?", (match, message_id))
        return rows[0][0] if rows else ""

    FIRST_WINDOW = 20_000  # row ids per step of a search, growing 5x per step

    @staticmethod
    def _snippets_in_scan(match: str, sort: str) -> bool:
        """A prefix term makes every extra MATCH query re-read its doclist: take snippets in the
        scan then. Otherwise a lookup per hit afterwards is cheaper than a snippet per row
        scanned."""
        return "*" in match and sort != "relevance"

    def session_hits(self, match: str, want: int, sort: str, child_filter: str,
                     relevance_pool: int,
                     filter_params: Iterable[Any] = ()) -> list[dict[str, Any]]:
        """Hits, the first per session in ``sort`` order, up to ``want`` sessions, with snippets.

        The index is read in windows of row ids from the newest (or oldest) end, each 5x the
        last, stopping once enough sessions are found: a common word costs no more than a rare one.
        """
        ranked = sort == "relevance"
        in_scan = self._snippets_in_scan(match, sort)
        extra = ("rank" if ranked else "snippet(messages_fts, 0, '»', '«', '…', 16)"
                 if in_scan else "NULL")
        where = f" AND {child_filter}" if child_filter else ""
        sql = ("SELECT m.session_id, m.id AS message_id, m.role, m.active, m.compacted, s.title,"
               f" s.source, s.started_at, s.updated_at, {extra} AS extra"
               " FROM messages_fts JOIN messages AS m ON m.id = messages_fts.rowid"
               " JOIN sessions AS s ON s.id = m.session_id"
               f" WHERE messages_fts MATCH ? AND messages_fts.rowid BETWEEN ? AND ?{where}"
               " ORDER BY messages_fts.rowid " + ("ASC" if sort == "oldest" else "DESC"))
        top = self.read("SELECT COALESCE(MAX(id), 0) FROM messages")[0][0]
        seen: set[str] = set()
        hits: list[dict] = []
        pool: list[dict] = []
        # FTS5 reads a prefix term's whole doclist whatever the rowid bounds: one pass, not
        # several
        done, step = 0, (top if "*" in match else self.FIRST_WINDOW)
        with self._lock:
            while done < top and len(hits) < want and len(pool) < relevance_pool:
                if sort == "oldest":
                    lo, hi = done + 1, done + step
                else:
                    lo, hi = top - done - step + 1, top - done
                cur = self.conn.execute(sql, clean_params((match, lo, hi, *filter_params)))
                cur.row_factory = sqlite3.Row
                for row in cur:
                    if ranked:
                        pool.append(dict(row))
                        if len(pool) >= relevance_pool:
                            break
                    elif row["session_id"] not in seen:
                        seen.add(row["session_id"])
                        hits.append(dict(row))
                        if len(hits) >= want:
                            break
                cur.close()
                done += step
                step *= 5
        for row in sorted(pool, key=lambda r: r["extra"]):  # bm25 rank: lower is better
            if row["session_id"] not in seen and len(hits) < want:
                seen.add(row["session_id"])
                hits.append(row)
        for hit in hits:
            extra = hit.pop("extra")
            hit["snippet"] = extra if in_scan else None
        return hits

    def add_snippets(self, match: str, sort: str, hits: list[dict[str, Any]]) -> None:
        """Snippets for the page's hits that the scan did not take."""
        if not self._snippets_in_scan(match, sort):
            for hit in hits:
                hit["snippet"] = self.snippet(match, hit["message_id"])

    def integrity_problems(self) -> list[str]:
        problems: list[str] = []
        for (line,) in self.read("PRAGMA integrity_check"):
            if line != "ok":
                problems.append(f"sqlite integrity: {line}")
        for row in self.read("PRAGMA foreign_key_check"):
            problems.append(f"foreign key: row {row[1]} of {row[0]} points to a missing {row[2]}")
        present = {r[0] for r in self.read("SELECT name FROM sqlite_master"
                                           " WHERE type = 'trigger'")}
        for missing in sorted(set(FTS_TRIGGERS) - present):
            problems.append(f"search index trigger {missing} is missing")
        n_msg = self.read("SELECT COUNT(*) FROM messages")[0][0]
        n_idx = self.read("SELECT COUNT(*) FROM messages_fts_docsize")[0][0]
        if n_msg != n_idx:
            problems.append(f"search index has {n_idx} entries for {n_msg} messages; "
                            "rebuild_search_index() fixes it")
        try:  # rank=1: also compare the index with the messages table
            self.write(lambda c: c.execute(
                "INSERT INTO messages_fts(messages_fts, rank) VALUES ('integrity-check', 1)"))
        except sqlite3.DatabaseError as exc:
            problems.append(f"search index out of sync with messages ({exc}); "
                            "rebuild_search_index() fixes it")
        return problems

    def rebuild_search_index(self) -> None:
        self.write(lambda c: c.execute("INSERT INTO messages_fts(messages_fts) VALUES ('rebuild')"))


def log_rejected(match: str, exc: BaseException) -> None:
    logger.debug("fts query %r rejected (%s); retrying quoted", match, exc)
