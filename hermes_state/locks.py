"""The compression lock of SPEC §5: a row per session naming its holder, with a lease.

One transaction per operation, so two processes (or hosts) can never both hold it: the lock
row is read ``FOR UPDATE`` on PostgreSQL and the insert yields to a concurrent one
(``ON CONFLICT DO NOTHING``). Every operation fails closed: a database error means "not yours".
"""
from __future__ import annotations

import time
from typing import Callable, Optional

from .backend import Tx, UsesBackend
from .common import SessionDBError, holder_is_dead, logger


class LocksMixin(UsesBackend):
    """The compression lock of a session."""

    def try_acquire_compression_lock(self, session_id: str, holder: str,
                                     ttl_seconds: float = 300) -> bool:
        """Take the session's compression lock, reclaiming an expired or dead holder's row first.

        Re-acquiring by the same holder refreshes the lease. Any database error returns False.
        """
        def tx(c: Tx) -> bool:
            now = time.time()
            row = c.execute("SELECT holder, expires_at FROM compression_locks "
                            "WHERE session_id = ?" + self._b.FOR_UPDATE, (session_id,)).fetchone()
            if row and row[0] != holder and (
                    (row[1] is not None and row[1] <= now) or holder_is_dead(row[0])):
                c.execute("DELETE FROM compression_locks WHERE session_id = ?", (session_id,))
                row = None
            if row is None:
                return c.execute("INSERT INTO compression_locks (session_id, holder, acquired_at,"
                                 " expires_at) VALUES (?, ?, ?, ?)"
                                 " ON CONFLICT (session_id) DO NOTHING",
                                 (session_id, holder, now, now + ttl_seconds)).rowcount == 1
            if row[0] == holder:
                c.execute("UPDATE compression_locks SET expires_at = ? WHERE session_id = ?",
                          (now + ttl_seconds, session_id))
                return True
            return False
        return self._lock_write(tx, "acquire", session_id)

    def _lock_write(self, fn: Callable[[Tx], bool], what: str, session_id: str) -> bool:
        failures: tuple[type[BaseException], ...] = (*self._b.errors, SessionDBError)
        try:
            return self._write(fn)
        except failures as exc:
            logger.warning("compression lock %s for %s failed: %s", what, session_id, exc)
            return False

    def refresh_compression_lock(self, session_id: str, holder: str,
                                 ttl_seconds: float = 300) -> bool:
        """Extend our own lease while a long summary runs; False if it is no longer ours."""
        return self._lock_write(lambda c: c.execute(
            "UPDATE compression_locks SET expires_at = ? WHERE session_id = ? AND holder = ?",
            (time.time() + ttl_seconds, session_id, holder)).rowcount > 0, "refresh", session_id)

    def release_compression_lock(self, session_id: str, holder: str) -> bool:
        """Delete the lock only if this holder owns it (never someone else's)."""
        return self._lock_write(lambda c: c.execute(
            "DELETE FROM compression_locks WHERE session_id = ? AND holder = ?",
            (session_id, holder)).rowcount > 0, "release", session_id)

    def get_compression_lock_holder(self, session_id: str) -> Optional[str]:
        """The live holder, or None when unlocked, expired, or held by a dead process."""
        rows = self._read("SELECT holder, expires_at FROM compression_locks WHERE session_id = ?",
                          (session_id,))
        if not rows:
            return None
        holder, expires_at = rows[0]
        if (expires_at is not None and expires_at <= time.time()) or holder_is_dead(holder):
            return None
        return holder
