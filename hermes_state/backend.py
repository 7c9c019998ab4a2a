"""The seam between the store's shared logic and an engine: ``StoreBackend``.

``SessionDB`` and its mixins (sessions, messages, search, locks, cron_store, records, pairing)
reach an engine only through these members; ``sqlite_backend.SQLiteBackend`` and
``postgres_backend.PostgresBackend`` implement them (``tests/test_store_backend.py`` checks
both). A transaction function gets a ``Tx``: ``execute``/``executemany`` with ``?``
placeholders, text parameters cleaned of NUL bytes, rows readable by position and by name.
"""
from __future__ import annotations

from concurrent.futures import Future
from typing import (Any, Callable, ContextManager, Iterable, Iterator, Optional, Protocol,
                    TypeVar, runtime_checkable)

T = TypeVar("T")


class Row(Protocol):
    """A result row (``sqlite3.Row``, ``postgres_backend.PGRow``): ``row[0]``, ``row["id"]``,
    ``dict(row)``."""

    def __getitem__(self, key: Any) -> Any: ...

    def __iter__(self) -> Iterator[Any]: ...

    def keys(self) -> list[str]: ...


class Cursor(Protocol):
    """What a statement returns (a sqlite3 or psycopg cursor)."""

    @property
    def rowcount(self) -> int: ...

    @property
    def description(self) -> Any: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Tx(Protocol):
    """The connection a transaction (or ``read_with``) function is handed."""

    def execute(self, sql: str, params: Iterable[Any] = (), /) -> Cursor: ...

    def executemany(self, sql: str, seq: Iterable[Iterable[Any]], /) -> Cursor: ...

    def returning(self, sql: str, params: Iterable[Any] = (), /) -> Callable[[], list[Any]]:
        """A statement whose rows the transaction itself does not need: call the result after
        the transaction for them (PostgreSQL pipelines the write, so they arrive with its
        commit; SQLite reads them at once)."""
        ...


class Fence(Protocol):
    """Checked inside a write transaction: raises ``LeaseLost`` once its lock was lost."""

    def check(self, tx: Tx) -> None: ...


@runtime_checkable
class StoreBackend(Protocol):
    """Exactly what ``SessionDB`` and its mixins call on an engine."""

    name: str  # "sqlite" or "postgresql"
    label: str  # the path, or the URL without its password
    errors: tuple[type[BaseException], ...]  # the driver's errors
    FOR_UPDATE: str  # appended to a SELECT that locks its rows ("" where writers serialise)
    GREATEST: str  # the name of the greatest-of-several function
    WRITING_WITH: bool  # a WITH clause may insert (PostgreSQL): two writes in one statement

    def write(self, fn: Callable[[Tx], T], pipelined: bool = False) -> T:
        """``fn`` in one write transaction (retried as the engine allows). ``pipelined``: ``fn``
        only sends statements (no ``rowcount``/``description`` read; a fetch may wait), so a
        networked engine sends them with BEGIN and COMMIT in one round trip."""
        ...

    def write_one(self, sql: str, params: Iterable[Any] = ()) -> int:
        """One statement as its own transaction; its ``rowcount``. PostgreSQL sends it alone in
        autocommit: one round trip, where ``write`` costs three (BEGIN, it, COMMIT)."""
        ...

    def read(self, sql: str, params: Iterable[Any] = ()) -> list[Row]: ...

    def append_rows(self, session_id: str, rows: list[tuple[Any, ...]],
                    usage: Optional[tuple[int, int]], fence: Optional[Fence],
                    prompt: Optional[str] = None) -> list[int]:
        """``appends.encode_rows`` appended in one transaction (``fence`` checked in it, the
        session's system ``prompt`` stored in it when given); the new ids in order. The engine
        picks its cheapest way (PostgreSQL: one statement)."""
        ...

    def read_with(self, fn: Callable[[Tx], T], pipelined: bool = False) -> T:
        """``fn`` outside a write transaction: several reads on one connection. ``pipelined``:
        ``fn`` only sends them (``Tx.returning``) and the caller reads the rows after, so a
        networked engine sends them all in one round trip."""
        ...

    def submit(self, fn: Callable[[], T]) -> Future[T]:
        """``fn`` (calls on the store) where it overlaps what the caller waits for next: a
        networked engine runs it on a writer thread (the round trip and the server's work
        happen while the caller waits on the model); SQLite runs it at once (its work is this
        process's own CPU, which a thread would only add to)."""
        ...

    def close(self) -> None: ...

    def applied_migrations(self) -> list[str]:
        """The recorded migration names, ``migrations.in_order``."""
        ...

    def pool_stats(self) -> dict[str, int]: ...

    def advisory_lock(self, name: str, wait: Optional[float]) -> ContextManager[bool]: ...

    def lock_fence(self, name: str) -> Optional[Fence]: ...

    def integrity_problems(self) -> list[str]:
        """Engine-level damage (migrations are judged by ``SessionDB``)."""
        ...

    def rebuild_search_index(self) -> None: ...

    def match_text(self, query: str) -> str:
        """The engine's text for a search query in FTS5 syntax."""
        ...

    def is_query_error(self, exc: BaseException) -> bool:
        """The engine rejected the search syntax (retried quoted), not a store failure."""
        ...

    def search_messages_sql(self, where: str) -> str: ...

    def session_hits(self, match: str, want: int, sort: str, child_filter: str,
                     relevance_pool: int,
                     filter_params: Iterable[Any] = ()) -> list[dict[str, Any]]: ...

    def add_snippets(self, match: str, sort: str, hits: list[dict[str, Any]]) -> None: ...


class UsesBackend:
    """The base of ``SessionDB``'s mixins: the backend it opened, and the two calls nearly every
    method makes."""

    _b: StoreBackend

    def _write(self, fn: Callable[[Tx], T], pipelined: bool = False) -> T:
        return self._b.write(fn, pipelined=pipelined)

    def _write_one(self, sql: str, params: Iterable[Any] = ()) -> int:
        return self._b.write_one(sql, params)

    def _read(self, sql: str, params: Iterable[Any] = ()) -> list[Row]:
        return self._b.read(sql, params)
