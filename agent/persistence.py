"""The agent's link to the session store: which of its messages are on disk, and compactions in
place.

One row per message, written as the turn goes (a crash loses at most the call in flight). A
compaction marks the rows it replaces inactive and writes the new history in one transaction, so
nothing ever leaves the store. The store is opened lazily: constructing an agent costs no I/O.
"""
from __future__ import annotations

import logging
from concurrent.futures import Future
from typing import Any, Callable, Optional

log = logging.getLogger("hermes.agent")


def _with_tool_names(rows: list[dict], context: list[dict]) -> list[dict]:
    """Tool results carry their tool's name in the store (not on the wire): found by call id in
    ``context``."""
    if not any(m.get("role") == "tool" for m in rows):
        return rows
    names = {c.get("id"): (c.get("function") or {}).get("name") for m in context
             for c in (m.get("tool_calls") or []) if isinstance(c, dict)}
    return [dict(m, tool_name=names.get(m.get("tool_call_id"))) if m.get("role") == "tool" else m
            for m in rows]


class StoreError(Exception):
    """The session store could not take a write that must not be half-done."""


class HistoryLoadError(StoreError):
    """The stored history of a session could not be read: the turn must not go on without it.

    Going on with an empty history would answer out of context, and a later compaction could
    mark rows inactive that this agent never read.
    """


class CompactionRefused(StoreError):
    """The compaction commit found the compression lock taken over: nothing was changed."""


def _default_store() -> Any:
    from hermes_state import SessionDB

    return SessionDB()


