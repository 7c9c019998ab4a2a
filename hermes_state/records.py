"""Small records: gateway session keys, API server responses, delegation records."""
from __future__ import annotations

import json
import time
from typing import Any, Optional

from .backend import Tx, UsesBackend
from .common import new_session_id
from .sessions import INSERT_SESSION

BIND_KEY = ("INSERT INTO session_keys (key, session_id, updated_at) VALUES (?, ?, ?)"
            " ON CONFLICT(key) DO UPDATE SET session_id = excluded.session_id,"
            " updated_at = excluded.updated_at")


# PostgreSQL: the new session row and its key binding in one statement (a data-modifying WITH;
# both inserts commit together, or neither does)
PG_SESSION_FOR_KEY = f"WITH s AS ({INSERT_SESSION}) {BIND_KEY}"


class RecordsMixin(UsesBackend):
    """Gateway session keys, API server responses, delegation records."""

    # -- gateway session keys ----------------------------------------------------------------

    def bind_session_key(self, key: str, session_id: str) -> None:
        """Point a chat (e.g. ``telegram:dm:42``) at its current session."""
        self._write_one(BIND_KEY, (key, session_id, time.time()))

    def create_session_for_key(self, key: str, session_id: Optional[str] = None,
                               source: str = "cli", user_id: Optional[str] = None,
                               parent_session_id: Optional[str] = None,
                               owner: Optional[str] = None) -> str:
        """``create_session`` then ``bind_session_key`` in one transaction: a gateway's new chat
        costs one commit (SQLite) and one statement (PostgreSQL) where it cost two."""
        sid = session_id or new_session_id()
        now = time.time()
        row = (sid, source, user_id, None, None, parent_session_id, None, now, now, owner)
        if self._b.WRITING_WITH:  # PostgreSQL: one statement, no BEGIN/COMMIT
            self._write_one(PG_SESSION_FOR_KEY, (*row, key, sid, now))
            return sid

        def tx(c: Tx) -> str:
            c.execute(INSERT_SESSION, row)
            c.execute(BIND_KEY, (key, sid, now))
            return sid
        return self._write(tx, pipelined=True)

    def keys_for_session(self, session_id: str) -> list[str]:
        """Every gateway key bound to this session (a reset moves them all)."""
        return [r[0] for r in self._read("SELECT key FROM session_keys WHERE session_id = ?"
                                         " ORDER BY key", (session_id,))]

    def get_session_for_key(self, key: str) -> Optional[str]:
        rows = self._read("SELECT session_id FROM session_keys WHERE key = ?", (key,))
        return rows[0][0] if rows else None

    def live_session_for_key(self, key: str) -> Optional[str]:
        """The session ``key`` is bound to, if that session still exists: one read where
        ``get_session_for_key`` then ``get_session`` were two."""
        rows = self._read("SELECT k.session_id FROM session_keys AS k JOIN sessions AS s"
                          " ON s.id = k.session_id WHERE k.key = ?", (key,))
        return rows[0][0] if rows else None

    def key_and_session(self, key: str, session_id: str) -> tuple[Optional[str], bool]:
        """The session ``key`` is bound to (None: unbound), and whether session ``session_id``
        exists: what adopting a session the client names asks, in one round trip."""
        row = self._read("SELECT (SELECT session_id FROM session_keys WHERE key = ?),"
                         " EXISTS (SELECT 1 FROM sessions WHERE id = ?)", (key, session_id))[0]
        return row[0], bool(row[1])

    def key_position(self, key: str, session_id: str) -> tuple[Optional[str], int]:
        """The session ``key`` is bound to now, and ``session_id``'s highest row id (0: none):
        what a gateway worker that just took a session's lease checks, in one round trip."""
        row = self._read("SELECT (SELECT session_id FROM session_keys WHERE key = ?),"
                         " (SELECT MAX(id) FROM messages WHERE session_id = ?)",
                         (key, session_id))[0]
        return row[0], int(row[1] or 0)

    def unbind_session_key(self, key: str) -> bool:
        """Forget a gateway key (its session stays)."""
        return self._write_one("DELETE FROM session_keys WHERE key = ?", (key,)) > 0

    # -- API server responses ------------------------------------------------------------------

    def save_response(self, response_id: str, session_id: Optional[str],
                      body: dict[str, Any]) -> None:
        """Keep a Responses API object (the session it continued, its JSON) for GET and chaining."""
        self._write_one(
            "INSERT INTO api_responses (id, session_id, created_at, body) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (id) DO UPDATE SET session_id = excluded.session_id,"
            " created_at = excluded.created_at, body = excluded.body",
            (response_id, session_id, time.time(), json.dumps(body)))

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
        return self._write_one("DELETE FROM api_responses WHERE id = ?", (response_id,)) > 0

    # -- delegation (SPEC §13) ---------------------------------------------------------------

    def record_delegation(self, parent_session_id: str, child_session_id: str, task_index: int,
                          goal: str, status: str, *, started_at: float, duration: float,
                          api_calls: int = 0, prompt_tokens: int = 0, completion_tokens: int = 0,
                          error: Optional[str] = None) -> None:
        """Record how one subagent ended (both sessions must exist; a second call overwrites)."""
        self._write(lambda c: c.execute(
            "INSERT INTO delegations (child_session_id, parent_session_id, task_index,"
            " goal, status, started_at, duration, api_calls, prompt_tokens, completion_tokens,"
            " error)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT (child_session_id) DO UPDATE SET"
            " parent_session_id = excluded.parent_session_id, task_index = excluded.task_index,"
            " goal = excluded.goal, status = excluded.status, started_at = excluded.started_at,"
            " duration = excluded.duration, api_calls = excluded.api_calls,"
            " prompt_tokens = excluded.prompt_tokens,"
            " completion_tokens = excluded.completion_tokens, error = excluded.error",
            (child_session_id, parent_session_id, int(task_index), goal, status, started_at,
             duration, int(api_calls), int(prompt_tokens), int(completion_tokens), error)))

    def list_children(self, parent_session_id: str) -> list[dict[str, Any]]:
        """The sessions whose parent is ``parent_session_id``, oldest batch first, in task order.

        Each row: ``session_id``, ``source``, ``model``, ``started_at``, ``ended_at``, and from
        the delegation record (None when there is none, e.g. the parent died mid-batch):
        ``task_index``, ``goal``, ``status``, ``duration``, ``api_calls``, ``error``; tokens come
        from the record when there is one, else from the child session's totals.
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
