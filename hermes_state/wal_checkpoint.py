"""SQLite's WAL checkpoints, run on a thread of their own instead of inside a writer's commit.

Why: every commit of a message adds about 16 pages to the write-ahead log (the row, its
indexes, the session row and its indexes, three FTS5 segments), so SQLite's own checkpoint
(at 1,000 pages) ran about every 60 appends, inside that append's COMMIT, copying the log back
into the file and syncing it: 20 ms at p99 on this machine's disk, up to a second once. A
gateway's turns share one connection and its lock, so every turn waited behind that one.

Now the writer's connection never checkpoints by itself (``wal_autocheckpoint = 0``). After
every ``EVERY`` commits it asks this module's thread for a PASSIVE checkpoint on a connection of
its own, which neither waits for nor blocks the writer and copies the bulk. The log restarts
from its beginning only after a checkpoint that no write overlapped, so when commits came in
during that pass, the writer's next commit copies just those (a few pages: ~1-4 ms here,
against ~17 ms for the 60 commits SQLite copied inline). Should the thread fail or fall behind
(none done in ``INLINE_AFTER`` commits), the writer does a whole one itself, as before.
Other processes on the same file keep SQLite's default and may checkpoint it too: harmless.
"""
from __future__ import annotations

import os
import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Optional

from .common import logger

EVERY = 200  # commits between two checkpoints: ~12 MB of log
PASSES, TAIL_FRAMES = 2, 64  # a second pass when more than ~4 commits are left for the writer
INLINE_AFTER = 4 * EVERY  # commits without a finished checkpoint: the writer does one itself

_POOL: Optional[ThreadPoolExecutor] = None
_POOL_GUARD = threading.Lock()


def _forget_pool() -> None:
    """In a forked child: the parent's thread is not there, so a new pool is made on demand."""
    global _POOL
    _POOL = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def _pool() -> ThreadPoolExecutor:
    global _POOL
    with _POOL_GUARD:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(1, thread_name_prefix="hermes-checkpoint")
        return _POOL


class Checkpointer:
    """The checkpoints of one SQLite file for one writer connection."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._guard = threading.Lock()  # held while a checkpoint runs: ``close`` waits for it
        self._flags = threading.Lock()  # ``_queued`` and ``_closed``
        self._conn: Optional[sqlite3.Connection] = None
        self._commits = 0  # written by the writer only
        self._done_at = 0  # the commit count the last finished checkpoint started at
        self._queued = False
        self._closed = False
        self._tail_due = False  # a background pass was overlapped: the writer copies the rest

    @staticmethod
    def take_over(conn: sqlite3.Connection) -> None:
        """Stop ``conn`` (the writer's) from checkpointing inside its commits."""
        conn.execute("PRAGMA wal_autocheckpoint = 0").fetchall()

    def committed(self, conn: sqlite3.Connection) -> None:
        """The writer committed on ``conn`` (under its own lock). Never raises: the commit is
        done, and a caller told otherwise could write its rows twice."""
        self._commits += 1
        try:
            if self._tail_due:
                self._tail_due = False
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            elif self._commits - self._done_at >= INLINE_AFTER:  # the thread failed or is behind
                with self._guard:  # no pass of its own meanwhile: the log can restart after this
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                self._done_at = self._commits
            elif self._commits % EVERY == 0:
                self._request()
        except sqlite3.Error as exc:  # the next checkpoint copies what this one did not
            logger.debug("checkpoint of %s after a commit failed: %s", self._path, exc)

    def _request(self) -> None:
        with self._flags:
            if self._queued or self._closed:
                return
            self._queued = True
        try:
            _pool().submit(self._run)
        except RuntimeError:  # the interpreter is shutting down: the writer's close checkpoints
            with self._flags:
                self._queued = False

    def _run(self) -> None:
        with self._flags:
            self._queued = False
        with self._guard:
            if self._closed:
                return
            start = self._commits
            try:
                if self._conn is None:
                    self._conn = sqlite3.connect(self._path, isolation_level=None,
                                                 check_same_thread=False)
                for _ in range(PASSES):  # each pass copies what the writer added during the last
                    [(_busy, log, copied)] = self._conn.execute(
                        "PRAGMA wal_checkpoint(PASSIVE)").fetchall()  # all: no statement left open
                    if log - copied <= TAIL_FRAMES:
                        break
                self._done_at = start
                self._tail_due = True
            except sqlite3.Error as exc:  # the writer checkpoints inline once far enough behind
                logger.debug("background checkpoint of %s failed: %s", self._path, exc)

    @staticmethod
    def settle(timeout: float = 30.0) -> None:
        """Wait until the checkpoints asked for so far have run (one thread, in order)."""
        _pool().submit(lambda: None).result(timeout)

    def close(self) -> None:
        """No more checkpoints; this connection closed, so the writer's close is the last one
        (SQLite then checkpoints the whole log and deletes it)."""
        with self._flags:
            self._closed = True
        with self._guard:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