class SessionRecorder:
    """Which messages of the live history are in the store, under which row ids.

    ``row_ids`` runs parallel to the agent's history: ``row_ids[i]`` is the store row of message
    ``i`` (None for a message the caller supplied and keeps itself); messages past its length are
    not written yet. Compaction and ``/undo`` act on these ids only, so rows another process
    appended to the same session are never taken out of the live history.
    """

    def __init__(self, db: Any, session_id: str, source: str, model: Callable[[], str],
                 warn: Callable[[str], None], fence: Callable[[], Any] = lambda: None,
                 owner: Callable[[], Optional[str]] = lambda: None,
                 open_store: Optional[Callable[[], Any]] = None) -> None:
        """``fence()``: what this turn's writes must prove (a gateway worker's turn lease,
        ``SessionDB.lock_fence``), or None. ``owner()``: whom a session created here belongs to."""
        self._db = None if db is False else db
        self._open = open_store or _default_store
        self._fence = fence
        self._owner = owner
        self.fenced: Optional[str] = None  # why writes stopped: the lease was lost mid-turn
        self._db_error: Optional[Exception] = None  # why the default store could not be opened
        if db is False:  # store nothing (the skill review's throwaway agent)
            self._db_error = RuntimeError("this agent stores nothing (session_db=False)")
        self._model = model
        self._warn = warn
        self.source = source
        self._ahead: Optional[Future[list[int]]] = None  # ``persist_ahead``'s write in flight
        self._ahead_prompt: Optional[str] = None  # the system prompt that write carries
        self.start(session_id)

    def start(self, session_id: str) -> None:
        """Point at a (possibly new) session; nothing of the previous one is carried over."""
        self.settle()
        self.session_id = session_id
        self.fenced = None
        self.known = False          # the session row exists in the store
        self.row_ids: list[Optional[int]] = []
        self.pending_usage = (0, 0)  # token counts that ride on the next write
        self.prompt_due: Optional[str] = None  # a system prompt that rides on it too

    def adopt(self, count: int) -> None:
        """A caller-supplied history of ``count`` messages: the caller's to store, not ours."""
        self.settle()
        self.row_ids = [None] * count

    @property
    def db(self) -> Any:
        if self._db is None and self._db_error is None:
            try:
                self._db = self._open()
            except Exception as exc:
                self._db_error = exc
                self._warn(f"Session store unavailable ({exc}); this conversation is not being "
                           "saved. Run `hermes doctor` to diagnose.")
        return self._db

    def _create_row(self, db: Any) -> None:
        db.create_session(self.session_id, source=self.source, model=self._model(),
                          owner=self._owner())

    def _ensure_row(self, db: Any) -> None:
        if not self.known:
            self._create_row(db)
            self.known = True

    def load(self) -> tuple[list[dict], Optional[str]]:
        """The active history and stored system prompt of an existing session ([] and None if new).

        Raises HistoryLoadError (having written nothing) when the store cannot be read.
        """
        self.settle()
        db = self.db
        if db is None:
            raise HistoryLoadError(f"Session {self.session_id} could not be read: "
                                   f"{self._db_error}. Nothing was sent or saved; run "
                                   "`hermes doctor`, then try again.")
        try:
            row, messages, ids = db.session_and_history(self.session_id)
            if row is None:
                return [], None
        except Exception as exc:
            raise HistoryLoadError(f"Session {self.session_id} could not be read from the session "
                                   f"store ({exc}). Nothing was sent or saved; run `hermes doctor` "
                                   "to check the store, then try again.") from exc
        self.known = True
        self.row_ids = list(ids)
        return messages, row.get("system_prompt") or None

    def created(self) -> None:
        """The session row exists and holds no message (its maker says so): nothing to load."""
        self.settle()
        self.known, self.row_ids = True, []

    @property
    def top_row_id(self) -> Optional[int]:
        """The highest store row id of the live history (None: nothing stored): where the store
        stands after this agent's writes, unless someone else wrote since."""
        self.settle()
        return max((i for i in self.row_ids if i is not None), default=None)

    def add_usage(self, prompt_tokens: int, completion_tokens: int) -> None:
        p, c = self.pending_usage
        self.pending_usage = (p + (prompt_tokens or 0), c + (completion_tokens or 0))

    def _unsaved(self, messages: list[dict]) -> Optional[list[dict]]:
        """The rows of the messages not yet on disk (tool names added), or None: nothing to write
        (or no store, or writes stopped by a lost lease)."""
        if len(self.row_ids) >= len(messages):
            del self.row_ids[len(messages):]
            return None
        if self.db is None or self.fenced:  # fenced: another worker owns the session now
            return None
        pending = messages[len(self.row_ids):]
        return _with_tool_names(pending, messages[-len(pending) - 8:])

    def persist(self, messages: list[dict]) -> None:
        """Write the messages not yet on disk, in one transaction."""
        self.settle()
        rows = self._unsaved(messages)
        if rows is None:
            return self._store_prompt_alone()
        db = self.db
        try:
            self._ensure_row(db)
            usage, self.pending_usage = self.pending_usage, (0, 0)
            ids = db.append_messages(self.session_id, rows, usage=usage, fence=self._fence(),
                                     system_prompt=self.prompt_due)
        except Exception as exc:
            self._write_failed(exc)
            return
        self.prompt_due = None
        self.row_ids.extend(ids)

    def persist_ahead(self, messages: list[dict]) -> None:
        """``persist``, the write overlapping what the caller does next (the model request): on
        PostgreSQL its round trip and the server's work no longer add to the turn, and a crash
        still loses at most the call in flight. Every other method (and ``settle``) waits for
        it first, so the store's order is the history's. A fenced write (a gateway worker's
        lease) stays synchronous: a lost lease must stop the request before it goes out."""
        self.settle()
        rows = self._unsaved(messages)
        if rows is None:
            return
        db, fence = self.db, self._fence()
        if fence is not None or not hasattr(db, "submit"):
            return self.persist(messages)
        usage, self.pending_usage = self.pending_usage, (0, 0)
        create, sid, prompt = not self.known, self.session_id, self.prompt_due

        def write() -> list[int]:
            if create:
                self._create_row(db)
            return db.append_messages(sid, rows, usage=usage, system_prompt=prompt)
        try:
            self._ahead = db.submit(write)
        except Exception as exc:
            self._write_failed(exc)
            return
        self._ahead_prompt, self.prompt_due = prompt, None

    def settle(self) -> None:
        """Wait for the write ``persist_ahead`` left in flight and take in its row ids."""
        ahead, self._ahead = self._ahead, None
        if ahead is None:
            return
        try:
            ids = ahead.result()
        except Exception as exc:
            self.prompt_due = self.prompt_due or self._ahead_prompt  # stored with the next one
            self._write_failed(exc)
            return
        self.known = True
        self.row_ids.extend(ids)

    def _write_failed(self, exc: Exception) -> None:
        """A failed append: the turn goes on (the rows are written with the next one)."""
        from hermes_state import LeaseLost

        if isinstance(exc, LeaseLost):
            self.fenced = f"This turn was stopped and its reply not saved: {exc}."
            log.warning("session %s: %s", self.session_id, exc)
            return
        self._warn(f"Could not save messages to the session store: {exc}")

    def replace(self, old: list[dict], new: list[dict], lock_holder: Optional[str] = None) -> None:
        """Make ``new`` the active history in place of ``old``: exactly ``old``'s rows become
        inactive.

        ``old`` is flushed first. Raises StoreError (and changes nothing) when the store cannot take
        it: a compaction that could not flush ``old`` would summarise away rows never stored
        verbatim. With ``lock_holder`` the commit is fenced by the compression lock; a lock taken
        over meanwhile raises CompactionRefused.
        """
        self.persist(old)
        db = self.db
        if db is None:
            self.row_ids = [None] * len(new)
            return
        if len(self.row_ids) < len(old):
            raise StoreError("the messages before the compaction could not be saved")
        replaced = [i for i in self.row_ids[:len(old)] if i is not None]
        if self.fenced:
            raise CompactionRefused(self.fenced)
        try:
            from hermes_state import CompressionLockLost, LeaseLost

            self._ensure_row(db)
            ids = db.replace_active_messages(self.session_id, _with_tool_names(new, new), replaced,
                                             lock_holder=lock_holder, fence=self._fence())
        except LeaseLost as exc:
            self.fenced = f"This turn was stopped and its reply not saved: {exc}."
            raise CompactionRefused(str(exc)) from exc
        except CompressionLockLost as exc:
            raise CompactionRefused(str(exc)) from exc
        except Exception as exc:
            raise StoreError(str(exc)) from exc
        self.row_ids = list(ids)

    def truncate(self, messages: list[dict], keep: int) -> None:
        """Take the live history back to its first ``keep`` messages: the rows of the later ones
        (and only those, by id) become inactive. A store failure raises and changes nothing."""
        self.persist(messages)
        dropped = [i for i in self.row_ids[keep:] if i is not None]
        db = self.db
        if db is not None and dropped:
            db.deactivate_messages(self.session_id, dropped)
        del self.row_ids[keep:]

    def store_system_prompt(self, text: str) -> None:
        """Stored with the next append (the turn's user message follows at once): a new
        session's first turn commits once where it committed twice. ``persist`` with nothing
        to append, and ``end``, store it alone."""
        self.settle()
        self.prompt_due = text

    def _store_prompt_alone(self) -> None:
        text, db = self.prompt_due, self.db
        if text is None or db is None or self.fenced:
            return
        try:
            self._ensure_row(db)
            db.set_system_prompt(self.session_id, text)
        except Exception as exc:
            log.warning("could not store the system prompt: %s", exc)
            return
        self.prompt_due = None

    def end(self, reason: str) -> None:
        self.settle()
        self._store_prompt_alone()
        if self._db is not None and self.known:
            try:
                self._db.end_session(self.session_id, reason=reason)
            except Exception as exc:
                log.warning("could not end session: %s", exc)
