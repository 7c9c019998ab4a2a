"""The session store: every conversation, its messages, full-text search and the compression lock.

SQLite file at ``HERMES_HOME/state.db``, shared by the CLI, the gateway and cron, possibly in several
OS processes at once. Hence: WAL mode, a busy timeout, and every write in a ``BEGIN IMMEDIATE``
transaction with bounded retries. Nothing the user said is ever deleted by compaction: replaced rows
are only marked ``active=0, compacted=1`` and stay searchable (SPEC §4). Locks follow SPEC §5.
"""
from __future__ import annotations

import json
import logging
import os
import random
import re
import secrets
import socket
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, TypeVar

logger = logging.getLogger(__name__)

T = TypeVar("T")

BUSY_TIMEOUT_MS = 10_000
WRITE_ATTEMPTS = 5
PREVIEW_CHARS = 60


class SessionDBError(RuntimeError):
    """The store cannot be opened; the message names the file and what to do about it."""


class CompressionLockLost(RuntimeError):
    """A fenced compaction found the session's compression lock no longer names its holder."""


# --------------------------------------------------------------------------------------------
# Schema: an ordered list of small migrations, each applied once (PRAGMA user_version = index).

def _m1_core(c: sqlite3.Connection) -> None:
    c.execute("""CREATE TABLE IF NOT EXISTS sessions (
        id TEXT PRIMARY KEY, source TEXT, user_id TEXT, model TEXT, title TEXT,
        parent_session_id TEXT, system_prompt TEXT, started_at REAL, ended_at REAL,
        end_reason TEXT, updated_at REAL, message_count INTEGER NOT NULL DEFAULT 0,
        prompt_tokens INTEGER NOT NULL DEFAULT 0, completion_tokens INTEGER NOT NULL DEFAULT 0,
        compactions INTEGER NOT NULL DEFAULT 0)""")
    c.execute("CREATE UNIQUE INDEX IF NOT EXISTS idx_sessions_title ON sessions(title) "
              "WHERE title IS NOT NULL")
    c.execute("CREATE INDEX IF NOT EXISTS idx_sessions_updated ON sessions(updated_at)")
    # content: always readable text (what FTS indexes); content_parts: the JSON of list/dict
    # content, so it round-trips. seq: conversation order, = insertion order except when a
    # compaction (replace_active_messages) slots in before rows another writer appended meanwhile.
    c.execute("""CREATE TABLE IF NOT EXISTS messages (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        role TEXT NOT NULL, content TEXT, content_parts TEXT,
        tool_calls TEXT, tool_call_id TEXT, tool_name TEXT, created_at REAL,
        token_count INTEGER, active INTEGER NOT NULL DEFAULT 1,
        compacted INTEGER NOT NULL DEFAULT 0, seq INTEGER NOT NULL DEFAULT 0)""")
    c.execute("CREATE INDEX IF NOT EXISTS idx_messages_active "
              "ON messages(session_id, active, id)")
    c.execute("CREATE INDEX IF NOT EXISTS idx_messages_seq ON messages(session_id, seq)")
    c.execute("""CREATE TABLE IF NOT EXISTS compression_locks (
        session_id TEXT PRIMARY KEY, holder TEXT NOT NULL, acquired_at REAL, expires_at REAL)""")
    c.execute("""CREATE TABLE IF NOT EXISTS session_keys (
        key TEXT PRIMARY KEY, session_id TEXT, updated_at REAL)""")


_FTS_TRIGGERS = ("messages_fts_ai", "messages_fts_ad", "messages_fts_au")


def _m2_fts(c: sqlite3.Connection) -> None:
    # External-content FTS5 over messages (text stored once); triggers keep it in sync (a
    # 'delete' must repeat the indexed values), 'rebuild' indexes rows written before this version.
    c.execute("CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5(content, tool_name, "
              "content='messages', content_rowid='id', "
              "tokenize='porter unicode61 remove_diacritics 2')")
    ins = ("INSERT INTO messages_fts(rowid, content, tool_name) "
           "VALUES (new.id, new.content, new.tool_name);")
    dele = ("INSERT INTO messages_fts(messages_fts, rowid, content, tool_name) "
            "VALUES ('delete', old.id, old.content, old.tool_name);")
    c.execute(f"CREATE TRIGGER IF NOT EXISTS messages_fts_ai AFTER INSERT ON messages BEGIN {ins} END")
    c.execute(f"CREATE TRIGGER IF NOT EXISTS messages_fts_ad AFTER DELETE ON messages BEGIN {dele} END")
    c.execute("CREATE TRIGGER IF NOT EXISTS messages_fts_au AFTER UPDATE OF content, tool_name "
              f"ON messages BEGIN {dele} {ins} END")
    c.execute("INSERT INTO messages_fts(messages_fts) VALUES ('rebuild')")


def _m3_delegations(c: sqlite3.Connection) -> None:
    # One row per subagent of delegate_task (SPEC §13), written when the child ends. The child's
    # own session carries parent_session_id too; this row adds what only the parent knew: the
    # task's place in its batch, how it ended, and its cost. Deleting either session drops it.
    c.execute("""CREATE TABLE IF NOT EXISTS delegations (
        child_session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
        parent_session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        task_index INTEGER NOT NULL, goal TEXT, status TEXT NOT NULL, started_at REAL,
        duration REAL, api_calls INTEGER NOT NULL DEFAULT 0,
        prompt_tokens INTEGER NOT NULL DEFAULT 0, completion_tokens INTEGER NOT NULL DEFAULT 0,
        error TEXT)""")
    c.execute("CREATE INDEX IF NOT EXISTS idx_delegations_parent "
              "ON delegations(parent_session_id, started_at, task_index)")


def _m4_api_responses(c: sqlite3.Connection) -> None:
    # Responses API objects the API server keeps for GET/DELETE /v1/responses/{id} and chaining.
    c.execute("""CREATE TABLE IF NOT EXISTS api_responses (
        id TEXT PRIMARY KEY, session_id TEXT, created_at REAL, body TEXT NOT NULL)""")
    c.execute("CREATE INDEX IF NOT EXISTS idx_api_responses_session ON api_responses(session_id)")


def _m5_cron(c: sqlite3.Connection) -> None:
    # Scheduled jobs (SPEC §12). Every occurrence a scheduler fires or skips is one cron_runs row,
    # unique per (job_id, scheduled_at): the row IS the claim, so no two schedulers (processes,
    # hosts) ever run one occurrence twice. Times are UTC epoch seconds.
    c.execute("""CREATE TABLE IF NOT EXISTS cron_jobs (
        id TEXT PRIMARY KEY, name TEXT, prompt TEXT NOT NULL, schedule TEXT NOT NULL,
        timezone TEXT NOT NULL, deliver TEXT NOT NULL DEFAULT 'local', origin TEXT, skills TEXT,
        workdir TEXT, repeat INTEGER, run_count INTEGER NOT NULL DEFAULT 0,
        state TEXT NOT NULL DEFAULT 'scheduled', next_run_at REAL, created_at REAL NOT NULL,
        updated_at REAL, last_run_at REAL, last_status TEXT, last_failure TEXT)""")
    c.execute("CREATE INDEX IF NOT EXISTS idx_cron_jobs_due ON cron_jobs(state, next_run_at)")
    c.execute("CREATE INDEX IF NOT EXISTS idx_cron_jobs_name ON cron_jobs(name)")
    c.execute("""CREATE TABLE IF NOT EXISTS cron_runs (
        id INTEGER PRIMARY KEY AUTOINCREMENT, job_id TEXT NOT NULL, scheduled_at REAL NOT NULL,
        trigger TEXT NOT NULL, status TEXT NOT NULL, claimed_by TEXT, started_at REAL,
        heartbeat_at REAL, finished_at REAL, session_id TEXT, output_path TEXT, error TEXT,
        note TEXT, delivery TEXT, UNIQUE (job_id, scheduled_at))""")
    c.execute("CREATE INDEX IF NOT EXISTS idx_cron_runs_status ON cron_runs(status)")


MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [_m1_core, _m2_fts, _m3_delegations,
                                                          _m4_api_responses, _m5_cron]


# --------------------------------------------------------------------------------------------
# Small helpers


def new_session_id() -> str:
    """Sortable, readable and unique enough: ``20261130_191500_ab12cd``."""
    return time.strftime("%Y%m%d_%H%M%S") + "_" + secrets.token_hex(3)


def _is_busy(exc: BaseException) -> bool:
    msg = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in msg or "busy" in msg)


def _encode_content(content: Any) -> tuple[Optional[str], Optional[str]]:
    """(text, parts): strings as-is; lists/dicts of content parts as JSON plus their plain text."""
    if content is None or isinstance(content, str):
        return content, None
    return _content_text(content), json.dumps(content, ensure_ascii=False)


def _decode_content(text: Optional[str], parts: Optional[str]) -> Any:
    if parts is None:
        return text
    try:
        return json.loads(parts)
    except ValueError:
        logger.warning("session store: unreadable content parts; returning the message text")
        return text


def _parse_tool_calls(raw: Optional[str]) -> tuple[Any, bool]:
    """(value, ok): parsed list, or the raw text with ok=False when the column is corrupt."""
    try:
        return (None if raw is None else json.loads(raw)), True
    except ValueError:
        return raw, False


