"""Turn leases: one turn of a session at a time across every gateway process sharing the store.

Why: with several workers (``hermes gateway run --workers N``) or several hosts on one PostgreSQL
store, two processes could otherwise run turns of one session at once and interleave its
transcript. Inside a process the runner already serialises a session's turns (its asyncio lock);
across processes the runner also holds ``SessionDB.advisory_lock("turn:<session id>")`` for the
whole turn. On PostgreSQL that is a session-level advisory lock on a connection of its own, so a
worker that is SIGKILLed mid-turn loses its lease the moment its connection drops: the next message
of that session is served by another worker at once, never after a timeout. With SQLite (one
process) there is nothing to share and nothing is taken.

A worker that finds the lease taken waits for it (the busy policy ``queue``, across processes), in
a thread of its own so the event loop never blocks, for at most ``gateway.turn_lease_wait``
seconds; past that the turn is refused with ``LeaseTimeout`` (a ``SessionBusy``: HTTP 409 on the
API, a short reply in chats). A turn running on another worker cannot be interrupted from here, so
the busy policy ``interrupt`` waits too.

The lease is fenced: a worker whose lock connection died (the database restarted, a backend was
terminated) has lost it, maybe to another worker, without knowing. Every message write of its turn
carries ``fence()`` and the store checks, in the write's own transaction, that our lock
connection still holds the lock; if not, nothing is written and the turn ends as interrupted
(the user's message, stored before the model was called, is kept).
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable, ContextManager, Optional

from gateway.turn_state import SessionBusy
from gateway.turn_threads import TurnThreads

log = logging.getLogger("gateway.lease")

DEFAULT_WAIT = 300.0  # seconds a turn waits for a session busy on another worker


class LeaseTimeout(SessionBusy):
    """Another process kept running a turn of this session for longer than we may wait."""

    def __init__(self, session_id: str, waited: float) -> None:
        super().__init__(f"Session {session_id} is running a turn on another gateway worker, "
                         f"still after {waited:.0f} s; send the message again once it has "
                         "answered.")
        self.session_id, self.waited = session_id, waited


def lease_name(session_id: str) -> str:
    return f"turn:{session_id}"


def is_shared(db: Any) -> bool:
    """True when other processes may use this store at once (PostgreSQL): leases are needed."""
    return getattr(db, "backend", "sqlite") == "postgresql"


class TurnLeases:
    """Takes and gives back turn leases for a runner; a no-op on a store no one else shares."""

    def __init__(self, db: Any, wait: float = DEFAULT_WAIT, max_waiters: int = 10_000) -> None:
        self.db, self.wait = db, wait
        self.shared = is_shared(db)
        # waiting for a lease must never take a thread a running turn needs (see TurnThreads)
        self._threads: Optional[TurnThreads] = (TurnThreads(max_waiters, name="lease")
                                                if self.shared else None)

    async def take(self, session_id: str, wait: Optional[float] = None,
                   then: Optional[Callable[[], object]] = None
                   ) -> Optional[ContextManager[bool]]:
        """Hold the session's lease (None on an unshared store). Raises ``LeaseTimeout`` after
        ``wait`` seconds (default ``self.wait``); a store error propagates (the turn fails
        cleanly). ``then``: the caller's first read under the lease, run on the lease's thread
        the moment it is held (no second thread hop a turn; not run on an unshared store); when it
        raises, the lease is given back and its error propagates."""
        if not self.shared:
            return None
        waited = self.wait if wait is None else wait
        held = self.db.advisory_lock(lease_name(session_id), wait=0)  # usually free: one round trip
        try:
            got, failed = await self._enter(held, then)
        except Exception as exc:  # a kept lock connection died (the database restarted): once more
            log.info("session %s: asking for the lease again (%s)", session_id, exc)
            held = self.db.advisory_lock(lease_name(session_id), wait=0)
            got, failed = await self._enter(held, then)
        if not got and failed is None and waited > 0:
            held = self.db.advisory_lock(lease_name(session_id), wait=waited)
            got, failed = await self._enter(held, then)
        if failed is not None:
            raise failed
        if not got:
            log.warning("session %s: lease still held by another worker after %.0f s",
                        session_id, waited)
            raise LeaseTimeout(session_id, waited)
        return held

    async def _enter(self, held: ContextManager[bool], then: Optional[Callable[[], object]]
                     ) -> tuple[bool, Optional[BaseException]]:
        """Enter ``held`` in a lease thread, then ``then`` there: (got it, ``then``'s error, the
        lease given back). A lease got after the caller was cancelled goes back."""
        def enter() -> tuple[bool, Optional[BaseException]]:
            if not held.__enter__():
                self._exit(held)
                return False, None
            try:
                if then is not None:
                    then()
            except Exception as exc:
                self._exit(held)
                return False, exc
            return True, None

        loop = asyncio.get_running_loop()
        entering = loop.run_in_executor(self._threads, enter)
        try:
            return await asyncio.shield(entering)
        except asyncio.CancelledError:  # the thread may still get it: give it back when it does
            entering.add_done_callback(lambda f: self._release_late(held, f))
            raise

    def fence(self, session_id: str) -> Any:
        """What the turn's writes check while we hold the session's lease
        (``SessionDB.lock_fence``): once our lock connection died the lease may be another
        worker's, and the store refuses them (``LeaseLost``). None on an unshared store."""
        return self.db.lock_fence(lease_name(session_id)) if self.shared else None

    async def release(self, held: Optional[ContextManager[bool]]) -> None:
        if held is not None:
            await asyncio.get_running_loop().run_in_executor(self._threads, self._exit, held)

    def _release_late(self, held: ContextManager[bool],
                      entered: "asyncio.Future[tuple[bool, Optional[BaseException]]]") -> None:
        if not entered.cancelled() and entered.exception() is None and entered.result()[0]:
            assert self._threads is not None
            self._threads.submit(self._exit, held)

    @staticmethod
    def _exit(held: ContextManager[bool]) -> None:
        try:
            held.__exit__(None, None, None)
        except Exception as exc:  # a dropped connection already released it
            log.warning("giving back a turn lease failed (%s); the connection's end releases it",
                        exc)

    def close(self) -> None:
        if self._threads is not None:
            self._threads.shutdown(wait=False)
