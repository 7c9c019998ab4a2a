"""``SessionDB``: the one store interface, on SQLite (default) or PostgreSQL (SPEC §16).

The logic lives once, in the mixins (sessions, messages, search, locks, cron, records, pairing);
what differs between the engines (connecting, transactions and their retries, migrations,
full-text search, advisory locks) lives in ``sqlite_backend`` / ``postgres_backend``, reached only
through ``backend.StoreBackend``. Shared SQL is written with ``?`` placeholders and plain SQL
both engines accept (upserts with ``ON CONFLICT``, ``RETURNING``); a backend supplies the few
words that differ (``FOR_UPDATE``, ``GREATEST``).
"""
from __future__ import annotations

import os
import sqlite3
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Iterable, Optional, TypeVar

from .backend import Fence, StoreBackend, Tx
from .common import SessionDBError, env_url, is_postgres_url, unusable
from .cron_store import CronMixin
from .locks import LocksMixin
from .messages import MessagesMixin
from .migrations import problems as migration_problems
from .pairing import PairingMixin
from .records import RecordsMixin
from .search import SearchMixin
from .sessions import SessionsMixin
from .sqlite_backend import SQLiteBackend

if TYPE_CHECKING:
    from hermes_core.config import HermesConfig

T = TypeVar("T")


def open_backend(db_path: Optional[str | os.PathLike[str]] = None, url: Optional[str] = None,
                 pool_size: Optional[int] = None) -> StoreBackend:
    """The backend for an explicit path (SQLite), an explicit URL, else ``HERMES_DATABASE_URL``,
    else SQLite at ``HERMES_HOME/state.db``. A URL passed as the path (``SessionDB(url)``) is
    taken as the URL: as a path it would make a SQLite file in a folder named ``postgresql:``."""
    if url is None and isinstance(db_path, str) and "://" in db_path:
        db_path, url = None, db_path
    if db_path is None and url is None:
        url = env_url()
    if url is not None and db_path is None:
        if not is_postgres_url(url):
            raise unusable(f"store.url / HERMES_DATABASE_URL must be a postgresql:// URL, "
                           f"not {url.split('://', 1)[0]!r}; unset it to use SQLite")
        from .postgres_backend import PostgresBackend
        return PostgresBackend(url, pool_size)
    from hermes_core.home import ensure_home

    return SQLiteBackend(ensure_home() / "state.db" if db_path is None else db_path)


