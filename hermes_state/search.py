"""Full-text search and the reads behind the ``session_search`` tool (SPEC §11).

The query syntax is FTS5's (words AND-ed, ``OR``, ``NOT``, "phrases", ``prefix*``): SQLite runs
it as written; PostgreSQL runs its translation to a ``tsquery`` (``tsquery.to_tsquery_text``).
Anything the engine rejects is retried with each term quoted, so user input never raises.
"""
from __future__ import annotations

from typing import Any, Iterable, Optional

from .common import fts_fallback_query, logger, message_rows


class SearchMixin:
    """Needs ``_read`` and ``_b`` (``match_text``, ``is_query_error``, ``search_messages_sql``,
    ``session_hits``, ``add_snippets``) from ``SessionDB``."""

    _CHILD = "(s.source IN ('subagent', 'cron') OR s.parent_session_id IS NOT NULL)"
    SEARCH_SORTS = ("newest", "oldest", "relevance")
    _RELEVANCE_POOL = 1_000  # matches ranked by relevance: the newest this many

    def _attempts(self, query: str) -> list[str]:
        """The engine's query text for ``query``, then for its every-term-quoted fallback."""
        return [self._b.match_text(q) for q in (query, fts_fallback_query(query))]

    def search_messages(self, query: str, limit: int = 20, session_id: Optional[str] = None,
                        role: Optional[str] = None) -> list[dict[str, Any]]:
        """Full-text search over all messages, compacted ones included; best match first."""
        if not (query or "").strip():
            return []
        where, params = "", []
        if session_id:
            where += " AND m.session_id = ?"
            params.append(session_id)
        if role:
            where += " AND m.role = ?"
            params.append(role)
        sql = self._b.search_messages_sql(where)
        for attempt in self._attempts(query):
            if not attempt:
                return []
            try:
                return [dict(r) for r in self._read(sql, [attempt, *params, int(limit)])]
            except self._b.errors as exc:
                if not self._b.is_query_error(exc):
                    raise
                logger.debug("search query %r rejected (%s); retrying quoted", attempt, exc)
        return []

    def _scope(self, include_children: bool, owner: Optional[str]) -> tuple[str, list[Any]]:
        """The sessions a search may show (SQL over alias ``s``, its parameters): no children
        unless asked; with ``owner``, only that owner's (a chat user never sees another's)."""
        parts, params = ([] if include_children else [f"NOT {self._CHILD}"]), []
        if owner is not None:
            parts.append("s.owner = ?")
            params.append(owner)
        return " AND ".join(parts), params

    def search_sessions(self, query: str, limit: int = 3, offset: int = 0, sort: str = "newest",
                        include_children: bool = False,
                        owner: Optional[str] = None) -> tuple[list[dict[str, Any]], bool]:
        """Sessions with a message matching ``query`` (junk syntax is retried quoted), one hit
        each: ``(hits, more)``. Compacted and undone rows match too (``active``/``compacted`` say
        which). Subagent and cron sessions (source, or a parent session) only with
        ``include_children``; with ``owner``, only that owner's sessions. ``relevance`` ranks the
        newest 1,000 matches.

        A hit: session_id, title, source, started_at, updated_at, message_id, role, active,
        compacted, snippet (the match marked »like this«).
        """
        if sort not in self.SEARCH_SORTS:
            raise ValueError(f"sort must be one of {', '.join(self.SEARCH_SORTS)}, not {sort!r}")
        if not (query or "").strip():
            return [], False
        offset, limit = max(0, int(offset)), max(1, int(limit))
        scope, scope_params = self._scope(include_children, owner)
        for match in self._attempts(query):
            if not match:
                return [], False
            try:
                hits = self._b.session_hits(match, offset + limit + 1, sort, scope,
                                            self._RELEVANCE_POOL, scope_params)
                break
            except self._b.errors as exc:
                if not self._b.is_query_error(exc):
                    raise
                logger.debug("search query %r rejected (%s); retrying quoted", match, exc)
        else:
            return [], False
        page = hits[offset:offset + limit]
        self._b.add_snippets(match, sort, page)
        return page, len(hits) > offset + limit

    def _message_rows(self, where: str, params: Iterable[Any], order: str,
                      limit: int) -> list[dict[str, Any]]:
        rows = self._read("SELECT id, session_id, role, content, content_parts, tool_calls, tool_name,"
                          f" active, compacted, created_at FROM messages WHERE {where}"
                          f" ORDER BY {order} LIMIT ?", (*params, int(limit)))
        return message_rows(rows)

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

    def recent_sessions(self, limit: int = 5, offset: int = 0, include_children: bool = False,
                        owner: Optional[str] = None) -> tuple[list[dict[str, Any]], bool]:
        """The most recently active sessions (with preview), children only when asked, only
        ``owner``'s when given: (rows, more)."""
        scope, params = self._scope(include_children, owner)
        where = f"WHERE {scope}" if scope else ""
        rows = self._read(  # the preview is looked up for the page only
            "SELECT p.*, (SELECT m.content FROM messages AS m WHERE m.session_id = p.id"
            "  AND m.role = 'user' ORDER BY m.id LIMIT 1) AS preview FROM"
            " (SELECT s.id, s.title, s.source, s.started_at, s.updated_at, s.message_count"
            f"  FROM sessions AS s {where} ORDER BY s.updated_at DESC, s.id DESC LIMIT ? OFFSET ?) AS p",
            (*params, int(limit) + 1, int(offset)))
        return [dict(r) for r in rows[:limit]], len(rows) > limit
