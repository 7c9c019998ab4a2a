"""PostgreSQL: one connection pool per database per process, tsvector search, advisory locks.

Several processes on several hosts share the database (SPEC §16). Every write is one
transaction on a pooled autocommit connection (``conn.transaction()``), retried when PostgreSQL
reports a serialization failure or deadlock; a lost connection becomes ``SessionDBError``
(nothing is retried blindly: a write whose COMMIT was in flight may or may not have happened).
A connection found dead before anything was sent on it (or under a read) is dropped and the call
retried on a fresh one, so after a database restart the next call works. Messages, URLs and
errors never show the password.
"""
from __future__ import annotations

import atexit
import os
import random
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from functools import lru_cache
from typing import Any, Callable, ContextManager, Iterable, Optional, TypeVar

import psycopg
from psycopg import errors as pg_errors
from psycopg_pool import ConnectionPool, PoolTimeout

from . import pg_search, postgres_schema
from .appends import fenced_insert, in_seq_order, pg_append_params, pg_append_sql
from .backend import Fence, Row, Tx
from .common import SessionDBError, clean_params, redact_url, scrub, unusable
from .pg_advisory import HELD_SQL, AdvisoryLocks, LockFence
from .pg_pool import drop_if_closed_while_idle
from .tsquery import to_tsquery_text

T = TypeVar("T")

WRITE_ATTEMPTS = 5
CONNECT_TIMEOUT = 5  # seconds to reach the server
POOL_WAIT = 15.0  # seconds a call waits for a pooled connection before failing
_RETRY = (pg_errors.SerializationFailure, pg_errors.DeadlockDetected)


class PGRow(tuple):
    """A row readable by position, by column name and as ``dict(row)`` (like ``sqlite3.Row``)."""
    _names: tuple[str, ...] = ()
    _index: dict[str, int] = {}

    def __getitem__(self, key: Any) -> Any:  # type: ignore[override]
        if isinstance(key, str):
            return tuple.__getitem__(self, self._index[key])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._names)


@lru_cache(maxsize=512)
def _row_class(names: tuple[str, ...]) -> type:
    return type("PGRow", (PGRow,), {"_names": names, "_index": {n: i for i, n in enumerate(names)}})


def pg_rows(cursor: Any) -> Callable[[Any], Any]:
    """psycopg row factory making :class:`PGRow` s."""
    desc = cursor.description
    return _row_class(tuple(d.name for d in desc)) if desc else tuple


@lru_cache(maxsize=1024)
def pg_sql(sql: str) -> str:
    """The shared SQL's ``?`` placeholders as psycopg's ``%s`` (a literal ``%`` doubled)."""
    return sql.replace("%", "%%").replace("?", "%s")


class _Empty:
    """The cursor of an ``executemany`` over no rows (nothing was sent)."""
    rowcount = 0
    description = None

    def fetchone(self) -> None:
        return None

    def fetchall(self) -> list[Any]:
        return []


class PGTx:
    """The connection a transaction function gets: ``execute``/``executemany`` with ``?``.
    ``used`` tells whether a statement was sent (before that, a failure can be retried)."""

    def __init__(self, conn: Optional[psycopg.Connection]) -> None:
        self.conn = conn
        self.used = False

    def execute(self, sql: str, params: Iterable[Any] = ()) -> Any:
        self.used = True
        return self.conn.execute(pg_sql(sql), clean_params(params))

    def named(self, sql: str, params: dict[str, Any]) -> Any:
        """A statement with psycopg's named placeholders (each value sent once), as given."""
        self.used = True
        return self.conn.execute(sql, params)

    def returning(self, sql: str, params: Iterable[Any] = ()) -> Callable[[], list[Any]]:
        return self.execute(sql, params).fetchall  # read after the pipeline's sync: no wait

    def executemany(self, sql: str, seq: Iterable[Iterable[Any]]) -> Any:
        rows = [clean_params(p) for p in seq]
        if not rows:
            return _Empty()
        self.used = True
        cur = self.conn.cursor()
        cur.executemany(pg_sql(sql), rows)
        return cur