def _content_text(content: Any) -> str:
    """Plain text of a message content, for previews."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if isinstance(content, list):
        return " ".join(str(p.get("text") or "") if isinstance(p, dict) else str(p)
                        for p in content if isinstance(p, (dict, str))).strip()
    return "" if content is None else str(content)


_PID_RE = re.compile(r"(?:^|:)pid=(\d+)")
_HOST_RE = re.compile(r"(?:^|:)host=([^:]+)")


def machine_id() -> str:
    """This host's name in lock holders: ``HERMES_MACHINE_ID`` when set, else the hostname.

    Containers and hosts can share a hostname while their pids mean different processes; the
    variable lets an operator give each pid namespace its own identity. ``:`` separates holder
    fields, so it (and whitespace) becomes ``_``.
    """
    name = os.environ.get("HERMES_MACHINE_ID", "").strip() or socket.gethostname()
    return re.sub(r"[:\s]", "_", name)


def holder_is_dead(holder: str) -> bool:
    """True only when the holder's process is provably gone from this host (SPEC §5).

    Unknown pid, another host (``host=`` other than :func:`machine_id`), our own pid, or a
    permission error all count as alive: a false "dead" would let two processes compress the
    same session, a false "alive" only waits the TTL. A holder without ``host=`` is judged by
    its pid on this host.
    """
    host = _HOST_RE.search(holder or "")
    if host and host.group(1) != machine_id():
        return False
    m = _PID_RE.search(holder or "")
    if not m:
        return False
    pid = int(m.group(1))
    if pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # PermissionError: exists but belongs to someone else
        return False
    try:  # a killed but unreaped process (zombie) still answers kill(0); it holds nothing
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (OSError, IndexError):
        return False


def _fts_fallback_query(query: str) -> str:
    """Every whitespace-separated term as a quoted phrase (dangling operators dropped): the FTS5
    syntax can no longer fail."""
    terms = [t.replace('"', "") for t in query.split() if t not in ("AND", "OR", "NOT")]
    return " ".join('"' + t + '"' for t in terms if any(ch.isalnum() for ch in t))


# --------------------------------------------------------------------------------------------


class SessionDB:
    """SQLite session store shared by every Hermes surface and process.

    Sessions: ``create_session``, ``get_session``, ``list_sessions``, ``end_session``,
    ``set_session_title``, ``set_session_model``, ``set_system_prompt``, ``update_session_usage``,
    ``resolve_session``, ``delete_session``, ``prune_sessions``.
    Messages: ``append_message(s)``, ``get_messages`` (rows), ``get_active_messages`` (OpenAI
    dicts), ``get_active_history`` (the same with row ids), ``replace_active_messages``
    (compaction in place, by row id, optionally fenced by the lock), ``deactivate_messages``
    (``/undo``, by row id), ``max_message_id``, ``search_messages`` (FTS5, includes compacted rows).
    Session search (SPEC §11): ``search_sessions``, ``messages_around``, ``session_head_tail``,
    ``recent_sessions``.
    Gateway: ``bind_session_key``, ``get_session_for_key``, ``unbind_session_key``; API server
    responses: ``save_response``, ``get_response``, ``delete_response``.
    Delegation: ``record_delegation``, ``list_children``.
    Scheduled jobs (SPEC §12): ``add_cron_job``, ``get_cron_job``, ``find_cron_jobs``,
    ``list_cron_jobs``, ``update_cron_job``, ``delete_cron_job``, ``next_cron_job``; runs:
    ``claim_due_cron_runs`` (the exactly-once claim), ``claim_manual_cron_run``,
    ``finish_cron_run``, ``claim_cron_failure_notice``, ``heartbeat_cron_runs``,
    ``running_cron_runs``, ``mark_cron_runs_unknown``, ``get_cron_run``, ``list_cron_runs``.
    Compression lock (SPEC §5): ``try_acquire_compression_lock``, ``refresh_compression_lock``,
    ``release_compression_lock``, ``get_compression_lock_holder``.
    Health: ``integrity_check`` (for ``hermes doctor``), ``close`` / context manager.

    One connection per instance, guarded by an RLock, usable from several threads.
    """

    def __init__(self, db_path: Optional[str | os.PathLike[str]] = None) -> None:
        from agent.home import create_private_file, ensure_home, ensure_private_dir, tighten_store
        if db_path is None:
            db_path = ensure_home() / "state.db"
        self.db_path = Path(db_path).expanduser()
        self._lock = threading.RLock()
        self._conn: Optional[sqlite3.Connection] = None
        try:
            if str(db_path) != ":memory:":  # private from the first byte; SQLite copies the mode to -wal/-shm
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
            self._set_wal()  # the first statement that reads the file
        except sqlite3.DatabaseError as exc:
            self.close()
            if _is_busy(exc):
                raise SessionDBError(f"the session store {self.db_path} stays locked by another "
                                     f"process ({exc}); try again") from exc
            raise SessionDBError(
                f"{self.db_path} is not a usable SQLite session store ({exc}). Move it aside "
                f"(e.g. rename it to {self.db_path.name}.bad) and Hermes will create a new one, "
                "or restore it from a backup.") from exc
        conn.execute("PRAGMA synchronous = NORMAL")
        try:
            self._migrate()
        except sqlite3.Error as exc:
            self.close()
            raise SessionDBError(f"cannot upgrade the session store {self.db_path} to schema "
                                 f"version {len(MIGRATIONS)}: {exc}") from exc

    # -- connection plumbing -----------------------------------------------------------------

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise SessionDBError(f"the session store {self.db_path} is closed")
        return self._conn

    def _set_wal(self) -> None:
        # Switching to WAL needs a moment of exclusivity; a fresh file opened by several processes
        # at once can see "locked" here, so retry like any write.
        for attempt in range(WRITE_ATTEMPTS):
            try:
                self.conn.execute("PRAGMA journal_mode = WAL").fetchone()
                return
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc) or attempt == WRITE_ATTEMPTS - 1:
                    raise
                time.sleep(0.05 * (attempt + 1) + random.random() * 0.05)

    def _migrate(self) -> None:
        """Apply the migrations this file has not seen yet; cheap (one PRAGMA) when up to date."""
        if self.conn.execute("PRAGMA user_version").fetchone()[0] >= len(MIGRATIONS):
            return
        for number, migration in enumerate(MIGRATIONS, start=1):
            def step(c: sqlite3.Connection) -> None:
                # Re-read inside the write transaction: another process may have just migrated.
                if c.execute("PRAGMA user_version").fetchone()[0] < number:
                    migration(c)
                    c.execute(f"PRAGMA user_version = {number}")
            self._write(step)

    def _write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn`` in one BEGIN IMMEDIATE transaction, retrying a bounded number of times when
        another process holds the write lock past the busy timeout."""
        with self._lock:
            conn = self.conn
            for attempt in range(WRITE_ATTEMPTS):
                try:
                    conn.execute("BEGIN IMMEDIATE")
                    try:
                        result = fn(conn)
                        conn.execute("COMMIT")
                        return result
                    except BaseException:
                        if conn.in_transaction:
                            conn.execute("ROLLBACK")
                        raise
                except sqlite3.OperationalError as exc:
                    if not _is_busy(exc) or attempt == WRITE_ATTEMPTS - 1:
                        raise
                    time.sleep(min(1.0, 0.05 * 2 ** attempt) * (0.5 + random.random()))
            raise AssertionError("unreachable")

    def _read(self, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
        with self._lock:
            cur = self.conn.execute(sql, tuple(params))
            cur.row_factory = sqlite3.Row
            return cur.fetchall()

    def close(self) -> None:
        """Close the connection; safe to call twice."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> "SessionDB":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def schema_version(self) -> int:
        return self._read("PRAGMA user_version")[0][0]

    # -- sessions ----------------------------------------------------------------------------

    def create_session(self, session_id: Optional[str] = None, source: str = "cli",
                       model: Optional[str] = None, title: Optional[str] = None,
                       parent_session_id: Optional[str] = None, user_id: Optional[str] = None,
                       system_prompt: Optional[str] = None) -> str:
        """Create a session (or return an existing one untouched, so callers can be idempotent)."""
        sid = session_id or new_session_id()
        title = (title or "").strip() or None

        def tx(c: sqlite3.Connection) -> str:
            if c.execute("SELECT 1 FROM sessions WHERE id = ?", (sid,)).fetchone():
                return sid
            self._check_title_free(c, sid, title)
            now = time.time()
            c.execute("INSERT INTO sessions (id, source, user_id, model, title, parent_session_id,"
                      " system_prompt, started_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?)",
                      (sid, source, user_id, model, title, parent_session_id, system_prompt,
                       now, now))
            return sid
        return self._write(tx)

    @staticmethod
    def _check_title_free(c: sqlite3.Connection, sid: str, title: Optional[str]) -> None:
        if title is None:
            return
        row = c.execute("SELECT id FROM sessions WHERE title = ? AND id != ?", (title, sid)).fetchone()
        if row:
            raise ValueError(f"the title {title!r} is already used by session {row[0]}; "
                             "pick another title")

    def get_session(self, session_id: str) -> Optional[dict[str, Any]]:
        rows = self._read("SELECT * FROM sessions WHERE id = ?", (session_id,))
        return dict(rows[0]) if rows else None

    def list_sessions(self, limit: int = 50, offset: int = 0,
                      source: Optional[str] = None) -> list[dict[str, Any]]:
        """Most recently active first, each with message_count (all rows) and a short preview."""
        where, params = ("WHERE s.source = ?", [source]) if source else ("", [])
        rows = self._read(
            "SELECT s.*, (SELECT m.content FROM messages AS m"
            "  WHERE m.session_id = s.id AND m.role = 'user' ORDER BY m.seq, m.id LIMIT 1)"
            f" AS _first FROM sessions AS s {where}"
            " ORDER BY COALESCE(s.updated_at, s.started_at) DESC, s.id DESC LIMIT ? OFFSET ?",
            [*params, int(limit), int(offset)])
        out = []
        for row in rows:
            d = dict(row)
            text = " ".join((d.pop("_first") or "").split())
            d["preview"] = text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS - 1] + "…"
            out.append(d)
        return out

    def _update_session(self, session_id: str, sql: str, params: Iterable[Any]) -> bool:
        return self._write(lambda c: c.execute(
            f"UPDATE sessions SET {sql}, updated_at = ? WHERE id = ?",
            (*params, time.time(), session_id)).rowcount > 0)

    def count_sessions(self) -> int:
        return int(self._read("SELECT COUNT(*) FROM sessions")[0][0])

    def end_session(self, session_id: str, reason: Optional[str] = None) -> bool:
        """Mark a session finished; it stays in the store (and searchable)."""
        return self._update_session(session_id, "ended_at = ?, end_reason = ?",
                                    (time.time(), reason))

    def set_session_title(self, session_id: str, title: Optional[str]) -> bool:
        """Rename; titles are unique so they can be used to resume. Empty clears the title."""
        title = (title or "").strip() or None

        def tx(c: sqlite3.Connection) -> bool:
            self._check_title_free(c, session_id, title)
            return c.execute("UPDATE sessions SET title = ?, updated_at = ? WHERE id = ?",
                             (title, time.time(), session_id)).rowcount > 0
        return self._write(tx)

    def set_session_model(self, session_id: str, model: Optional[str]) -> bool:
        return self._update_session(session_id, "model = ?", (model,))

    def set_system_prompt(self, session_id: str, text: Optional[str]) -> bool:
        """Store the system prompt so a resumed session sends the same bytes (prompt caching)."""
        return self._update_session(session_id, "system_prompt = ?", (text,))

    def update_session_usage(self, session_id: str, prompt_tokens: int = 0,
                             completion_tokens: int = 0) -> bool:
        """Add one call's token usage to the session totals."""
        return self._update_session(
            session_id, "prompt_tokens = prompt_tokens + ?, completion_tokens = completion_tokens + ?",
            (int(prompt_tokens or 0), int(completion_tokens or 0)))

    def resolve_session(self, ref: str) -> Optional[str]:
        """What a user typed (exact id, exact title, or an unambiguous id prefix) -> session id."""
        ref = (ref or "").strip()
        if not ref:
            return None
        for sql in ("SELECT id FROM sessions WHERE id = ?", "SELECT id FROM sessions WHERE title = ?"):
            rows = self._read(sql, (ref,))
            if rows:
                return rows[0][0]
        rows = self._read("SELECT id FROM sessions WHERE substr(id, 1, ?) = ? LIMIT 2",
                          (len(ref), ref))
        return rows[0][0] if len(rows) == 1 else None

    @staticmethod
    def _delete_session_rows(c: sqlite3.Connection, session_id: str) -> bool:
        c.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))  # triggers clean FTS
        c.execute("DELETE FROM compression_locks WHERE session_id = ?", (session_id,))
        c.execute("DELETE FROM session_keys WHERE session_id = ?", (session_id,))
        c.execute("DELETE FROM api_responses WHERE session_id = ?", (session_id,))
        return c.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount > 0

    def delete_session(self, session_id: str) -> bool:
        """Remove a session with its messages, search rows, lock and gateway bindings."""
        return self._write(lambda c: self._delete_session_rows(c, session_id))

    def _prunable_ids(self, c: sqlite3.Connection, older_than_days: float, source: Optional[str],
                      keep_active_within: float) -> list[str]:
        now = time.time()
        cutoff = min(now - float(older_than_days) * 86400, now - float(keep_active_within))
        sql = ("SELECT id FROM sessions WHERE MAX(COALESCE(updated_at, 0),"
               " COALESCE(ended_at, 0), COALESCE(started_at, 0)) < ?"
               " AND id NOT IN (SELECT session_id FROM compression_locks WHERE expires_at > ?)")
        params: list[Any] = [cutoff, now]
        if source:
            sql += " AND source = ?"
            params.append(source)
        return [r[0] for r in c.execute(sql + " ORDER BY COALESCE(updated_at, started_at), id",
                                         params).fetchall()]

    def prune_candidates(self, older_than_days: float, source: Optional[str] = None,
                         keep_active_within: float = 0.0) -> list[dict[str, Any]]:
        """The sessions ``prune_sessions`` with the same arguments would delete (oldest first),
        so a user can see them before saying yes."""
        with self._lock:
            ids = self._prunable_ids(self.conn, older_than_days, source, keep_active_within)
        rows = [self.get_session(sid) for sid in ids]
        return [r for r in rows if r is not None]

    def prune_sessions(self, older_than_days: float, source: Optional[str] = None,
                       keep_active_within: float = 0.0, only: Optional[Iterable[str]] = None) -> int:
        """Delete sessions with no activity (update or end) for ``older_than_days`` (and none
        within ``keep_active_within`` seconds); with ``only``, just those of them (what the user
        was shown: a session that became active since stays).

        Sessions whose compression lock is still live are kept: someone is working on them.
        """
        allowed = None if only is None else set(only)

        def tx(c: sqlite3.Connection) -> int:
            ids = self._prunable_ids(c, older_than_days, source, keep_active_within)
            return sum(self._delete_session_rows(c, sid) for sid in ids
                       if allowed is None or sid in allowed)
        return self._write(tx)

    # -- messages ----------------------------------------------------------------------------

    @staticmethod
    def _insert_messages(c: sqlite3.Connection, session_id: str,
                         messages: list[dict[str, Any]], seq_start: Optional[int] = None
                         ) -> list[int]:
        """Insert in order inside the caller's transaction; keeps the session counters current."""
        now = time.time()
        c.execute("INSERT OR IGNORE INTO sessions (id, source, started_at, updated_at) "
                  "VALUES (?, 'unknown', ?, ?)", (session_id, now, now))
        if seq_start is None:
            seq_start = c.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM messages "
                                  "WHERE session_id = ?", (session_id,)).fetchone()[0]
        ids = []
        for offset, msg in enumerate(messages):
            if not msg.get("role"):
                raise ValueError(f"message {offset} has no role; nothing was saved")
            content, parts = _encode_content(msg.get("content"))
            tc = msg.get("tool_calls")
            if tc is not None and not isinstance(tc, str):
                tc = json.dumps(tc, ensure_ascii=False)
            cur = c.execute(
                "INSERT INTO messages (session_id, role, content, content_parts, tool_calls,"
                " tool_call_id, tool_name, created_at, token_count, seq)"
                " VALUES (?,?,?,?,?,?,?,?,?,?)",
                (session_id, msg["role"], content, parts,
                 tc, msg.get("tool_call_id"),
                 msg.get("tool_name") or msg.get("name"), now, msg.get("token_count"),
                 seq_start + offset))
            ids.append(int(cur.lastrowid))
        c.execute("UPDATE sessions SET message_count = message_count + ?, updated_at = ? "
                  "WHERE id = ?", (len(ids), now, session_id))
        return ids

    def append_message(self, session_id: str, role: str, content: Any = None,
                       tool_calls: Any = None, tool_call_id: Optional[str] = None,
                       tool_name: Optional[str] = None, token_count: Optional[int] = None) -> int:
        """Persist one message (creating the session row if needed); returns its row id."""
        msg = {"role": role, "content": content, "tool_calls": tool_calls,
               "tool_call_id": tool_call_id, "tool_name": tool_name, "token_count": token_count}
        return self._write(lambda c: self._insert_messages(c, session_id, [msg]))[0]

    def append_messages(self, session_id: str, messages: list[dict[str, Any]],
                        usage: Optional[tuple[int, int]] = None) -> list[int]:
        """Persist OpenAI-format message dicts in one transaction (all or nothing).

        ``usage`` (prompt, completion tokens) is added to the session's counters in the same
        transaction, sparing the agent a second write per turn.
        """
        if not messages:
            return []

        def tx(c: sqlite3.Connection) -> list[int]:
            ids = self._insert_messages(c, session_id, list(messages))
            if usage and any(usage):
                c.execute("UPDATE sessions SET prompt_tokens = prompt_tokens + ?, "
                          "completion_tokens = completion_tokens + ? WHERE id = ?",
                          (int(usage[0] or 0), int(usage[1] or 0), session_id))
            return ids

        return self._write(tx)

    def get_messages(self, session_id: str, include_inactive: bool = False) -> list[dict[str, Any]]:
        """Stored rows in conversation order. A corrupt tool_calls column comes back as raw text."""
        where = "" if include_inactive else " AND active = 1"
        rows = self._read(f"SELECT * FROM messages WHERE session_id = ?{where} ORDER BY seq, id",
                          (session_id,))
        out = []
        for row in rows:
            d = dict(row)
            d["content"] = _decode_content(d["content"], d.pop("content_parts"))
            d["tool_calls"], _ = _parse_tool_calls(d["tool_calls"])
            out.append(d)
        return out

    def get_active_messages(self, session_id: str) -> list[dict[str, Any]]:
        """The live history as clean OpenAI-format dicts, ready to send to a provider."""
        return self.get_active_history(session_id)[0]

    def get_active_history(self, session_id: str) -> tuple[list[dict[str, Any]], list[int]]:
        """The live history and, in parallel, each message's row id.

        An agent keeps the ids so that a compaction or ``/undo`` touches exactly the rows it read
        or wrote, never a row another process appended meanwhile.
        """
        out, ids = [], []
        for row in self._read(
                "SELECT id, role, content, content_parts, tool_calls, tool_call_id, tool_name "
                "FROM messages WHERE session_id = ? AND active = 1 ORDER BY seq, id",
                (session_id,)):
            msg: dict[str, Any] = {"role": row["role"],
                                   "content": _decode_content(row["content"], row["content_parts"])}
            tool_calls, ok = _parse_tool_calls(row["tool_calls"])
            if not ok:
                logger.warning("session %s message %s: unreadable tool_calls dropped",
                               session_id, row["id"])
            elif tool_calls:
                msg["tool_calls"] = tool_calls
            if row["tool_call_id"]:
                msg["tool_call_id"] = row["tool_call_id"]
            out.append(msg)
            ids.append(int(row["id"]))
        return out, ids

    def replace_active_messages(self, session_id: str, new_messages: list[dict[str, Any]],
                                replaced_ids: Iterable[int], *,
                                lock_holder: Optional[str] = None) -> list[int]:
        """Persist a compaction in place, in one transaction, deleting nothing.

        Exactly the rows ``replaced_ids`` (those the compacting agent read or wrote) become
        ``active=0, compacted=1``; ``new_messages`` take their place in the conversation order.
        Any other row (one another process appended meanwhile) stays as it was and comes after
        the new rows. With ``lock_holder``, the commit is fenced: unless the session's
        compression lock still names that holder, :class:`CompressionLockLost` is raised and
        nothing changes. Returns the new rows' ids.
        """
        replaced = sorted({int(i) for i in replaced_ids})

        def tx(c: sqlite3.Connection) -> list[int]:
            if lock_holder is not None:
                row = c.execute("SELECT holder FROM compression_locks WHERE session_id = ?",
                                (session_id,)).fetchone()
                if row is None or row[0] != lock_holder:
                    raise CompressionLockLost(
                        f"the compression lock of session {session_id} is no longer held by "
                        f"this process (now: {row[0] if row else 'nobody'})")
            seqs = dict(c.execute("SELECT id, seq FROM messages WHERE session_id = ?",
                                  (session_id,)).fetchall())
            mine = [i for i in replaced if i in seqs]  # ids of another session are ignored
            c.executemany("UPDATE messages SET active = 0, compacted = 1 WHERE id = ? AND active = 1",
                          [(i,) for i in mine])
            if not mine:
                ids = self._insert_messages(c, session_id, list(new_messages))
            else:
                ids = self._insert_at(c, session_id, list(new_messages), seqs, set(mine))
            c.execute("UPDATE sessions SET compactions = compactions + 1 WHERE id = ?",
                      (session_id,))
            return ids
        return self._write(tx)

    def _insert_at(self, c: sqlite3.Connection, session_id: str, messages: list[dict[str, Any]],
                   seqs: dict[int, int], replaced: set[int]) -> list[int]:
        """Renumber from the first replaced row on: the replaced rows, ``messages``, every other row.

        So the compacted rows still read in place in a full transcript, and a row another
        writer appended meanwhile follows the compaction in the live history."""
        start = min(seqs[i] for i in replaced)
        later = sorted((seq, i) for i, seq in seqs.items() if seq >= start)
        before = [i for _, i in later if i in replaced]
        after = [i for _, i in later if i not in replaced]
        c.executemany("UPDATE messages SET seq = ? WHERE id = ?",
                      [(start + n, i) for n, i in enumerate(before)])
        first_new = start + len(before)
        ids = self._insert_messages(c, session_id, messages, seq_start=first_new)
        c.executemany("UPDATE messages SET seq = ? WHERE id = ?",
                      [(first_new + len(ids) + n, i) for n, i in enumerate(after)])
        return ids

    def deactivate_messages(self, session_id: str, ids: list[int]) -> int:
        """Take rows out of the live history (``/undo``) without deleting them; returns how many."""
        if not ids:
            return 0
        return self._write(lambda c: c.executemany(
            "UPDATE messages SET active = 0 WHERE session_id = ? AND active = 1 AND id = ?",
            [(session_id, int(i)) for i in ids]).rowcount)

    def max_message_id(self, session_id: str) -> Optional[int]:
        """Highest row id of the session (a position: rows written later have higher ids)."""
        return self._read("SELECT MAX(id) FROM messages WHERE session_id = ?", (session_id,))[0][0]

    def search_messages(self, query: str, limit: int = 20, session_id: Optional[str] = None,
                        role: Optional[str] = None) -> list[dict[str, Any]]:
        """Full-text search over all messages, compacted ones included.

        FTS5 syntax (``OR``, ``"phrases"``, ``prefix*``) works when valid; anything that does not
        parse is retried with each term quoted, so user input never raises.
        """
        if not (query or "").strip():
            return []
        sql = ("SELECT m.session_id, m.id AS message_id, m.role,"
               " snippet(messages_fts, -1, '»', '«', '…', 12) AS snippet, m.created_at, m.active,"
               " s.title AS session_title FROM messages_fts"
               " JOIN messages AS m ON m.id = messages_fts.rowid"
               " LEFT JOIN sessions AS s ON s.id = m.session_id WHERE messages_fts MATCH ?")
        params: list[Any] = []
        if session_id:
            sql += " AND m.session_id = ?"
            params.append(session_id)
        if role:
            sql += " AND m.role = ?"
            params.append(role)
        sql += " ORDER BY rank LIMIT ?"
        params.append(int(limit))
        for attempt in (query, _fts_fallback_query(query)):
            if not attempt:
                return []
            try:
                return [dict(r) for r in self._read(sql, [attempt, *params])]
            except sqlite3.OperationalError as exc:
                if _is_busy(exc):
                    raise
                logger.debug("fts query %r rejected (%s); retrying quoted", attempt, exc)
        return []

    # -- session search (SPEC §11): the queries behind the session_search tool -----------------

    _CHILD = "(s.source IN ('subagent', 'cron') OR s.parent_session_id IS NOT NULL)"
    SEARCH_SORTS = ("newest", "oldest", "relevance")
    _FIRST_WINDOW = 20_000  # row ids per step of a search, growing 5x per step
    _RELEVANCE_POOL = 1_000  # matches ranked by relevance: the newest this many

    def search_sessions(self, query: str, limit: int = 3, offset: int = 0, sort: str = "newest",
                        include_children: bool = False) -> tuple[list[dict[str, Any]], bool]:
        """Sessions with a message matching ``query`` (FTS5 syntax; junk is retried quoted), one hit
        each: ``(hits, more)``. Compacted and undone rows match too (``active``/``compacted`` say
        which). Subagent and cron sessions (source, or a parent session) only with
        ``include_children``. ``relevance`` ranks the newest 1,000 matches.

        The index is read in windows of row ids from the newest (or oldest) end, each 5x the last,
        stopping once enough sessions are found: a common word costs no more than a rare one.
        A hit: session_id, title, source, started_at, updated_at, message_id, role, active,
        compacted, snippet (the match marked »like this«).
        """
        if sort not in self.SEARCH_SORTS:
            raise ValueError(f"sort must be one of {', '.join(self.SEARCH_SORTS)}, not {sort!r}")
        if not (query or "").strip():
            return [], False
        offset, limit = max(0, int(offset)), max(1, int(limit))
        for match in (query, _fts_fallback_query(query)):
            if not match:
                return [], False
            try:
                hits = self._search_windows(match, offset + limit + 1, sort, include_children)
                break
            except sqlite3.OperationalError as exc:
                if _is_busy(exc):
                    raise
                logger.debug("fts query %r rejected (%s); retrying quoted", match, exc)
        else:
            return [], False
        page = hits[offset:offset + limit]
        if not self._snippets_in_scan(match, sort):
            for hit in page:
                rows = self._read("SELECT snippet(messages_fts, 0, '»', '«', '…', 16) FROM messages_fts"
                                  " WHERE messages_fts MATCH ? AND rowid = ?", (match, hit["message_id"]))
                hit["snippet"] = rows[0][0] if rows else ""
        return page, len(hits) > offset + limit

    @staticmethod
    def _snippets_in_scan(match: str, sort: str) -> bool:
        """A prefix term makes every extra MATCH query re-read its doclist: take snippets in the scan
        then. Otherwise a lookup per hit afterwards is cheaper than a snippet per row scanned."""
        return "*" in match and sort != "relevance"

    def _search_windows(self, match: str, want: int, sort: str, include_children: bool) -> list[dict]:
        """Hits, the first per session in ``sort`` order, up to ``want`` sessions."""
        ranked = sort == "relevance"
        extra = ("rank" if ranked else "snippet(messages_fts, 0, '»', '«', '…', 16)"
                 if self._snippets_in_scan(match, sort) else "NULL")
        where = "" if include_children else f" AND NOT {self._CHILD}"
        sql = ("SELECT m.session_id, m.id AS message_id, m.role, m.active, m.compacted, s.title, s.source,"
               f" s.started_at, s.updated_at, {extra} AS extra"
               " FROM messages_fts JOIN messages AS m ON m.id = messages_fts.rowid"
               " JOIN sessions AS s ON s.id = m.session_id"
               f" WHERE messages_fts MATCH ? AND messages_fts.rowid BETWEEN ? AND ?{where}"
               " ORDER BY messages_fts.rowid " + ("ASC" if sort == "oldest" else "DESC"))
        top = self._read("SELECT COALESCE(MAX(id), 0) FROM messages")[0][0]
        seen: set[str] = set()
        hits: list[dict] = []
        pool: list[dict] = []
        # FTS5 reads a prefix term's whole doclist whatever the rowid bounds: one pass, not several
        done, step = 0, (top if "*" in match else self._FIRST_WINDOW)
        with self._lock:
            while done < top and len(hits) < want and len(pool) < self._RELEVANCE_POOL:
                if sort == "oldest":
                    lo, hi = done + 1, done + step
                else:
                    lo, hi = top - done - step + 1, top - done
                cur = self.conn.execute(sql, (match, lo, hi))  # read lazily: an early stop is cheap
                cur.row_factory = sqlite3.Row
                for row in cur:
                    if ranked:
                        pool.append(dict(row))
                        if len(pool) >= self._RELEVANCE_POOL:
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
            hit["snippet"] = None if ranked else extra
        return hits

    def _message_rows(self, where: str, params: Iterable[Any], order: str,
                      limit: int) -> list[dict[str, Any]]:
        rows = self._read("SELECT id, session_id, role, content, content_parts, tool_calls, tool_name,"
                          f" active, compacted, created_at FROM messages WHERE {where}"
                          f" ORDER BY {order} LIMIT ?", (*params, int(limit)))
        out = []
        for row in rows:
            d = dict(row)
            d["content"] = _decode_content(d["content"], d.pop("content_parts"))
            d["tool_calls"], _ = _parse_tool_calls(d["tool_calls"])
            out.append(d)
        return out

    def messages_around(self, session_id: str, message_id: int, before: int = 2,
                        after: int = 2) -> list[dict[str, Any]]:
        """The rows written just before and after ``message_id`` in its session (by row id, so a
        compacted row comes with its original neighbours), the row itself included."""
        older = self._message_rows("session_id = ? AND id < ?", (session_id, message_id), "id DESC", before)
        rest = self._message_rows("session_id = ? AND id >= ?", (session_id, message_id), "id", after + 1)
        return older[::-1] + rest

    def session_head_tail(self, session_id: str, head: int = 3,
                          tail: int = 3) -> tuple[list[dict], list[dict], int]:
        """(first rows, last rows not already in the first, total rows) of a session, every row
        counted (compacted ones too): what it was about and how it ended."""
        total = self._read("SELECT COUNT(*) FROM messages WHERE session_id = ?", (session_id,))[0][0]
        first = self._message_rows("session_id = ?", (session_id,), "id", head)
        rest = min(tail, max(0, total - len(first)))
        last = self._message_rows("session_id = ?", (session_id,), "id DESC", rest)
        return first, last[::-1], int(total)

    def recent_sessions(self, limit: int = 5, offset: int = 0,
                        include_children: bool = False) -> tuple[list[dict[str, Any]], bool]:
        """The most recently active sessions (with preview), children only when asked: (rows, more)."""
        where = "" if include_children else f"WHERE NOT {self._CHILD}"
        rows = self._read(  # the preview is looked up for the page only
            "SELECT p.*, (SELECT m.content FROM messages AS m WHERE m.session_id = p.id"
            "  AND m.role = 'user' ORDER BY m.id LIMIT 1) AS preview FROM"
            " (SELECT s.id, s.title, s.source, s.started_at, s.updated_at, s.message_count"
            f"  FROM sessions AS s {where} ORDER BY s.updated_at DESC, s.id DESC LIMIT ? OFFSET ?) AS p",
            (int(limit) + 1, int(offset)))
        return [dict(r) for r in rows[:limit]], len(rows) > limit

    # -- gateway session keys ----------------------------------------------------------------

    def bind_session_key(self, key: str, session_id: str) -> None:
        """Point a chat (e.g. ``telegram:dm:42``) at its current session."""
        self._write(lambda c: c.execute(
            "INSERT INTO session_keys (key, session_id, updated_at) VALUES (?, ?, ?) "
            "ON CONFLICT(key) DO UPDATE SET session_id = excluded.session_id, "
            "updated_at = excluded.updated_at", (key, session_id, time.time())))

    def keys_for_session(self, session_id: str) -> list[str]:
        """Every gateway key bound to this session (a reset moves them all)."""
        return [r[0] for r in self._read("SELECT key FROM session_keys WHERE session_id = ? ORDER BY key",
                                         (session_id,))]

    def get_session_for_key(self, key: str) -> Optional[str]:
        rows = self._read("SELECT session_id FROM session_keys WHERE key = ?", (key,))
        return rows[0][0] if rows else None

    def unbind_session_key(self, key: str) -> bool:
        """Forget a gateway key (its session stays)."""
        return self._write(lambda c: c.execute("DELETE FROM session_keys WHERE key = ?", (key,)).rowcount > 0)

    # -- API server responses ------------------------------------------------------------------

    def save_response(self, response_id: str, session_id: Optional[str], body: dict[str, Any]) -> None:
        """Keep a Responses API object (the session it continued, its JSON) for GET and chaining."""
        self._write(lambda c: c.execute(
            "INSERT OR REPLACE INTO api_responses (id, session_id, created_at, body) VALUES (?, ?, ?, ?)",
            (response_id, session_id, time.time(), json.dumps(body))))

    def get_response(self, response_id: str) -> Optional[dict[str, Any]]:
        """``{"id", "session_id", "created_at", "body"}`` or None."""
        rows = self._read("SELECT * FROM api_responses WHERE id = ?", (response_id,))
        if not rows:
            return None
        d = dict(rows[0])
        try:
            d["body"] = json.loads(d["body"])
        except ValueError:
            d["body"] = None
        return d

    def delete_response(self, response_id: str) -> bool:
        return self._write(lambda c: c.execute("DELETE FROM api_responses WHERE id = ?",
                                               (response_id,)).rowcount > 0)

    # -- delegation (SPEC §13) ---------------------------------------------------------------

    def record_delegation(self, parent_session_id: str, child_session_id: str, task_index: int,
                          goal: str, status: str, *, started_at: float, duration: float,
                          api_calls: int = 0, prompt_tokens: int = 0, completion_tokens: int = 0,
                          error: Optional[str] = None) -> None:
        """Record how one subagent ended (both sessions must exist; a second call overwrites)."""
        self._write(lambda c: c.execute(
            "INSERT OR REPLACE INTO delegations (child_session_id, parent_session_id, task_index,"
            " goal, status, started_at, duration, api_calls, prompt_tokens, completion_tokens, error)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (child_session_id, parent_session_id, int(task_index), goal, status, started_at,
             duration, int(api_calls), int(prompt_tokens), int(completion_tokens), error)))

    def list_children(self, parent_session_id: str) -> list[dict[str, Any]]:
        """The sessions whose parent is ``parent_session_id``, oldest batch first, in task order.

        Each row: ``session_id``, ``source``, ``model``, ``started_at``, ``ended_at``, and from the
        delegation record (None when there is none, e.g. the parent died mid-batch): ``task_index``,
        ``goal``, ``status``, ``duration``, ``api_calls``, ``error``; tokens come from the record when
        there is one, else from the child session's totals.
        """
        rows = self._read(
            "SELECT s.id AS session_id, s.source, s.model, s.started_at, s.ended_at,"
            " d.task_index, d.goal, d.status, d.duration, d.api_calls, d.error,"
            " COALESCE(d.prompt_tokens, s.prompt_tokens) AS prompt_tokens,"
            " COALESCE(d.completion_tokens, s.completion_tokens) AS completion_tokens"
            " FROM sessions AS s LEFT JOIN delegations AS d ON d.child_session_id = s.id"
            " WHERE s.parent_session_id = ?"
            " ORDER BY COALESCE(d.started_at, s.started_at), d.task_index, s.id",
            (parent_session_id,))
        return [dict(r) for r in rows]

    # -- compression lock (SPEC §5) ----------------------------------------------------------

    def try_acquire_compression_lock(self, session_id: str, holder: str,
                                     ttl_seconds: float = 300) -> bool:
        """Take the session's compression lock, reclaiming an expired or dead holder's row first.

        One write transaction, so two processes can never both succeed. Re-acquiring by the
        same holder refreshes the lease. Any database error returns False (fail closed).
        """
        def tx(c: sqlite3.Connection) -> bool:
            now = time.time()
            row = c.execute("SELECT holder, expires_at FROM compression_locks "
                            "WHERE session_id = ?", (session_id,)).fetchone()
            if row and row[0] != holder and (
                    (row[1] is not None and row[1] <= now) or holder_is_dead(row[0])):
                c.execute("DELETE FROM compression_locks WHERE session_id = ?", (session_id,))
                row = None
            if row is None:
                c.execute("INSERT INTO compression_locks (session_id, holder, acquired_at,"
                          " expires_at) VALUES (?, ?, ?, ?)",
                          (session_id, holder, now, now + ttl_seconds))
                return True
            if row[0] == holder:
                c.execute("UPDATE compression_locks SET expires_at = ? WHERE session_id = ?",
                          (now + ttl_seconds, session_id))
                return True
            return False
        return self._lock_write(tx, "acquire", session_id)

    def _lock_write(self, fn: Callable[[sqlite3.Connection], bool], what: str,
                    session_id: str) -> bool:
        """Lock operations fail closed: a database error means "not yours"."""
        try:
            return self._write(fn)
        except (sqlite3.Error, SessionDBError) as exc:
            logger.warning("compression lock %s for %s failed: %s", what, session_id, exc)
            return False

    def refresh_compression_lock(self, session_id: str, holder: str,
                                 ttl_seconds: float = 300) -> bool:
        """Extend our own lease while a long summary runs; False if it is no longer ours."""
        return self._lock_write(lambda c: c.execute(
            "UPDATE compression_locks SET expires_at = ? WHERE session_id = ? AND holder = ?",
            (time.time() + ttl_seconds, session_id, holder)).rowcount > 0, "refresh", session_id)

    def release_compression_lock(self, session_id: str, holder: str) -> bool:
        """Delete the lock only if this holder owns it (never someone else's)."""
        return self._lock_write(lambda c: c.execute(
            "DELETE FROM compression_locks WHERE session_id = ? AND holder = ?",
            (session_id, holder)).rowcount > 0, "release", session_id)

    def get_compression_lock_holder(self, session_id: str) -> Optional[str]:
        """The live holder, or None when unlocked, expired, or held by a dead process."""
        rows = self._read("SELECT holder, expires_at FROM compression_locks WHERE session_id = ?",
                          (session_id,))
        if not rows:
            return None
        holder, expires_at = rows[0]
        if (expires_at is not None and expires_at <= time.time()) or holder_is_dead(holder):
            return None
        return holder

    # -- scheduled jobs (SPEC §12) -----------------------------------------------------------
    # Plain SQL on purpose (the PostgreSQL backend ports it as is). Schedule arithmetic lives in
    # ``cron.schedule``: ``claim_due_cron_runs`` is handed a ``plan`` function and only makes
    # its result atomic. Run statuses: running, ok, silent, failed, timeout, interrupted,
    # missed, unknown (the claimer died; never re-fired).

    CRON_JOB_COLUMNS = ("name", "prompt", "schedule", "timezone", "deliver", "origin", "skills",
                        "workdir", "repeat", "run_count", "state", "next_run_at", "last_run_at",
                        "last_status", "last_failure")
    _CRON_JSON = ("origin", "skills")

    @classmethod
    def _cron_row(cls, row: Optional[sqlite3.Row]) -> Optional[dict[str, Any]]:
        if row is None:
            return None
        d = dict(row)
        for key in cls._CRON_JSON:
            if key in d:
                try:
                    d[key] = json.loads(d[key]) if d[key] else None
                except ValueError:
                    logger.warning("cron job %s: unreadable %s column ignored", d.get("id"), key)
                    d[key] = None
        return d

    @classmethod
    def _cron_values(cls, fields: dict[str, Any]) -> dict[str, Any]:
        unknown = set(fields) - set(cls.CRON_JOB_COLUMNS) - {"id", "created_at"}
        if unknown:
            raise ValueError(f"unknown cron job field(s): {', '.join(sorted(unknown))}")
        return {k: (json.dumps(v) if k in cls._CRON_JSON and v is not None else v)
                for k, v in fields.items()}

    def add_cron_job(self, job: dict[str, Any]) -> dict[str, Any]:
        """Insert a job (``id``, ``prompt``, ``schedule``, ``timezone`` and ``next_run_at`` at
        least); ``origin`` and ``skills`` are JSON-encoded here. Returns the stored row."""
        values = self._cron_values(dict(job, created_at=job.get("created_at") or time.time()))
        cols = ", ".join(values)

        def tx(c: sqlite3.Connection) -> None:
            c.execute(f"INSERT INTO cron_jobs ({cols}, updated_at) "
                      f"VALUES ({', '.join('?' * len(values))}, ?)",
                      (*values.values(), values["created_at"]))
        self._write(tx)
        return self.get_cron_job(job["id"]) or {}

    def get_cron_job(self, job_id: str) -> Optional[dict[str, Any]]:
        rows = self._read("SELECT * FROM cron_jobs WHERE id = ?", (job_id,))
        return self._cron_row(rows[0]) if rows else None

    def find_cron_jobs(self, name: str) -> list[dict[str, Any]]:
        """Jobs whose name is ``name`` (case-insensitive); names are not unique."""
        rows = self._read("SELECT * FROM cron_jobs WHERE lower(name) = lower(?) ORDER BY created_at",
                          (name,))
        return [self._cron_row(r) for r in rows]  # type: ignore[misc]

    def list_cron_jobs(self) -> list[dict[str, Any]]:
        """Every job, oldest first."""
        return [self._cron_row(r) for r in  # type: ignore[misc]
                self._read("SELECT * FROM cron_jobs ORDER BY created_at, id")]

    def update_cron_job(self, job_id: str, **fields: Any) -> Optional[dict[str, Any]]:
        """Set the given columns (see ``CRON_JOB_COLUMNS``); None when the job does not exist."""
        values = self._cron_values(fields)
        if values:
            sets = ", ".join(f"{k} = ?" for k in values)
            changed = self._write(lambda c: c.execute(
                f"UPDATE cron_jobs SET {sets}, updated_at = ? WHERE id = ?",
                (*values.values(), time.time(), job_id)).rowcount)
            if not changed:
                return None
        return self.get_cron_job(job_id)

    def delete_cron_job(self, job_id: str) -> bool:
        """Remove a job and its run history (output files stay on disk)."""
        def tx(c: sqlite3.Connection) -> bool:
            c.execute("DELETE FROM cron_runs WHERE job_id = ?", (job_id,))
            return c.execute("DELETE FROM cron_jobs WHERE id = ?", (job_id,)).rowcount > 0
        return self._write(tx)

    def next_cron_job(self) -> Optional[dict[str, Any]]:
        """The scheduled job that comes due first."""
        rows = self._read("SELECT * FROM cron_jobs WHERE state = 'scheduled' AND next_run_at IS NOT NULL"
                          " ORDER BY next_run_at LIMIT 1")
        return self._cron_row(rows[0]) if rows else None

    def claim_due_cron_runs(self, now: float, holder: str,
                            plan: Callable[[dict[str, Any], float], dict[str, Any]],
                            limit: int = 1000) -> list[dict[str, Any]]:
        """Claim every due occurrence for ``holder``, in one transaction; returns the claimed runs
        (the job's columns plus ``run_id``, ``scheduled_at``, ``session_id``, ``trigger``).

        ``plan(job, now)`` -> ``{fire_at, missed: [...], note, next_run_at}`` or ``{error}``. The
        claim is the INSERT of the (job_id, scheduled_at) row: a conflict means someone else ran
        that occurrence. Missed occurrences get ``missed`` rows; the job's next run, run count and
        state (``completed`` after a one-shot or ``repeat`` runs) move in the same transaction.
        """
        def tx(c: sqlite3.Connection) -> list[dict[str, Any]]:
            cur = c.execute("SELECT * FROM cron_jobs WHERE state = 'scheduled' AND "
                            "next_run_at <= ? ORDER BY next_run_at LIMIT ?", (now, int(limit)))
            cur.row_factory = sqlite3.Row
            jobs = cur.fetchall()
            return [run for row in jobs
                    if (run := self._claim_one(c, self._cron_row(row) or {}, now, holder, plan))]
        return self._write(tx)

    @staticmethod
    def _claim_one(c: sqlite3.Connection, job: dict[str, Any], now: float, holder: str,
                   plan: Callable[[dict[str, Any], float], dict[str, Any]]) -> Optional[dict[str, Any]]:
        due = plan(job, now)
        ins = ("INSERT INTO cron_runs (job_id, scheduled_at, trigger, status, claimed_by, started_at,"
               " heartbeat_at, finished_at, session_id, error, note) VALUES (?,?,?,?,?,?,?,?,?,?,?)"
               " ON CONFLICT (job_id, scheduled_at) DO NOTHING")
        if due.get("error"):  # the job cannot be planned (e.g. a corrupt schedule): park it, say why
            c.execute(ins, (job["id"], job["next_run_at"], "schedule", "failed", holder, now, None,
                            now, None, due["error"], None))
            c.execute("UPDATE cron_jobs SET state = 'paused', last_status = 'failed', updated_at = ?"
                      " WHERE id = ?", (now, job["id"]))
            return None
        for missed in due.get("missed") or ():
            c.execute(ins, (job["id"], missed, "schedule", "missed", None, None, None, now, None,
                            None, "no scheduler was running at this time"))
        sid = new_session_id()
        cur = c.execute(ins, (job["id"], due["fire_at"], "schedule", "running", holder, now, now,
                              None, sid, None, due.get("note")))
        won = cur.rowcount == 1
        count = int(job.get("run_count") or 0) + won
        nxt = due.get("next_run_at")
        done = nxt is None or (job.get("repeat") is not None and count >= int(job["repeat"]))
        c.execute("UPDATE cron_jobs SET next_run_at = ?, state = ?, run_count = ?, updated_at = ?"
                  " WHERE id = ? AND state = 'scheduled' AND next_run_at = ?",
                  (None if done else nxt, "completed" if done else "scheduled", count, now,
                   job["id"], job["next_run_at"]))
        if not won:
            return None
        return dict(job, run_id=int(cur.lastrowid), scheduled_at=due["fire_at"], session_id=sid,
                    trigger="schedule", run_count=count)

    def claim_manual_cron_run(self, job_id: str, now: float, holder: str) -> Optional[dict[str, Any]]:
        """A run requested by hand (``run``), keyed at ``now``; it neither moves the schedule nor
        counts toward ``repeat``. None when the job does not exist."""
        def tx(c: sqlite3.Connection) -> Optional[dict[str, Any]]:
            cur = c.execute("SELECT * FROM cron_jobs WHERE id = ?", (job_id,))
            cur.row_factory = sqlite3.Row
            row = cur.fetchone()
            if row is None:
                return None
            sid, at = new_session_id(), float(now)
            while c.execute("SELECT 1 FROM cron_runs WHERE job_id = ? AND scheduled_at = ?",
                            (job_id, at)).fetchone():
                at += 0.001
            cur = c.execute("INSERT INTO cron_runs (job_id, scheduled_at, trigger, status, claimed_by,"
                            " started_at, heartbeat_at, session_id) VALUES (?,?,?,?,?,?,?,?)",
                            (job_id, at, "manual", "running", holder, now, now, sid))
            return dict(self._cron_row(row) or {}, run_id=int(cur.lastrowid), scheduled_at=at,
                        session_id=sid, trigger="manual")
        return self._write(tx)

    def finish_cron_run(self, run_id: int, status: str, *, error: Optional[str] = None,
                        output_path: Optional[str] = None, delivery: Optional[str] = None,
                        now: Optional[float] = None) -> bool:
        """Record a run's outcome and the job's last status. A run already marked ``unknown`` (its
        claimer looked dead) still gets its real outcome. A success clears the failure notice."""
        now = time.time() if now is None else now

        def tx(c: sqlite3.Connection) -> bool:
            row = c.execute("SELECT job_id FROM cron_runs WHERE id = ? AND status IN "
                            "('running', 'unknown')", (run_id,)).fetchone()
            if row is None:
                return False
            c.execute("UPDATE cron_runs SET status = ?, finished_at = ?, error = ?, output_path = ?,"
                      " delivery = ? WHERE id = ?", (status, now, error, output_path, delivery, run_id))
            clear = ", last_failure = NULL" if status in ("ok", "silent") else ""
            c.execute(f"UPDATE cron_jobs SET last_status = ?, last_run_at = ?{clear} WHERE id = ?",
                      (status, now, row[0]))
            return True
        return self._write(tx)

    def claim_cron_failure_notice(self, job_id: str, error: str) -> bool:
        """True once per distinct failure text in a row (atomic across processes): only then is
        the failure sent to the job's targets."""
        return self._write(lambda c: c.execute(
            "UPDATE cron_jobs SET last_failure = ? WHERE id = ? AND "
            "(last_failure IS NULL OR last_failure <> ?)", (error, job_id, error)).rowcount > 0)

    def heartbeat_cron_runs(self, holder: str, now: Optional[float] = None) -> int:
        """Refresh ``heartbeat_at`` of the holder's running runs (how other hosts tell it lives)."""
        return self._write(lambda c: c.execute(
            "UPDATE cron_runs SET heartbeat_at = ? WHERE claimed_by = ? AND status = 'running'",
            (time.time() if now is None else now, holder)).rowcount)

    def running_cron_runs(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self._read("SELECT * FROM cron_runs WHERE status = 'running'")]

    def mark_cron_runs_unknown(self, run_ids: list[int], note: str) -> int:
        """Runs whose claimer died: ``unknown``, finished, never re-fired (the row keeps the key)."""
        if not run_ids:
            return 0
        marks = ",".join("?" * len(run_ids))
        return self._write(lambda c: c.execute(
            f"UPDATE cron_runs SET status = 'unknown', finished_at = ?, note = ? "
            f"WHERE status = 'running' AND id IN ({marks})", (time.time(), note, *run_ids)).rowcount)

    def get_cron_run(self, run_id: int) -> Optional[dict[str, Any]]:
        rows = self._read("SELECT * FROM cron_runs WHERE id = ?", (run_id,))
        return dict(rows[0]) if rows else None

    def list_cron_runs(self, job_id: Optional[str] = None, limit: int = 20) -> list[dict[str, Any]]:
        """Newest occurrence first."""
        where, params = ("WHERE job_id = ?", [job_id]) if job_id else ("", [])
        return [dict(r) for r in self._read(
            f"SELECT * FROM cron_runs {where} ORDER BY scheduled_at DESC, id DESC LIMIT ?",
            [*params, int(limit)])]

    # -- health ------------------------------------------------------------------------------

    def integrity_check(self) -> list[str]:
        """Problems found in the file (empty list = healthy). Slow on big stores: doctor only."""
        problems: list[str] = []
        try:
            for (line,) in self._read("PRAGMA integrity_check"):
                if line != "ok":
                    problems.append(f"sqlite integrity: {line}")
            for row in self._read("PRAGMA foreign_key_check"):
                problems.append(f"foreign key: row {row[1]} of {row[0]} points to a missing "
                                f"{row[2]}")
            version = self.schema_version()
            if version != len(MIGRATIONS):
                problems.append(f"schema version {version}, this Hermes expects {len(MIGRATIONS)}")
            present = {r[0] for r in self._read("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
            for missing in sorted(set(_FTS_TRIGGERS) - present):
                problems.append(f"search index trigger {missing} is missing")
            n_msg = self._read("SELECT COUNT(*) FROM messages")[0][0]
            n_idx = self._read("SELECT COUNT(*) FROM messages_fts_docsize")[0][0]
            if n_msg != n_idx:
                problems.append(f"search index has {n_idx} entries for {n_msg} messages; "
                                "rebuild_search_index() fixes it")
            try:  # rank=1: also compare the index with the messages table
                self._write(lambda c: c.execute(
                    "INSERT INTO messages_fts(messages_fts, rank) VALUES ('integrity-check', 1)"))
            except sqlite3.DatabaseError as exc:
                problems.append(f"search index out of sync with messages ({exc}); "
                                "rebuild_search_index() fixes it")
        except sqlite3.DatabaseError as exc:
            problems.append(f"database error: {exc}")
        return problems

    def rebuild_search_index(self) -> None:
        """Re-index every message from scratch (the fix for an out-of-sync search index)."""
        self._write(lambda c: c.execute("INSERT INTO messages_fts(messages_fts) VALUES ('rebuild')"))


__all__ = ["SessionDB", "SessionDBError", "CompressionLockLost", "MIGRATIONS", "holder_is_dead",
           "machine_id", "new_session_id"]
