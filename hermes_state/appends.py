"""Appending message rows: the statements both backends share, and PostgreSQL's one-statement
append.

Where a row's ``seq`` comes from: ``sessions.last_seq`` (migration ``seq_counter``), bumped by
the session upsert that also locks the row. Why a counter in the row rather than ``MAX(seq)``:
an upsert's ``RETURNING`` sees the row as the last committed writer left it, even in a single
statement whose snapshot predates that commit, so PostgreSQL's append is one plain statement
(``PG_APPEND``: upsert, then insert, in one implicit transaction; no function, no per-connection
set-up). Each bump takes ``GREATEST(last_seq, MAX(seq))`` first, so rows written without the
counter (an older Hermes, an import) are still followed, never overtaken.
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


# ``last_seq`` of a bumped row: the counter or the session's highest ``seq``, whichever is higher
# (a row written without the counter is followed too), plus the rows about to be added
LAST_SEQ_BUMP = ("(SELECT CASE WHEN sessions.last_seq >= COALESCE(MAX(m.seq), 0)"
                 " THEN sessions.last_seq ELSE COALESCE(MAX(m.seq), 0) END"
                 " FROM messages AS m WHERE m.session_id = excluded.id) + excluded.last_seq")


def touch_session(c: Tx, session_id: str, now: float, added: int = 0, usage: Usage = None) -> None:
    """Create the session row if missing, else bump it (its counters by ``added`` messages and
    ``usage``, ``last_seq`` past the rows about to be added): either way the row is now locked
    until commit (PostgreSQL), so two writers never interleave one session's ``seq``."""
    c.execute("INSERT INTO sessions (id, source, started_at, updated_at, message_count,"
              " prompt_tokens, completion_tokens, last_seq) VALUES (?, 'unknown', ?, ?, ?, ?, ?, ?)"
              " ON CONFLICT (id) DO UPDATE SET updated_at = excluded.updated_at,"
              " message_count = sessions.message_count + excluded.message_count,"
              " prompt_tokens = sessions.prompt_tokens + excluded.prompt_tokens,"
              " completion_tokens = sessions.completion_tokens + excluded.completion_tokens,"
              f" last_seq = {LAST_SEQ_BUMP}",
              (session_id, now, now, added, *_tokens(usage), added))


def insert_rows(c: Tx, session_id: str, rows: list[tuple[Any, ...]],
                seq_start: Optional[int] = None, usage: Usage = None) -> Callable[[], list[int]]:
    """``rows`` (``encode_rows``) in order inside the caller's transaction, the session's
    counters kept current. No statement waits for another's answer (the INSERT reads the
    ``last_seq`` that ``touch_session`` bumped), so a pipelined write is one round trip; call the
    result after the transaction for the new rows' ids, in order."""
    touch_session(c, session_id, time.time(), len(rows), usage)
    seq = "(?)" if seq_start is not None else (
        "((SELECT last_seq FROM sessions WHERE id = ?) + ?)")
    pending = []
    for start in range(0, len(rows), INSERT_BATCH):  # one multi-row INSERT per batch
        batch = rows[start:start + INSERT_BATCH]
        values = [v for n, row in enumerate(batch) for v in (
            (*row, seq_start + start + n) if seq_start is not None
            else (*row, session_id, start + n + 1 - len(rows)))]
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
                  fence: Optional[Fence], prompt: Optional[str] = None) -> Callable[[], list[int]]:
    """``insert_rows`` after ``fence`` (when given) is checked in the same transaction, then the
    session's system ``prompt`` stored (when given: a new session's first append)."""
    if fence is not None:
        fence.check(c)
    ids = insert_rows(c, session_id, rows, usage=usage)
    if prompt is not None:
        c.execute("UPDATE sessions SET system_prompt = ? WHERE id = ?", (prompt, session_id))
    return ids




# PostgreSQL's append in one statement (psycopg named placeholders: each value is sent once).
# ``{fence}`` is ``true`` or a lock check (``pg_advisory.HELD_SQL``): when it fails no row is
# upserted, so none is inserted, and the statement returns no rows. ``system``: a new session's
# system prompt stored with its first messages (NULL keeps the stored one).
PG_APPEND = """WITH s AS (
  INSERT INTO sessions AS s (id, source, started_at, updated_at, message_count, prompt_tokens,
      completion_tokens, last_seq, system_prompt)
    SELECT %(sid)s, 'unknown', %(at)s, %(at)s, %(n)s, %(prompt)s, %(completion)s, %(n)s,
      %(system)s::text
    WHERE {fence}
    ON CONFLICT (id) DO UPDATE SET updated_at = excluded.updated_at,
      message_count = s.message_count + excluded.message_count,
      prompt_tokens = s.prompt_tokens + excluded.prompt_tokens,
      completion_tokens = s.completion_tokens + excluded.completion_tokens,
      system_prompt = COALESCE(excluded.system_prompt, s.system_prompt),
      last_seq = {bump}
    RETURNING s.last_seq - %(n)s AS base)
INSERT INTO messages (session_id, role, content, content_parts, tool_calls, tool_call_id,
    tool_name, created_at, token_count, seq)
  SELECT %(sid)s, e.v->>0, e.v->>1, e.v->>2, e.v->>3, e.v->>4, e.v->>5, %(at)s,
      (e.v->>6)::bigint, s.base + e.o
  FROM s, json_array_elements(%(rows)s::json) WITH ORDINALITY AS e(v, o)
  RETURNING id, seq"""


def pg_append_sql(fence_sql: str = "true") -> str:
    """``PG_APPEND`` with its fence condition (``true``: unfenced)."""
    return PG_APPEND.format(fence=fence_sql,
                            bump=LAST_SEQ_BUMP.replace("sessions.", "s."))


def pg_append_params(session_id: str, rows: list[tuple[Any, ...]], usage: Usage,
                     system_prompt: Optional[str] = None) -> dict[str, Any]:
    """``PG_APPEND``'s parameters: the rows as one JSON array of arrays (one value to send,
    however many rows; text cleaned of NUL bytes, which PostgreSQL's text cannot hold)."""
    prompt, completion = _tokens(usage)
    packed = json.dumps([clean_params((r[1], r[2], r[3], r[4], r[5], r[6],
                                       None if r[8] is None else int(r[8]))) for r in rows],
                        ensure_ascii=False)
    system = None if system_prompt is None else clean_params((system_prompt,))[0]
    return {"sid": session_id, "at": rows[0][7], "n": len(rows), "prompt": prompt,
            "completion": completion, "rows": packed, "system": system}