# (pid, url) -> [pool, users, locks]: one pool and one advisory-lock connection per database per
# process (a forked child opens its own)
DEFAULT_POOL_SIZE = 10  # connections per process (config store.pool_size)

_POOLS: dict[tuple[int, str], list[Any]] = {}
_POOLS_GUARD = threading.Lock()


def _close_all_pools() -> None:
    with _POOLS_GUARD:
        pools = [entry for key, entry in _POOLS.items() if key[0] == os.getpid()]
        _POOLS.clear()
    for pool, _users, locks in pools:
        locks.close()
        pool.close(timeout=1)


atexit.register(_close_all_pools)


class PostgresBackend:
    name = "postgresql"
    errors: tuple[type[BaseException], ...] = (psycopg.Error,)
    FOR_UPDATE = " FOR UPDATE"
    GREATEST = "GREATEST"
    WRITING_WITH = True  # a WITH clause may insert: two writes in one statement

    def __init__(self, url: str, pool_size: Optional[int] = None) -> None:
        self.url = url
        self.label = redact_url(url)
        self._closed = False
        self._key = (os.getpid(), url)
        with _POOLS_GUARD:  # the first SessionDB of a database in this process migrates it
            entry = _POOLS.get(self._key)
            if entry is None:
                entry = _POOLS[self._key] = [self._open_pool(pool_size), 0,
                                             AdvisoryLocks(self._connect, self._lock_failed)]
            entry[1] += 1
        self.pool: ConnectionPool = entry[0]
        self._locks: AdvisoryLocks = entry[2]
        self._writer: Optional[ThreadPoolExecutor] = None  # ``submit``'s threads, made lazily
        self._writer_guard = threading.Lock()
        self._closing = False

    def _open_pool(self, pool_size: Optional[int]) -> ConnectionPool:
        try:
            with self._connect() as conn:
                postgres_schema.migrate(conn, self.label)
        except psycopg.OperationalError as exc:
            raise self._unreachable(exc) from None
        except psycopg.Error as exc:
            raise SessionDBError(f"cannot upgrade the session store {self.label}: "
                                 f"{self._scrub(exc)}; the store is as it was before that"
                                 " migration") from None
        size = pool_size or DEFAULT_POOL_SIZE
        return ConnectionPool(self.url, min_size=1, max_size=size, open=True, name="hermes",
                              kwargs=self._connect_kwargs(), timeout=POOL_WAIT, num_workers=1)

    # -- connections ---------------------------------------------------------------------------

    @staticmethod
    def _connect_kwargs() -> dict[str, Any]:
        """``prepare_threshold=0``: a statement is prepared on a connection's first run of it.
        psycopg's default (after five runs) made a new worker's first turns parse and plan each
        statement from scratch five times on every connection of its pool, before the server's
        own five custom plans; the one-statement append took ~0.6 ms there instead of ~0.25."""
        return {"autocommit": True, "row_factory": pg_rows, "connect_timeout": CONNECT_TIMEOUT,
                "application_name": "hermes", "prepare_threshold": 0}

    def _connect(self) -> psycopg.Connection:
        return psycopg.connect(self.url, **self._connect_kwargs())

    def _scrub(self, exc: BaseException) -> str:
        return scrub(" ".join(str(exc).split()), self.url)

    def _unreachable(self, exc: BaseException) -> SessionDBError:
        return unusable(f"cannot reach the session store {self.label}: {self._scrub(exc)}; "
                        "check store.url / HERMES_DATABASE_URL and that PostgreSQL is running")

    def _run(self, fn: Callable[[PGTx], T], transaction: bool, mode: str = "transaction") -> T:
        """``fn`` on a pooled connection (in a transaction when asked), with the retries that
        are safe: a serialization failure or deadlock (PostgreSQL rolled it all back); a
        connection that died while idle in the pool (e.g. the server restarted), noticed before
        anything was sent (``drop_if_closed_while_idle``), or under a read (reads can be
        repeated). ``mode``: "transaction", "pipelined" (BEGIN, the statements and COMMIT sent
        together) or "statement" (``fn`` sends one statement, in autocommit).
        A write whose connection fails midway is not repeated: it fails with ``SessionDBError``
        and the next call reconnects."""
        if self._closed:
            raise SessionDBError(f"the session store {self.label} is closed")
        lost = 0
        for attempt in range(WRITE_ATTEMPTS + self.pool.max_size):
            tx = PGTx(None)
            try:
                with self.pool.connection() as conn:
                    tx.conn = conn
                    if not transaction:
                        return fn(tx)
                    if mode == "transaction":
                        with conn.transaction():
                            return fn(tx)
                    drop_if_closed_while_idle(conn)
                    if mode == "statement":  # one statement: its own transaction
                        return fn(tx)
                    with conn.pipeline(), conn.transaction():  # BEGIN..COMMIT in one round
                        return fn(tx)  # trip, unless ``fn`` fetches a result on the way
            except PoolTimeout as exc:
                raise SessionDBError(f"no connection to the session store {self.label} within "
                                     f"{POOL_WAIT:.0f} s ({self._scrub(exc)}); is PostgreSQL "
                                     "running? Try again") from None
            except _RETRY:
                if attempt >= WRITE_ATTEMPTS - 1:
                    raise
                time.sleep(min(1.0, 0.02 * 2 ** attempt) * (0.5 + random.random()))
            except psycopg.OperationalError as exc:
                if isinstance(exc, pg_errors.QueryCanceled):
                    raise
                lost += 1
                if (not tx.used or not transaction) and lost <= self.pool.max_size:
                    continue  # a dead idle connection: the pool drops it, the next one is fresh
                raise SessionDBError(f"the connection to the session store {self.label} failed "
                                     f"({self._scrub(exc)}); the next call reconnects") from None
        raise AssertionError("unreachable")

    def write(self, fn: Callable[[Tx], T], pipelined: bool = False) -> T:
        """Run ``fn(tx)`` in one transaction (see ``_run`` for what is retried). ``pipelined``:
        ``fn`` only sends statements (a cursor's ``rowcount`` and ``description`` are unknown
        until the commit; a fetch waits for the rows), and the whole write is one round trip."""
        return self._run(fn, transaction=True,
                         mode="pipelined" if pipelined else "transaction")

    _APPEND = pg_append_sql()
    _FENCED_APPEND = pg_append_sql(HELD_SQL)

    def append_rows(self, session_id: str, rows: list[tuple[Any, ...]],
                    usage: Optional[tuple[int, int]], fence: Optional[Fence],
                    prompt: Optional[str] = None) -> list[int]:
        """One statement (``appends.PG_APPEND``), the lock check of a ``LockFence`` and the
        system prompt to store in it; any other fence goes in a pipelined transaction of the
        shared statements (one round trip too)."""
        if fence is not None and not isinstance(fence, LockFence):
            return self.write(lambda c: fenced_insert(c, session_id, rows, usage, fence, prompt),
                              pipelined=True)()
        params = pg_append_params(session_id, rows, usage, prompt)
        sql = self._APPEND
        if fence is not None:
            sql = self._FENCED_APPEND
            params.update(fence.params())
        returned = self._run(lambda tx: tx.named(sql, params).fetchall(), transaction=True,
                             mode="statement")
        if not returned and fence is not None:
            raise fence.lost()
        return in_seq_order(returned)

    def write_one(self, sql: str, params: Iterable[Any] = ()) -> int:
        """``sql`` alone, in autocommit: one round trip (see ``StoreBackend.write_one``)."""
        return self._run(lambda tx: tx.execute(sql, params).rowcount, transaction=True,
                         mode="statement")

    def submit(self, fn: Callable[[], T]) -> Future[T]:
        """``fn`` on a store writer thread (as many as the pool has connections): its round
        trips overlap what the caller does meanwhile (see ``StoreBackend.submit``)."""
        with self._writer_guard:
            if self._closed or self._closing:
                raise SessionDBError(f"the session store {self.label} is closed")
            if self._writer is None:
                self._writer = ThreadPoolExecutor(self.pool.max_size,
                                                  thread_name_prefix="hermes-store")
            return self._writer.submit(fn)

    def read(self, sql: str, params: Iterable[Any] = ()) -> list[Row]:
        return self._run(lambda tx: tx.execute(sql, params).fetchall(), transaction=False)

    def read_with(self, fn: Callable[[Tx], T], pipelined: bool = False) -> T:
        """``fn``'s reads on one pooled connection; ``pipelined``: sent together, one round trip
        (the rows are read after the pipeline's sync)."""
        if not pipelined:
            return self._run(fn, transaction=False)
        return self._run(lambda tx: self._pipelined_reads(tx, fn), transaction=False)

    @staticmethod
    def _pipelined_reads(tx: PGTx, fn: Callable[[Tx], T]) -> T:
        with tx.conn.pipeline():
            return fn(tx)

    def close(self) -> None:
        with self._writer_guard:
            if self._closed or self._closing:
                return
            self._closing = True  # no more ``submit``; what was submitted is written first
            writer, self._writer = self._writer, None
        if writer is not None:
            writer.shutdown(wait=True)
        self._closed = True
        with _POOLS_GUARD:
            entry = _POOLS.get(self._key)
            last = entry is not None and entry[0] is self.pool and entry[1] <= 1
            if last:
                del _POOLS[self._key]
            elif entry is not None and entry[0] is self.pool:
                entry[1] -= 1
        if last:
            self._locks.close()
            self.pool.close()

    def applied_migrations(self) -> list[str]:
        return self._run(lambda tx: postgres_schema.applied(tx.conn), transaction=False)

    def pool_stats(self) -> dict[str, int]:
        stats = self.pool.get_stats()
        size = int(stats.get("pool_size", 0))
        return {"size": size, "in_use": size - int(stats.get("pool_available", 0)),
                "max_size": self.pool.max_size}

    # -- advisory locks ------------------------------------------------------------------------

    def _lock_failed(self, exc: psycopg.Error) -> SessionDBError:
        return SessionDBError(f"advisory lock on {self.label}: {self._scrub(exc)}")

    def advisory_lock(self, name: str, wait: Optional[float]) -> ContextManager[bool]:
        """A session-level advisory lock, on the process's one lock connection (see
        ``pg_advisory``): if the process dies, its connection drops and the lock with it."""
        return self._locks.hold(name, wait)

    def lock_fence(self, name: str) -> Optional[LockFence]:
        """What a fenced write checks: this process still holds the advisory lock ``name``."""
        return self._locks.fence(name)

    # -- full-text search (tsvector) -----------------------------------------------------------

    def match_text(self, query: str) -> str:
        return to_tsquery_text(query)

    def is_query_error(self, exc: BaseException) -> bool:
        return isinstance(exc, (pg_errors.SyntaxError, pg_errors.DataException))

    def search_messages_sql(self, where: str) -> str:
        return pg_search.search_messages_sql(where)

    def session_hits(self, match: str, want: int, sort: str, child_filter: str,
                     relevance_pool: int,
                     filter_params: Iterable[Any] = ()) -> list[dict[str, Any]]:
        """See ``pg_search.session_hits``."""
        return pg_search.session_hits(self.read, match, want, sort, child_filter,
                                      relevance_pool, filter_params)

    def add_snippets(self, match: str, sort: str, hits: list[dict[str, Any]]) -> None:
        pg_search.add_snippets(self.read, match, hits)

    # -- health --------------------------------------------------------------------------------

    def integrity_problems(self) -> list[str]:
        problems = []
        orphans = self.read("SELECT count(*) FROM messages AS m WHERE NOT EXISTS"
                            " (SELECT 1 FROM sessions AS s WHERE s.id = m.session_id)")[0][0]
        if orphans:
            problems.append(f"{orphans} messages point to a missing session")
        return problems

    def rebuild_search_index(self) -> None:
        """The tsvector column is computed on write; rebuilding means reindexing its GIN index."""
        self.read_with(lambda tx: tx.execute("REINDEX INDEX idx_messages_search"))
