"""Messages: append, read the live history, compaction in place and ``/undo`` by row id.

Nothing the user said is ever deleted by compaction: replaced rows are only marked
``active=0, compacted=1`` and stay searchable (SPEC §4).
"""
from __future__ import annotations

import time
from typing import Any, Callable, Iterable, Optional

from .appends import encode_rows, insert_rows, touch_session
from .backend import Fence, Tx, UsesBackend
from .common import (CompressionLockLost, decode_content, logger, message_rows,
                     parse_tool_calls)

MESSAGE_COLUMNS = ("id, session_id, role, content, content_parts, tool_calls, tool_call_id,"
                   " tool_name, created_at, token_count, active, compacted, seq")


HISTORY_SQL = ("SELECT id, role, content, content_parts, tool_calls, tool_call_id, tool_name"
               " FROM messages WHERE session_id = ? AND active = 1 ORDER BY seq, id")


def _history(session_id: str, rows: Iterable[Any]) -> tuple[list[dict[str, Any]], list[int]]:
    """``HISTORY_SQL``'s rows as provider-ready messages, and their row ids."""
    out, ids = [], []
    for row in rows:
        msg: dict[str, Any] = {"role": row["role"],
                               "content": decode_content(row["content"], row["content_parts"])}
        tool_calls, ok = parse_tool_calls(row["tool_calls"])
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


class MessagesMixin(UsesBackend):
    """Message rows."""

    def _insert_messages(self, c: Tx, session_id: str, messages: list[dict[str, Any]],
                         seq_start: Optional[int] = None) -> Callable[[], list[int]]:
        """``appends.insert_rows`` of these messages; call the result after the transaction."""
        return insert_rows(c, session_id, encode_rows(session_id, messages), seq_start)

    def append_message(self, session_id: str, role: str, content: Any = None,
                       tool_calls: Any = None, tool_call_id: Optional[str] = None,
                       tool_name: Optional[str] = None, token_count: Optional[int] = None) -> int:
        """Persist one message (creating the session row if needed); returns its row id."""
        msg = {"role": role, "content": content, "tool_calls": tool_calls,
               "tool_call_id": tool_call_id, "tool_name": tool_name, "token_count": token_count}
        return self._b.append_rows(session_id, encode_rows(session_id, [msg]), None, None)[0]

    def append_messages(self, session_id: str, messages: list[dict[str, Any]],
                        usage: Optional[tuple[int, int]] = None,
                        fence: Optional[Fence] = None,
                        system_prompt: Optional[str] = None) -> list[int]:
        """Persist OpenAI-format message dicts in one transaction (all or nothing).

        ``usage`` (prompt, completion tokens) is added to the session's counters in the same
        transaction, sparing the agent a second write per turn; ``system_prompt`` (a new
        session's, with its first messages) is stored in it too. ``fence`` (``lock_fence``) is
        checked in that transaction: ``LeaseLost`` and nothing written once its lock was lost.
        """
        if not messages:
            return []
        return self._b.append_rows(session_id, encode_rows(session_id, list(messages)), usage,
                                   fence, system_prompt)

    def get_messages(self, session_id: str, include_inactive: bool = False) -> list[dict[str, Any]]:
        """Stored rows in conversation order. A corrupt tool_calls column comes back as raw text."""
        where = "" if include_inactive else " AND active = 1"
        rows = self._read(f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_id = ?{where}"
                          " ORDER BY seq, id", (session_id,))
        return message_rows(rows)

    def get_active_messages(self, session_id: str) -> list[dict[str, Any]]:
        """The live history as clean OpenAI-format dicts, ready to send to a provider."""
        return self.get_active_history(session_id)[0]

    def get_active_history(self, session_id: str) -> tuple[list[dict[str, Any]], list[int]]:
        """The live history and, in parallel, each message's row id.

        An agent keeps the ids so that a compaction or ``/undo`` touches exactly the rows it read
        or wrote, never a row another process appended meanwhile.
        """
        return _history(session_id, self._read(HISTORY_SQL, (session_id,)))

    def session_and_history(self, session_id: str
                            ) -> tuple[Optional[dict[str, Any]], list[dict[str, Any]], list[int]]:
        """``get_session`` and ``get_active_history`` at once (None, [], [] for no such session):
        what an agent reads to resume a session, in one round trip on PostgreSQL."""
        def reads(c: Tx) -> tuple[Callable[[], list[Any]], Callable[[], list[Any]]]:
            return (c.returning("SELECT * FROM sessions WHERE id = ?", (session_id,)),
                    c.returning(HISTORY_SQL, (session_id,)))
        session, history = self._b.read_with(reads, pipelined=True)
        rows = session()
        if not rows:
            return None, [], []
        return (dict(rows[0]), *_history(session_id, history()))

    def replace_active_messages(self, session_id: str, new_messages: list[dict[str, Any]],
                                replaced_ids: Iterable[int], *,
                                lock_holder: Optional[str] = None,
                                fence: Optional[Fence] = None) -> list[int]:
        """Persist a compaction in place, in one transaction, deleting nothing.

        Exactly the rows ``replaced_ids`` (those the compacting agent read or wrote) become
        ``active=0, compacted=1``; ``new_messages`` take their place in the conversation order.
        Any other row (one another process appended meanwhile) stays as it was and comes after
        the new rows. With ``lock_holder``, the commit is fenced: unless the session's
        compression lock still names that holder, :class:`CompressionLockLost` is raised and
        nothing changes (the lock row is read ``FOR UPDATE`` on PostgreSQL, so no one can take it
        between the check and the commit). Returns the new rows' ids.
        """
        replaced = sorted({int(i) for i in replaced_ids})

        def tx(c: Tx) -> Callable[[], list[int]]:
            if fence is not None:  # the turn lease (``append_messages``)
                fence.check(c)
            if lock_holder is not None:
                row = c.execute("SELECT holder FROM compression_locks WHERE session_id = ?"
                                + self._b.FOR_UPDATE, (session_id,)).fetchone()
                if row is None or row[0] != lock_holder:
                    raise CompressionLockLost(
                        f"the compression lock of session {session_id} is no longer held by "
                        f"this process (now: {row[0] if row else 'nobody'})")
            touch_session(c, session_id, time.time())
            seqs = {int(i): int(s) for i, s in c.execute(
                "SELECT id, seq FROM messages WHERE session_id = ?", (session_id,)).fetchall()}
            mine = [i for i in replaced if i in seqs]  # ids of another session are ignored
            c.executemany("UPDATE messages SET active = 0, compacted = 1"
                          " WHERE id = ? AND active = 1", [(i,) for i in mine])
            if not mine:
                ids = self._insert_messages(c, session_id, list(new_messages))
            else:
                ids = self._insert_at(c, session_id, list(new_messages), seqs, set(mine))
            c.execute("UPDATE sessions SET compactions = compactions + 1, last_seq = (SELECT"
                      " COALESCE(MAX(seq), 0) FROM messages WHERE session_id = ?) WHERE id = ?",
                      (session_id, session_id))  # renumbered: the counter is the new top
            return ids
        return self._write(tx)()

    def _insert_at(self, c: Tx, session_id: str, messages: list[dict[str, Any]],
                   seqs: dict[int, int], replaced: set[int]) -> Callable[[], list[int]]:
        """Renumber from the first replaced row on: the replaced rows, ``messages``, every other
        row.

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
                      [(first_new + len(messages) + n, i) for n, i in enumerate(after)])
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
