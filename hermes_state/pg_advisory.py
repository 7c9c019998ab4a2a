"""Session-level PostgreSQL advisory locks of one process, all held on one connection of its own.

Why one connection: a lease held for a whole turn used to hold a connection for that turn, so a
worker with hundreds of turns in flight needed hundreds of connections (past `max_connections`)
and paid a fresh connect for most turns. A session-level advisory lock belongs to the connection,
so one connection can hold every lease of the process and they all die with it (a SIGKILLed worker
blocks nothing). PostgreSQL lets the same connection take a lock it already holds, so exclusion
between threads of this process is kept here, by name. Waiting polls ``pg_try_advisory_lock``
(a blocking ``pg_advisory_lock`` would stall every other lock on the shared connection).
"""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Callable, Iterator, Optional

import psycopg

from .backend import Tx
from .common import LeaseLost, logger

POLL_FIRST = 0.02  # seconds between tries while waiting; doubles up to POLL_MAX
POLL_MAX = 0.25
_TRY = "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))"
_UNLOCK = "SELECT pg_advisory_unlock(hashtextextended(%s, 0))"
_WHO = "SELECT pid, backend_start FROM pg_stat_get_activity(pg_backend_pid())"
# Is the backend that took the lock still the one alive under that pid? Our locks are held until
# the turn (or compaction) that writes under them is over, so they are lost only with their
# connection: a backend gone (or its pid reused: a different start) means the lock went with it.
# ``pg_stat_get_activity(pid)`` reads that one backend's entry; the exact lock lookup through
# ``pg_locks`` copied the whole lock table on every fenced write (0.25 ms with one lock held,
# 1 ms with 1,000). (Named placeholders: the condition also fences ``appends.PG_APPEND``.)
HELD_SQL = ("EXISTS (SELECT 1 FROM pg_stat_get_activity(%(lock_pid)s) AS a"
            " WHERE a.backend_start = %(lock_started)s)")
_HELD = "SELECT " + HELD_SQL.replace("%(lock_pid)s", "?").replace("%(lock_started)s", "?")


@dataclass(frozen=True)
class LockFence:
    """Proof, checked inside a write transaction, that the lock ``name`` is still held by the
    backend (``pid``, started at ``started``) that took it: a lock connection that died lost the
    lock, and another worker may have it now, so the write must not happen."""

    name: str
    pid: int
    started: datetime

    def params(self) -> dict[str, object]:
        """``HELD_SQL``'s parameters."""
        return {"lock_pid": self.pid, "lock_started": self.started}

    def lost(self) -> LeaseLost:
        return LeaseLost(f"the lock {self.name!r} was lost (its database connection ended); "
                         "another worker may hold it now")

    def check(self, tx: Tx) -> None:
        if not tx.execute(_HELD, (self.pid, self.started)).fetchone()[0]:
            raise self.lost()


class AdvisoryLocks:
    """``hold(name, wait)``: True when this process got the lock (held for the block)."""

    def __init__(self, connect: Callable[[], psycopg.Connection],
                 failed: Callable[[psycopg.Error], Exception]) -> None:
        self._connect = connect
        self._failed = failed  # turns a driver error into the store's own (URL without password)
        self._conn: Optional[psycopg.Connection] = None
        self._mutex = threading.Lock()  # one statement at a time on the shared connection
        # name -> (pid, start) of the backend whose connection holds it
        self._held: dict[str, tuple[int, datetime]] = {}
        self._who: tuple[int, datetime] = (0, datetime.min)  # the lock connection's backend
        self._released = threading.Condition(threading.Lock())

    def _connection(self) -> psycopg.Connection:
        """Caller holds ``_mutex``. A dropped connection took its locks with it: forget them."""
        if self._conn is None or self._conn.closed or self._conn.broken:
            if self._conn is not None and self._held:
                logger.warning("advisory locks: the connection dropped; %d held lock(s) were lost",
                               len(self._held))
            self._conn = self._connect()
            row = self._conn.execute(_WHO).fetchone()
            self._who = (int(row[0]), row[1])
        return self._conn

    def _try(self, name: str) -> bool:
        with self._released:
            if name in self._held:  # another thread of this process has it
                return False
            try:
                with self._mutex:
                    conn = self._connection()
                    got = bool(conn.execute(_TRY, (name,)).fetchone()[0])
            except psycopg.OperationalError as exc:  # asked again, it reconnects
                raise self._failed(exc) from None
            if got:
                self._held[name] = self._who
            return got

    def fence(self, name: str) -> Optional[LockFence]:
        """A ``LockFence`` for a lock this process holds, else None."""
        with self._released:
            who = self._held.get(name)
        return None if who is None else LockFence(name, *who)

    def _release(self, name: str) -> None:
        with self._released:
            self._held.pop(name, None)
            self._released.notify_all()
            with self._mutex:
                conn = self._conn
                if conn is None or conn.closed or conn.broken:
                    return  # the lock went with its connection
                try:
                    conn.execute(_UNLOCK, (name,))
                except psycopg.Error as exc:
                    logger.warning("advisory lock %r: release failed (%s)", name,
                                   type(exc).__name__)

    @contextmanager
    def hold(self, name: str, wait: Optional[float]) -> Iterator[bool]:
        deadline = None if wait is None else time.monotonic() + max(0.0, wait)
        pause = POLL_FIRST
        got = self._try(name)
        while not got and (deadline is None or time.monotonic() < deadline):
            left = pause if deadline is None else min(pause, max(0.0, deadline - time.monotonic()))
            with self._released:  # a release here wakes us early; one elsewhere is polled for
                self._released.wait(left)
            pause = min(pause * 2, POLL_MAX)
            got = self._try(name)
        try:
            yield got
        finally:
            if got:
                self._release(name)

    def close(self) -> None:
        with self._mutex:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
