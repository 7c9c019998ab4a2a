"""Holding a session (a mixin of GatewayRunner): the key's FIFO lock (arrival order), then the
lock of the session the key resolves to, shared by every key bound to it; on a shared store the
session's cross-process lease too, and following a conversation another worker moved."""
from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import AsyncIterator, Optional

from gateway.sessions import platform_of
from gateway.turn_state import SessionState

log = logging.getLogger("gateway.runner")


class SessionHolding:
    """Needs the runner's _key_locks, _key_sid, _states, sessions, leases, db and drop_agent."""

    @contextlib.asynccontextmanager
    async def hold(self, key: str, user_id: Optional[str] = None) -> AsyncIterator[SessionState]:
        """The key's session, locked: its FIFO key lock first (arrival order), then the lock of the
        session the key resolves to, shared with every other key bound to that session."""
        async with self._key_locks.hold(key):
            st = await self._acquire(key, user_id)
            try:
                yield st
            finally:
                st.last_used = time.monotonic()
                try:
                    await self._give_back_lease(st)
                finally:
                    st.lock.release()
                    self._let_go(st)

    async def _acquire(self, key: str, user_id: Optional[str]) -> SessionState:
        while True:
            # a key seen before whose session is live: no store round trip
            sid = self._key_sid.get(key)
            if sid is None or sid not in self._states:
                sid = await asyncio.to_thread(self.sessions.get_or_create, key, user_id)
            st = self._states.get(sid)
            if st is None:
                st = self._states[sid] = SessionState(sid, platform_of(key))
            st.holders += 1
            try:
                await st.lock.acquire()
            except BaseException:
                self._let_go(st)
                raise
            if st.moved_to is None and not st.deleted:
                try:
                    moved = self.leases.shared and await self._take_lease(st, key)
                except BaseException:
                    st.lock.release()
                    self._let_go(st)
                    raise
                if not moved:
                    self._key_sid[key] = sid
                    return st
            # rotated while we waited: follow the conversation to its new session
            moved_to = st.moved_to
            st.lock.release()
            self._let_go(st)
            self._key_sid.pop(key, None)
            if moved_to is not None and await asyncio.to_thread(self.sessions.lookup, key) == sid:
                await asyncio.to_thread(self.db.bind_session_key, key, moved_to)

    async def _take_lease(self, st: SessionState, key: str) -> bool:
        """Hold the session's cross-process lease (gateway.lease), then look at the store as it is
        now: True when another worker moved the key elsewhere (rotated or deleted the session) while
        we waited, so the caller follows it. A cached agent that missed turns another worker wrote
        is dropped: the next one loads the transcript from the store."""
        read: list[tuple[Optional[str], int]] = []
        st.lease = await self.leases.take(
            st.sid, then=lambda: read.append(self.sessions.position(key, st.sid)))
        st.fence = self.leases.fence(st.sid)
        current, mark = read[0]
        if current != st.sid:
            await self._give_back_lease(st, remember=False)
            st.moved_to, st.deleted = current, current is None
            self.drop_agent(st)
            return True
        if st.agent is not None and mark != st.seen_mark:
            log.info("%s: session %s changed on another worker; reloading its transcript", key,
                     st.sid)
            self.drop_agent(st)
        st.taken_mark = mark  # the turn's own mark: nobody else writes while we hold the lease
        return False

    async def _give_back_lease(self, st: SessionState, remember: bool = True) -> None:
        """Release the lease, first noting where the store stands as far as our cached agent
        knows (its highest row id, no round trip: while we held the lease nobody else wrote, and
        a row written past the agent's, e.g. a stopped turn's message, only means a reload)."""
        held, st.lease, st.fence, st.taken_mark = st.lease, None, None, None
        if held is None:
            return
        try:
            if remember:
                st.seen_mark = st.agent.store_position if st.agent is not None else None
        finally:
            await self.leases.release(held)

    def _let_go(self, st: SessionState) -> None:
        st.holders -= 1
        if (st.holders == 0 and (st.agent is None or st.moved_to or st.deleted)
                and self._states.get(st.sid) is st):
            del self._states[st.sid]  # nothing cached: the state is rebuilt on demand
