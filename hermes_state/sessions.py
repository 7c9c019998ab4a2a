"""Sessions: create, read, rename, end, delete, prune (both backends, one copy)."""
from __future__ import annotations

import time
from typing import Any, Iterable, Optional

from .backend import Tx, UsesBackend
from .common import PREVIEW_CHARS, content_text, new_session_id, typed_text


# a new session row; an existing one stays as it is (``create_session`` is idempotent)
INSERT_SESSION = ("INSERT INTO sessions (id, source, user_id, model, title, parent_session_id,"
                  " system_prompt, started_at, updated_at, owner) VALUES (?,?,?,?,?,?,?,?,?,?)"
                  " ON CONFLICT (id) DO NOTHING")


class SessionsMixin(UsesBackend):
    """Session rows."""

    def create_session(self, session_id: Optional[str] = None, source: str = "cli",
                       model: Optional[str] = None, title: Optional[str] = None,
                       parent_session_id: Optional[str] = None, user_id: Optional[str] = None,
                       system_prompt: Optional[str] = None, owner: Optional[str] = None) -> str:
        """Create a session (or return an existing one untouched, so callers can be idempotent).

        ``owner``: None for the local owner (CLI, API key holder: sees every session); a chat
        user's ``"<platform>:<user id>"``, whose search and listing show only their own."""
        sid = session_id or new_session_id()
        title = (title or "").strip() or None
        insert = INSERT_SESSION
        if title is None:  # nothing to check first: one statement (an existing row stays as is)
            now = time.time()
            self._write_one(insert, (sid, source, user_id, model, None, parent_session_id,
                                     system_prompt, now, now, owner))
            return sid

        def tx(c: Tx) -> str:
            if c.execute("SELECT 1 FROM sessions WHERE id = ?", (sid,)).fetchone():
                return sid
            self._check_title_free(c, sid, title)
            now = time.time()
            c.execute(insert, (sid, source, user_id, model, title, parent_session_id,
                               system_prompt, now, now, owner))
            return sid
        return self._write(tx)

    @staticmethod
    def _check_title_free(c: Tx, sid: str, title: Optional[str]) -> None:
        if title is None:
            return
        row = c.execute("SELECT id FROM sessions WHERE title = ? AND id != ?",
                        (title, sid)).fetchone()
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
            text = " ".join(typed_text(content_text(d.pop("_first") or "")).split())
            d["preview"] = text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS - 1] + "…"
            out.append(d)
        return out

    def _update_session(self, session_id: str, sql: str, params: Iterable[Any]) -> bool:
        return self._write_one(f"UPDATE sessions SET {sql}, updated_at = ? WHERE id = ?",
                               (*params, time.time(), session_id)) > 0

    def count_sessions(self) -> int:
        return int(self._read("SELECT COUNT(*) FROM sessions")[0][0])

    def end_session(self, session_id: str, reason: Optional[str] = None) -> bool:
        """Mark a session finished; it stays in the store (and searchable)."""
        return self._update_session(session_id, "ended_at = ?, end_reason = ?",
                                    (time.time(), reason))

    def set_session_title(self, session_id: str, title: Optional[str]) -> bool:
        """Rename; titles are unique so they can be used to resume. Empty clears the title."""
        title = (title or "").strip() or None

        def tx(c: Tx) -> bool:
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
            session_id,
            "prompt_tokens = prompt_tokens + ?, completion_tokens = completion_tokens + ?",
            (int(prompt_tokens or 0), int(completion_tokens or 0)))

    def resolve_session(self, ref: str) -> Optional[str]:
        """What a user typed (exact id, exact title, or an unambiguous id prefix) -> session id."""
        ref = (ref or "").strip()
        if not ref:
            return None
        for sql in ("SELECT id FROM sessions WHERE id = ?",
                    "SELECT id FROM sessions WHERE title = ?"):
            rows = self._read(sql, (ref,))
            if rows:
                return rows[0][0]
        rows = self._read("SELECT id FROM sessions WHERE substr(id, 1, CAST(? AS INTEGER)) = ?"
                          " LIMIT 2", (len(ref), ref))
        return rows[0][0] if len(rows) == 1 else None

    @staticmethod
    def _delete_session_rows(c: Tx, session_id: str) -> bool:
        c.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))  # search rows go too
        c.execute("DELETE FROM compression_locks WHERE session_id = ?", (session_id,))
        c.execute("DELETE FROM session_keys WHERE session_id = ?", (session_id,))
        c.execute("DELETE FROM api_responses WHERE session_id = ?", (session_id,))
        return c.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount > 0

    def delete_session(self, session_id: str) -> bool:
        """Remove a session with its messages, search rows, lock and gateway bindings."""
        return self._write(lambda c: self._delete_session_rows(c, session_id))

    def _prunable_ids(self, c: Tx, older_than_days: float, source: Optional[str],
                      keep_active_within: float) -> list[str]:
        now = time.time()
        cutoff = min(now - float(older_than_days) * 86400, now - float(keep_active_within))
        sql = (f"SELECT id FROM sessions WHERE {self._b.GREATEST}(COALESCE(updated_at, 0),"
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
        ids = self._b.read_with(
            lambda c: self._prunable_ids(c, older_than_days, source, keep_active_within))
        rows = [self.get_session(sid) for sid in ids]
        return [r for r in rows if r is not None]

    def prune_sessions(self, older_than_days: float, source: Optional[str] = None,
                       keep_active_within: float = 0.0,
                       only: Optional[Iterable[str]] = None) -> int:
        """Delete sessions with no activity (update or end) for ``older_than_days`` (and none
        within ``keep_active_within`` seconds); with ``only``, just those of them (what the user
        was shown: a session that became active since stays).

        Sessions whose compression lock is still live are kept: someone is working on them.
        """
        allowed = None if only is None else set(only)

        def tx(c: Tx) -> int:
            ids = self._prunable_ids(c, older_than_days, source, keep_active_within)
            return sum(self._delete_session_rows(c, sid) for sid in ids
                       if allowed is None or sid in allowed)
        return self._write(tx)