class SessionDB(SessionsMixin, MessagesMixin, SearchMixin, LocksMixin, CronMixin, RecordsMixin,
                PairingMixin):
    """The session store shared by every Hermes surface, process and (on PostgreSQL) host.

    Sessions: ``create_session``, ``get_session``, ``list_sessions``, ``end_session``,
    ``set_session_title``, ``set_session_model``, ``set_system_prompt``, ``update_session_usage``,
    ``resolve_session``, ``delete_session``, ``prune_sessions``.
    Messages: ``append_message(s)``, ``get_messages`` (rows), ``get_active_messages`` (OpenAI
    dicts), ``get_active_history`` (the same with row ids), ``replace_active_messages``
    (compaction in place, by row id, optionally fenced by the lock), ``deactivate_messages``
    (``/undo``, by row id), ``max_message_id``, ``search_messages`` (includes compacted rows).
    Session search (SPEC §11): ``search_sessions``, ``messages_around``, ``session_head_tail``,
    ``recent_sessions``.
    Gateway: ``bind_session_key``, ``create_session_for_key``, ``get_session_for_key``,
    ``unbind_session_key``; pairing (``pairing_read``, ``pairing_update``, ``pairing_import``,
    ``pairing_platforms``); API server responses: ``save_response``, ``get_response``,
    ``delete_response``. Delegation: ``record_delegation``, ``list_children``.
    Scheduled jobs (SPEC §12): ``add_cron_job``, ``get_cron_job``, ``find_cron_jobs``,
    ``list_cron_jobs``, ``update_cron_job``, ``delete_cron_job``, ``next_cron_job``; runs:
    ``claim_due_cron_runs`` (the exactly-once claim), ``claim_manual_cron_run``,
    ``finish_cron_run``, ``claim_cron_failure_notice``, ``heartbeat_cron_runs``,
    ``running_cron_runs``, ``mark_cron_runs_unknown``, ``get_cron_run``, ``list_cron_runs``.
    Compression lock (SPEC §5): ``try_acquire_compression_lock``, ``refresh_compression_lock``,
    ``release_compression_lock``, ``get_compression_lock_holder``. Named locks across processes
    (PostgreSQL) or threads (SQLite): ``advisory_lock``.
    Health: ``integrity_check``, ``schema_version``, ``applied_migrations``, ``pool_stats``,
    ``close`` / context manager.

    ``SessionDB.from_config(cfg)`` opens what is configured (``HERMES_DATABASE_URL``, else
    ``store.url``, else ``HERMES_HOME/state.db``); ``SessionDB()`` the environment's or the
    default SQLite file; ``SessionDB(path)`` a SQLite file; ``SessionDB(url=...)`` a PostgreSQL
    database. Thread-safe: SQLite serialises on one connection, PostgreSQL draws a connection
    from the process's pool per transaction.
    """

    def __init__(self, db_path: Optional[str | os.PathLike[str]] = None, *,
                 url: Optional[str] = None, pool_size: Optional[int] = None) -> None:
        backend = open_backend(db_path, url, pool_size)
        self._b: StoreBackend = backend
        # what only a SQLite store has: its file and its one connection (``conn``)
        self._sqlite = backend if isinstance(backend, SQLiteBackend) else None
        self.backend: str = self._b.name
        self.db_path: Optional[Path] = self._sqlite.db_path if self._sqlite else None
        self.label: str = self._b.label  # the path, or the URL without its password

    @classmethod
    def from_config(cls, cfg: "HermesConfig") -> "SessionDB":
        """The store a config names (its ``store`` section, ``HERMES_DATABASE_URL`` first)."""
        from hermes_core.config import store_url

        return cls(url=store_url(cfg), pool_size=cfg.store.pool_size)

    # -- maintenance -----------------------------------------------------------------------------

    @property
    def conn(self) -> sqlite3.Connection:
        """The SQLite connection (tests and maintenance); PostgreSQL has a pool instead."""
        if self._sqlite is None:
            raise SessionDBError("a PostgreSQL store has no single connection; use execute()")
        return self._sqlite.conn

    def execute(self, sql: str, params: Iterable[Any] = ()) -> list[tuple]:
        """One statement in its own transaction (``?`` placeholders on both backends): for
        maintenance and tests. Returns the rows it produced (empty for most writes)."""
        def tx(c: Tx) -> list[tuple]:
            cur = c.execute(sql, tuple(params))
            return [tuple(r) for r in cur.fetchall()] if cur.description else []
        return self._write(tx)

    def submit(self, fn: Callable[[], T]) -> Future[T]:
        """``fn`` (calls on this store) so that it overlaps what the caller waits for next, e.g.
        the user's message written while the model request is out: PostgreSQL runs it on a
        writer thread, SQLite at once (``backend.StoreBackend.submit``). ``close`` waits for what
        was submitted."""
        return self._b.submit(fn)

    def close(self) -> None:
        """Close the connection (or pool); safe to call twice."""
        self._b.close()

    def __enter__(self) -> "SessionDB":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def schema_version(self) -> int:
        """How many migrations the store has applied (``hermes doctor``, ``store status``)."""
        return len(self.applied_migrations())

    def applied_migrations(self) -> list[str]:
        """The names of the applied migrations, in ``migrations.NAMES`` order."""
        return self._b.applied_migrations()

    def pool_stats(self) -> dict[str, int]:
        """PostgreSQL: ``size``, ``in_use``, ``max_size`` of this process's pool; SQLite: {}."""
        return self._b.pool_stats()

    def advisory_lock(self, name: str, wait: Optional[float] = None) -> ContextManager[bool]:
        """A named lock held for the ``with`` block; yields whether it was obtained.

        ``wait``: None blocks until obtained, 0 tries once, else gives up after that many seconds.
        On PostgreSQL a session-level advisory lock on a connection of its own, so it is released
        when the block ends or the process (its connection) dies, whatever the host. On SQLite a
        lock of this process only (a SQLite store has one host and one gateway worker); not
        reentrant.
        """
        return self._b.advisory_lock(name, wait)

    def lock_fence(self, name: str) -> Optional[Fence]:
        """For a lock this process holds through ``advisory_lock``: an object that fenced writes
        (``append_messages(..., fence=)``) check inside their transaction, raising
        ``LeaseLost`` (nothing written) once the lock was lost. None on SQLite, or when the lock
        is not held here."""
        return self._b.lock_fence(name)

    # -- health --------------------------------------------------------------------------------

    def integrity_check(self) -> list[str]:
        """Problems found (empty list = healthy). Slow on big stores: doctor only."""
        try:
            return migration_problems(self.applied_migrations()) + self._b.integrity_problems()
        except self._b.errors as exc:
            return [f"database error: {exc}"]

    def rebuild_search_index(self) -> None:
        """Re-index every message from scratch (the fix for an out-of-sync search index)."""
        self._b.rebuild_search_index()
