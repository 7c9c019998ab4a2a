"""Appending message rows: the statements both backends share, and PostgreSQL's one-statement
append.

Why one statement on PostgreSQL: an append is on every turn's path, and each round trip to the
server costs a scheduling slot on a loaded host. ``pg_temp.hermes_append`` (created on each
pooled connection, no migration: it lives and dies with the connection) does the session upsert,
reads the next ``seq`` after that row is locked (PL/pgSQL takes a fresh snapshot per statement
under READ COMMITTED, so a writer that committed meanwhile is seen) and inserts the rows, all in
the one implicit transaction of a ``SELECT``.
"""
from __future__ import annotations

import json
import time
from typing import Any, Callable, Optional

from .backend import Fence, Tx
from .common import clean_params, encode_content

INSERT_BATCH = 500  # rows per INSERT (up to 11 parameters each: under SQLite's variable limit)
Usage = Optional[tuple[int, int]]


def encode_rows(session_id: str, messages: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """(session_id, role, content, content_parts, tool_calls, tool_call_id, tool_name,
    created_at, token_count) per message; ``ValueError`` (nothing saved) for one without role."""
    now = time.time()
    rows = []
    for offset, msg in enumerate(messages):
        if not msg.get("role"):
            raise ValueError(f"message {offset} has no role; nothing was saved")
        content, parts = encode_content(msg.get("content"))
        tc = msg.get("tool_calls")
        if tc is not None and not isinstance(tc, str):
            tc = json.dumps(tc, ensure_ascii=False)
        rows.append((session_id, msg["role"], content, parts, tc, msg.get("tool_call_id"),
                     msg.get("tool_name") or msg.get("name"), now, msg.get("token_count")))
    return rows


def _tokens(usage: Usage) -> tuple[int, int]:
    return (int(usage[0] or 0), int(usage[1] or 0)) if usage else (0, 0)


def touch_session(c: Tx, session_id: str, now: float, added: int = 0, usage: Usage = None) -> None:
    """Create the session row if missing, else bump it (its counters by ``added`` messages and
    ``usage``): either way the row is now locked until commit (PostgreSQL), so two writers never
    interleave one session's ``seq``."""
    c.execute("INSERT INTO sessions (id, source, started_at, updated_at, message_count,"
              " prompt_tokens, completion_tokens) VALUES (?, 'unknown', ?, ?, ?, ?, ?)"
              " ON CONFLICT (id) DO UPDATE SET updated_at = excluded.updated_at,"
              " message_count = sessions.message_count + excluded.message_count,"
              " prompt_tokens = sessions.prompt_tokens + excluded.prompt_tokens,"
              " completion_tokens = sessions.completion_tokens + excluded.completion_tokens",
              (session_id, now, now, added, *_tokens(usage)))


def insert_rows(c: Tx, session_id: str, rows: list[tuple[Any, ...]],
                seq_start: Optional[int] = None, usage: Usage = None) -> Callable[[], list[int]]:
    """``rows`` (``encode_rows``) in order inside the caller's transaction, the session's
    counters kept current. No statement waits for another's answer (the INSERT reads the next
    ``seq`` itself, after ``touch_session`` locked the session), so a pipelined write is one
    round trip; call the result after the transaction for the new rows' ids, in order."""
    touch_session(c, session_id, time.time(), len(rows), usage)
    seq = "(?)" if seq_start is not None else (
        "((SELECT COALESCE(MAX(seq), 0) FROM messages WHERE session_id = ?) + ?)")
    pending = []
    for start in range(0, len(rows), INSERT_BATCH):  # one multi-row INSERT per batch
        batch = rows[start:start + INSERT_BATCH]
        values = [v for n, row in enumerate(batch) for v in (
            (*row, seq_start + start + n) if seq_start is not None
            else (*row, session_id, n + 1))]
        pending.append(c.returning(
            "INSERT INTO messages (session_id, role, content, content_parts, tool_calls,"
            " tool_call_id, tool_name, created_at, token_count, seq) VALUES "
            + ", ".join([f"(?,?,?,?,?,?,?,?,?,{seq})"] * len(batch)) + " RETURNING id, seq",
            values))
    return lambda: [rid for rows_of in pending for rid in in_seq_order(rows_of())]


def in_seq_order(returned: list[Any]) -> list[int]:
    """The ids of ``RETURNING id, seq`` rows in ``seq`` order (RETURNING promises no order)."""
    return [int(r[0]) for r in sorted(returned, key=lambda r: int(r[1]))]


def fenced_insert(c: Tx, session_id: str, rows: list[tuple[Any, ...]], usage: Usage,
                  fence: Optional[Fence]) -> Callable[[], list[int]]:
    """``insert_rows`` after ``fence`` (when given) is checked in the same transaction."""
    if fence is not None:
        fence.check(c)
    return insert_rows(c, session_id, rows, usage=usage)


PG_FUNCTION = """CREATE OR REPLACE FUNCTION pg_temp.hermes_append(sid text, at double precision,
    prompt bigint, completion bigint, roles text[], contents text[], parts text[], calls text[],
    call_ids text[], names text[], tokens bigint[])
RETURNS TABLE (new_id bigint, new_seq bigint) LANGUAGE plpgsql AS $fn$
DECLARE base bigint;
BEGIN
  INSERT INTO sessions AS s (id, source, started_at, updated_at, message_count, prompt_tokens,
      completion_tokens) VALUES (sid, 'unknown', at, at, cardinality(roles), prompt, completion)
    ON CONFLICT (id) DO UPDATE SET updated_at = excluded.updated_at,
      message_count = s.message_count + excluded.message_count,
      prompt_tokens = s.prompt_tokens + excluded.prompt_tokens,
      completion_tokens = s.completion_tokens + excluded.completion_tokens;
  SELECT COALESCE(MAX(m.seq), 0) INTO base FROM messages AS m WHERE m.session_id = sid;
  RETURN QUERY INSERT INTO messages AS m (session_id, role, content, content_parts, tool_calls,
      tool_call_id, tool_name, created_at, token_count, seq)
    SELECT sid, u.r, u.c, u.p, u.t, u.ci, u.n, at, u.tk, base + u.o
    FROM unnest(roles, contents, parts, calls, call_ids, names, tokens)
      WITH ORDINALITY AS u(r, c, p, t, ci, n, tk, o)
    RETURNING m.id, m.seq;
END $fn$"""

PG_CALL = ("SELECT new_id, new_seq FROM pg_temp.hermes_append(?, ?, ?, ?, ?::text[], ?::text[],"
           " ?::text[], ?::text[], ?::text[], ?::text[], ?::bigint[])")


def pg_call_params(session_id: str, rows: list[tuple[Any, ...]], usage: Usage) -> tuple[Any, ...]:
    """``PG_CALL``'s parameters: one array per column (text cleaned of NUL bytes)."""
    columns = [list(clean_params(row[i] for row in rows)) for i in (1, 2, 3, 4, 5, 6)]
    tokens = [row[8] for row in rows]
    return (session_id, rows[0][7], *_tokens(usage), *columns, tokens)
