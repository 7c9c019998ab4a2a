"""SQLite schema: one small function per migration name (``migrations.NAMES``), each applied
once, in its own transaction, and recorded in ``schema_migrations``. Add a name and its function
to change the schema; never edit an old one. ``postgres_schema`` has the same names."""
from __future__ import annotations

import sqlite3
import time
from typing import Callable

from .backend import Tx
from .migrations import check_steps, from_user_version, in_order, prefix_count, refuse_unknown


def _m1_core(c: Tx) -> None:
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


FTS_TRIGGERS = ("messages_fts_ai", "messages_fts_ad", "messages_fts_au")


def _m2_fts(c: Tx, options: str = "") -> None:
    # External-content FTS5 over messages (text stored once); triggers keep it in sync (a
    # 'delete' must repeat the indexed values), 'rebuild' indexes rows written before this version.
    c.execute("CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5(content, tool_name, "
              "content='messages', content_rowid='id', "
              f"tokenize='porter unicode61 remove_diacritics 2'{options})")
    ins = ("INSERT INTO messages_fts(rowid, content, tool_name) "
           "VALUES (new.id, new.content, new.tool_name);")
    dele = ("INSERT INTO messages_fts(messages_fts, rowid, content, tool_name) "
            "VALUES ('delete', old.id, old.content, old.tool_name);")
    c.execute("CREATE TRIGGER IF NOT EXISTS messages_fts_ai AFTER INSERT ON messages"
              f" BEGIN {ins} END")
    c.execute("CREATE TRIGGER IF NOT EXISTS messages_fts_ad AFTER DELETE ON messages"
              f" BEGIN {dele} END")
    c.execute("CREATE TRIGGER IF NOT EXISTS messages_fts_au AFTER UPDATE OF content, tool_name "
              f"ON messages BEGIN {dele} {ins} END")
    c.execute("INSERT INTO messages_fts(messages_fts) VALUES ('rebuild')")


def _m3_delegations(c: Tx) -> None:
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


def _m4_api_responses(c: Tx) -> None:
    # Responses API objects the API server keeps for GET/DELETE /v1/responses/{id} and chaining.
    c.execute("""CREATE TABLE IF NOT EXISTS api_responses (
        id TEXT PRIMARY KEY, session_id TEXT, created_at REAL, body TEXT NOT NULL)""")
    c.execute("CREATE INDEX IF NOT EXISTS idx_api_responses_session ON api_responses(session_id)")


def _m5_cron(c: Tx) -> None:
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


def _m6_pairing(c: Tx) -> None:
    # Chat pairing (gateway/access.py): per platform, the pending codes, approved users and
    # per-user request history, each one JSON document read and written in one transaction.
    c.execute("""CREATE TABLE IF NOT EXISTS pairing_state (
        platform TEXT NOT NULL, kind TEXT NOT NULL, data TEXT NOT NULL, updated_at REAL,
        PRIMARY KEY (platform, kind))""")


# Sources that name a chat platform: their sessions belong to the chat user who made them.
NOT_CHAT_SOURCES = "('cli', 'api_server', 'cron', 'subagent', 'unknown', 'skill_review')"


def _m7_owners(c: Tx) -> None:
    # Who a session or a job belongs to (issue 20): NULL is the local owner (the CLI, an API key
    # holder), who sees everything; a chat user is "<platform>:<user id>" and sees only theirs.
    # Existing chat sessions get theirs from source + user_id. A job also keeps its creator's
    # policy (toolsets, confinement, consent rule) as JSON; NULL: the owner's own settings.
    c.execute("ALTER TABLE sessions ADD COLUMN owner TEXT")
    c.execute("UPDATE sessions SET owner = source || ':' || user_id WHERE user_id IS NOT NULL"
              f" AND source IS NOT NULL AND source NOT IN {NOT_CHAT_SOURCES}")
    c.execute("CREATE INDEX IF NOT EXISTS idx_sessions_owner ON sessions(owner, updated_at)")
    c.execute("ALTER TABLE cron_jobs ADD COLUMN owner TEXT")
    c.execute("ALTER TABLE cron_jobs ADD COLUMN policy TEXT")


# The highest ``seq`` of a session's rows, kept in its row (see ``appends``): an append reads its
# next position from the row it locks instead of from the messages table.
SEQ_COUNTER = ("UPDATE sessions SET last_seq = COALESCE((SELECT MAX(seq) FROM messages"
               " WHERE messages.session_id = sessions.id), 0)")


def _m8_seq_counter(c: Tx) -> None:
    c.execute("ALTER TABLE sessions ADD COLUMN last_seq INTEGER NOT NULL DEFAULT 0")
    c.execute(SEQ_COUNTER)


def _m9_fts_prefix(c: Tx) -> None:
    # The search index again, with prefix indexes of 2 and 3 characters: a query like ``an*``
    # used to merge the doclists of every word starting so (seconds over a million messages);
    # now it reads one doclist. Rebuilt from the messages table, which holds every indexed value.
    for trigger in FTS_TRIGGERS:
        c.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    c.execute("DROP TABLE IF EXISTS messages_fts")
    _m2_fts(c, ", prefix='2 3'")


Step = Callable[[Tx], None]
STEPS: dict[str, Step] = {"core": _m1_core, "fts": _m2_fts, "delegations": _m3_delegations,
                          "api_responses": _m4_api_responses, "cron": _m5_cron,
                          "pairing": _m6_pairing, "owners": _m7_owners,
                          "seq_counter": _m8_seq_counter, "fts_prefix": _m9_fts_prefix}
check_steps("sqlite", STEPS)

# applied_at NULL: recorded from the old user_version, when it was applied is not known
_TABLE = ("CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY,"
          " applied_at REAL)")


def applied(c: Tx) -> list[str]:
    """The names recorded in this file (none before ``schema_migrations`` exists). One
    statement: it runs on every open."""
    try:
        rows = c.execute("SELECT name FROM schema_migrations").fetchall()
    except sqlite3.OperationalError as exc:
        if "no such table" not in str(exc):
            raise
        return []
    return in_order(r[0] for r in rows)


def recorded(c: Tx, label: str) -> list[str]:
    """In a write transaction: every name this file has applied. Creates ``schema_migrations``
    and records the names the old ``user_version`` stands for that are missing (a file from
    before the names, or one a Hermes from before them migrated since). A name this Hermes does
    not know raises ``SessionDBError``."""
    done = applied(c)
    refuse_unknown(done, label)
    c.execute(_TABLE)
    legacy = from_user_version(int(c.execute("PRAGMA user_version").fetchone()[0]), label)
    missing = [n for n in legacy if n not in done]
    c.executemany("INSERT INTO schema_migrations (name, applied_at) VALUES (?, NULL)",
                  [(n,) for n in missing])
    return in_order([*done, *missing])


def apply(c: Tx, name: str, label: str) -> bool:
    """In a write transaction: apply ``name`` unless recorded (another process may just have);
    ``user_version`` follows, for a Hermes from before the names. True when it ran here."""
    done = recorded(c, label)
    if name in done:
        return False
    STEPS[name](c)
    c.execute("INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)",
              (name, time.time()))
    c.execute(f"PRAGMA user_version = {prefix_count([*done, name])}")
    return True
