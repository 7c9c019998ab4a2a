"""The agent's link to the session store: which of its messages are on disk, and compactions in place.

One row per message, written as the turn goes (a crash loses at most the call in flight). A
compaction marks the rows it replaces inactive and writes the new history in one transaction, so
nothing ever leaves the store. The store is opened lazily: constructing an agent costs no I/O.
"""
from __future__ import annotations

import logging
from typing import Any, Callable, Optional

log = logging.getLogger("hermes.agent")


def _with_tool_names(rows: list[dict], context: list[dict]) -> list[dict]:
    """Tool results carry their tool's name in the store (not on the wire): found by call id in ``context``."""
    if not any(m.get("role") == "tool" for m in rows):
        return rows
    names = {c.get("id"): (c.get("function") or {}).get("name") for m in context
             for c in (m.get("tool_calls") or []) if isinstance(c, dict)}
    return [dict(m, tool_name=names.get(m.get("tool_call_id"))) if m.get("role") == "tool" else m for m in rows]


class StoreError(Exception):
    """The session store could not take a write that must not be half-done."""


class SessionRecorder:
    def __init__(self, db: Any, session_id: str, source: str, model: Callable[[], str],
                 warn: Callable[[str], None]) -> None:
        self._db = db
        self._db_failed = False
        self._model = model
        self._warn = warn
        self.source = source
        self.start(session_id)

    def start(self, session_id: str) -> None:
        """Point at a (possibly new) session; nothing of the previous one is carried over."""
        self.session_id = session_id
        self.known = False          # the session row exists in the store
        self.persisted_len = 0      # messages[:persisted_len] of the live history are on disk
        self.last_row_id: Optional[int] = None
        self.pending_usage = (0, 0)  # token counts that ride on the next write

    @property
    def db(self) -> Any:
        if self._db is None and not self._db_failed:
            try:
                from hermes_state import SessionDB

                self._db = SessionDB()
            except Exception as exc:
                self._db_failed = True
                self._warn(f"Session store unavailable ({exc}); this conversation is not being saved. "
                           f"Run `hermes doctor` to diagnose.")
        return self._db

    def _ensure_row(self, db: Any) -> None:
        if not self.known:
            db.create_session(self.session_id, source=self.source, model=self._model())
            self.known = True

    def load(self) -> tuple[list[dict], Optional[str]]:
        """The active history and stored system prompt of an existing session ([] and None if new)."""
        db = self.db
        if db is None:
            return [], None
        try:
            row = db.get_session(self.session_id)
            if row is None:
                return [], None
            self.known = True
            messages = db.get_active_messages(self.session_id)
            self.persisted_len = len(messages)
            self.last_row_id = db.max_message_id(self.session_id)
            return messages, row.get("system_prompt") or None
        except Exception as exc:
            self._warn(f"Could not load session {self.session_id}: {exc}")
            return [], None

    def add_usage(self, prompt_tokens: int, completion_tokens: int) -> None:
        p, c = self.pending_usage
        self.pending_usage = (p + (prompt_tokens or 0), c + (completion_tokens or 0))

    def persist(self, messages: list[dict]) -> None:
        """Write the messages not yet on disk, in one transaction."""
        if self.persisted_len >= len(messages):
            self.persisted_len = min(self.persisted_len, len(messages))
            return
        db = self.db
        if db is None:
            return
        pending = messages[self.persisted_len:]
        rows = _with_tool_names(pending, messages[-len(pending) - 8:])
        try:
            self._ensure_row(db)
            usage, self.pending_usage = self.pending_usage, (0, 0)
            ids = db.append_messages(self.session_id, rows, usage=usage)
        except Exception as exc:
            self._warn(f"Could not save messages to the session store: {exc}")
            return
        self.persisted_len = len(messages)
        if ids:
            self.last_row_id = max(ids)

    def replace(self, old: list[dict], new: list[dict]) -> None:
        """Make ``new`` the active history: ``old`` is flushed first, then marked inactive, never deleted.

        Raises StoreError (and changes nothing) when the store cannot take it: a compaction that could
        not flush ``old`` first would summarise away rows that were never stored verbatim.
        """
        self.persist(old)
        db = self.db
        if db is not None:
            if self.persisted_len < len(old):
                raise StoreError("the messages before the compaction could not be saved")
            try:
                self._ensure_row(db)
                ids = db.replace_active_messages(self.session_id, _with_tool_names(new, new),
                                                 upto_id=self.last_row_id)
            except Exception as exc:
                raise StoreError(str(exc)) from exc
            if ids:
                self.last_row_id = max(ids)
        self.persisted_len = len(new)

    def truncate(self, messages: list[dict], keep: int) -> None:
        """Take the live history back to its first ``keep`` messages; later rows become inactive."""
        self.persist(messages)
        db = self.db
        if db is not None and self.known:
            rows = db.get_messages(self.session_id)
            db.deactivate_messages(self.session_id, [r["id"] for r in rows[keep:]])
        self.persisted_len = keep

    def store_system_prompt(self, text: str) -> None:
        db = self.db
        if db is None:
            return
        try:
            self._ensure_row(db)
            db.set_system_prompt(self.session_id, text)
        except Exception as exc:
            log.warning("could not store the system prompt: %s", exc)

    def end(self, reason: str) -> None:
        if self._db is not None and self.known:
            try:
                self._db.end_session(self.session_id, reason=reason)
            except Exception as exc:
                log.warning("could not end session: %s", exc)
