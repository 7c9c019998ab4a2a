"""GatewayRunner: chat messages in, agent turns out: one turn at a time per session, many at once.

Why it is shaped like this:
- ``AIAgent.run_conversation`` is synchronous, so turns run in a thread pool while the event loop
  keeps every platform responsive.
- Runtime state (the lock, the cached agent) belongs to a *session id*, not to a key: several keys
  may name one session (an API header naming a session id, a ``previous_response_id`` chain next to
  a named conversation), and they must share one lock and one agent, or one session would run two
  turns at once and a cached agent would miss the other key's exchanges.
- A message first takes its key's FIFO lock (so one chat's messages keep their arrival order while
  the key is resolved to its session), then the session's lock. Turns of one session never overlap
  (busy policy ``queue``), or the running turn is interrupted first (``interrupt``). Replies are
  sent while the locks are held so they arrive in order too.
- SPEC §7 reactions live in ``gateway.reactions``; slash commands in ``gateway.commands``; chat
  messages become turns in ``gateway.chat_events``, sessions are held in ``gateway.session_hold``
  (mixins of the runner), agents are made in ``gateway.agent_factory``.
- Every agent let go is ``close()``d; requests borrow clients from the process's pool, so idle
  cached agents hold no sockets. Past ``max_cached_agents`` the oldest idle tenth goes at once.
- A stop (/stop, a newer message under ``interrupt``, an API client that went away) also reaches a
  turn that was accepted but has not started: it never runs (its message is kept). A running turn is
  interrupted again and again until it ends, since an agent clears interrupts when its turn begins.
- Throwaway API turns (no session key) run on a private in-memory store: no transcript is written.
- On shutdown nothing received is lost: running turns get a bounded drain, then what is still
  queued or running is stored as the user's message.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Awaitable, Callable, Optional

from gateway import delivery, skills
from gateway.access import AccessControl
from gateway.agent_factory import (AgentFactory, close_agent,  # noqa: F401 - re-exported
                                   default_agent_factory, interrupt_agent)
from gateway.capacity import MAX_LIMIT, TurnGauge
from gateway.chat_events import ChatEvents
from gateway.commands import HELP_TEXT, command, format_usage  # noqa: F401 - re-exported
from gateway.lease import DEFAULT_WAIT as LEASE_WAIT
from gateway.lease import LeaseTimeout, TurnLeases  # noqa: F401 - LeaseTimeout re-exported
from gateway.platform_start import PlatformStarter
from gateway.platforms.base import PlatformAdapter
from gateway.reactions import (SOFT_DEFERRED, TurnOutcome,  # noqa: F401
                               persist_user_message, react, short_error)
from gateway.session_hold import SessionHolding
from gateway.sessions import SessionMap, new_session_id, owner_of, platform_of
from gateway.turn_threads import TurnThreads
from gateway.turn_state import (REARM_SECONDS, STOPPED_BEFORE_START,  # noqa: F401
                                KeyLocks, SessionBusy, SessionState, TurnHandle, TurnRequest)

log = logging.getLogger("gateway.runner")


class GatewayRunner(ChatEvents, SessionHolding):
    def __init__(self, *, session_db: Any, agent_factory: AgentFactory,
                 adapters: list[PlatformAdapter] = (), access: Optional[AccessControl] = None,
                 busy_policy: str = "queue", max_workers: int = 128, max_cached_agents: int = 1000,
                 typing_interval: float = 4.0, turn_limit: int = MAX_LIMIT,
                 lease_wait: float = LEASE_WAIT) -> None:
        if busy_policy not in ("queue", "interrupt"):
            raise ValueError("gateway.busy_policy must be 'queue' or 'interrupt', not "
                             f"{busy_policy!r}")
        self.db = session_db
        self.sessions = SessionMap(session_db)
        self.agent_factory = agent_factory
        self.adapters = {a.name: a for a in adapters}
        self.platforms = PlatformStarter(list(self.adapters.values()))  # each on its own, retried
        self.access = access or AccessControl()
        self.busy_policy = busy_policy
        self.max_cached_agents = max_cached_agents
        self.typing_interval = typing_interval
        self.pool = TurnThreads(max_workers)  # never blocks the event loop to start a thread
        self.capacity = TurnGauge(turn_limit)  # turns accepted at once; past it they are refused
        self.leases = TurnLeases(session_db, lease_wait, turn_limit)  # across processes
        self.accepting = False
        self._states: dict[str, SessionState] = {}  # session id -> state
        # key -> the session it last ran in (for /stop, interrupts)
        self._key_sid: dict[str, str] = {}
        self._key_locks = KeyLocks()
        self._pending: list[TurnRequest] = []  # received and not started yet, in arrival order
        self._tasks: set[asyncio.Task[Any]] = set()
        self.models: dict[str, str] = {}  # key -> model chosen with /model
        self.turns_completed = 0

    # -- lifecycle -------------------------------------------------------------------------------
    async def start(self) -> None:
        """Accept messages; each platform connects on its own (one that cannot is retried in the
        background while the others serve: ``self.platforms``)."""
        self.accepting = True
        for adapter in self.adapters.values():
            adapter.set_message_handler(self.handle_event)
            if hasattr(adapter, "set_access_check"):
                adapter.set_access_check(
                    lambda user, name=adapter.name: self.access.is_allowed(name, user))
        delivery.install_live(self.adapters, asyncio.get_running_loop())  # send_message, cron
        await self.platforms.start()

    async def shutdown(self, drain_timeout: float = 30.0, grace: float = 5.0) -> bool:
        """Stop taking messages, let turns finish for up to ``drain_timeout``, persist the rest.
        Returns True when no turn thread is left running."""
        self.accepting = False
        await self.platforms.stop()  # no more connection attempts
        for adapter in self.adapters.values():
            # what they already fetched still arrives; handle_event stores it
            await adapter.stop_receiving()
        await asyncio.sleep(0)
        pending = {t for t in self._tasks if not t.done()}
        if pending:
            log.info("draining %d turn(s) for up to %.0fs", len(pending), drain_timeout)
            _, pending = await asyncio.wait(pending, timeout=drain_timeout)
        if pending:
            log.warning("%d turn(s) still running after the drain; interrupting and persisting",
                        len(pending))
            for req in self._pending:
                req.abandoned = True
            for st in self._states.values():
                if st.running is not None and st.agent is not None:
                    interrupt_agent(st.agent, "gateway shutting down")
            _, pending = await asyncio.wait(pending, timeout=grace)
            # turns stuck in a provider call: keep the user's words
            for st in list(self._states.values()):
                if st.running is not None:
                    await asyncio.to_thread(self.sessions.ensure_user_message, st.sid,
                                            st.running.text, st.running.mark)
            await self._persist_abandoned()
        await asyncio.to_thread(skills.wait_for_reviews, grace)  # their one line can still be sent
        for adapter in self.adapters.values():
            await adapter.stop()  # replies of drained turns went out above; now disconnect
        # stored-only messages delivered during stop()
        late = {t for t in self._tasks if not t.done()}
        if late:
            await asyncio.wait(late, timeout=grace)
        for st in self._states.values():
            if st.running is None:  # a turn thread still inside its agent keeps it
                self.drop_agent(st)
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.leases.close()
        delivery.uninstall_live(self.adapters)
        return not pending

    async def _persist_abandoned(self) -> None:
        for req in [r for r in self._pending if r.abandoned and r.key is not None]:
            sid = await asyncio.to_thread(self.sessions.get_or_create, req.key, req.user_id)
            await asyncio.to_thread(self.db.append_message, sid, "user", req.text)
            log.info("persisted an unserved message for %s", req.key)

    # -- chat platforms: gateway.chat_events; sessions held: gateway.session_hold ------------
    def spawn(self, coro: Awaitable[Any], req: Optional[TurnRequest]) -> asyncio.Task[Any]:
        if req is not None:  # synchronously, so the drain sees it even before the task runs
            self._pending.append(req)
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def session_counts(self) -> dict[str, int]:
        """Live session states and how many hold a cached agent (for status reports)."""
        return {"sessions": len(self._states),
                "cached_agents": sum(1 for st in self._states.values() if st.agent is not None)}

    def forget_key(self, key: str) -> None:
        """The key was bound to another session in the store: the next turn looks it up again."""
        self._key_sid.pop(key, None)

    def live_state(self, key: str) -> Optional[SessionState]:
        sid = self._key_sid.get(key)
        return self._states.get(sid) if sid else None

    def stop_turn(self, key: str, message: Optional[str] = None,
                  notice: bool = False) -> Optional[str]:
        """Stop the turn running in the key's session (``"running"``), else the key's next turn that
        was accepted but has not started (``"pending"``: it will not run; with ``notice`` the chat
        is told); None when there is nothing to stop."""
        st = self.live_state(key)
        if st is not None and st.running is not None and not st.running.stop_requested:
            self.stop_request(st.running, message)
            return "running"
        for req in self._pending:
            if (req.key == key and not req.started and not req.stop_requested
                    and not req.persist_only):
                req.stop_notice = notice
                self.stop_request(req, message)
                return "pending"
        return None

    def stop_request(self, req: TurnRequest, message: Optional[str] = None) -> bool:
        """Stop one turn. Not started yet: it never runs. Running: its agent is interrupted, and the
        interrupt is repeated until the turn ends, because an agent clears interrupts when its turn
        begins (one that lands between "thread started" and "turn begun" would be lost)."""
        if req.done or req.stop_requested:
            return False
        req.stop_requested, req.stop_message = True, message
        if req.started:
            st = req.state
            if st is not None and st.agent is not None:
                interrupt_agent(st.agent, message)  # at once, before a caller lets the agent go on
            self.spawn(self._keep_interrupting(req), None)
        return True

    async def _keep_interrupting(self, req: TurnRequest) -> None:
        while not req.done:
            st = req.state
            if st is not None and st.agent is not None:
                interrupt_agent(st.agent, req.stop_message)
            await asyncio.sleep(REARM_SECONDS)

    def is_busy(self, session_id: str) -> bool:
        """A turn (or a chat command) holds or waits for the session."""
        st = self._states.get(session_id)
        return st is not None and (st.running is not None or st.lock.locked() or st.holders > 0)

    async def delete_session(self, session_id: str) -> bool:
        """Delete a stored session (messages, keys, responses); SessionBusy while a turn runs or
        waits. Keys that named it lead to a fresh session afterwards. False when there was no such
        session."""
        if self.is_busy(session_id):
            raise SessionBusy(session_id)
        st = self._states.get(session_id) or self._states.setdefault(session_id,
                                                                     SessionState(session_id))
        st.holders += 1
        await st.lock.acquire()  # free (checked above): no turn can start while the rows go
        try:
            st.lease = await self.leases.take(session_id, wait=0)  # LeaseTimeout: busy elsewhere
            deleted = await asyncio.to_thread(self.db.delete_session, session_id)
            st.deleted = True
            self.drop_agent(st)
            self._key_sid = {k: sid for k, sid in self._key_sid.items() if sid != session_id}
            return bool(deleted)
        finally:
            try:
                await self._give_back_lease(st, remember=False)
            finally:
                st.lock.release()
                self._let_go(st)

    async def rotate(self, st: SessionState, key: str, reason: str,
                     user_id: Optional[str]) -> tuple[Optional[str], str]:
        """A fresh session for ``key`` and every key sharing ``st``; the caller holds ``st``."""
        old, new = await asyncio.to_thread(self.sessions.rotate, key, reason, user_id, st.sid)
        st.moved_to = new
        self.drop_agent(st)
        return old, new

    def drop_agent(self, st: SessionState) -> None:
        agent, st.agent = st.agent, None
        if agent is not None:
            close_agent(agent)

    async def agent_for(self, st: SessionState, key: Optional[str]) -> Any:
        if st.agent is None:
            await asyncio.get_running_loop().run_in_executor(
                self.pool, lambda: self._agent_here(st, key))
        return st.agent

    def _agent_here(self, st: SessionState, key: Optional[str]) -> Any:
        """The session's cached agent, made on this (turn) thread when there is none."""
        if st.agent is None:
            platform = platform_of(key) if key else st.platform
            model = self.models.get(key) if key else None
            extra = {"store": st.store} if st.store is not None else {}
            st.agent = self.agent_factory(session_id=st.sid, platform=platform, model=model,
                                          **extra)
        return st.agent

    # -- turns (shared by chats and the API server) ------------------------------------------------
    async def run_turn(self, key: Optional[str], text: str, **kwargs: Any) -> TurnOutcome:
        """One turn for ``key`` (a persistent session), or a throwaway session when ``key`` is None.
        The turn runs to completion even if the caller goes away (see ``submit`` to stop it)."""
        return await self.submit(key, text, **kwargs).outcome()

    def submit(self, key: Optional[str], text: str, *, platform: str = "api_server",
               system_message: Optional[str] = None,
               conversation_history: Optional[list[dict[str, Any]]] = None,
               stream_callback: Optional[Callable[[str], None]] = None,
               tool_progress_callback: Optional[Callable[[dict[str, Any]], None]] = None,
               approval_callback: Optional[Callable[[str, str], str]] = None,
               origin: Optional[dict[str, Any]] = None) -> TurnHandle:
        """Accept a turn (it is queued behind the session's running turn) and return its handle.
        A throwaway turn (``key`` None) runs on a private in-memory store: nothing of it is saved.
        ``approval_callback`` answers the turn's approval questions (none: they are denied).
        ``origin`` (``{platform, chat_id, user_id}``) makes the turn act for that user, not the
        owner (a webhook's turn reaches only its own data).
        Raises ``TurnLimitReached`` when the process already holds its limit of turns."""
        self.capacity.admit()
        req = TurnRequest(text, key, None, system_message, conversation_history, stream_callback,
                          tool_progress_callback, approval_callback=approval_callback,
                          origin=origin)
        if key is None:
            task = self.spawn(self._stateless(req, platform), None)
        else:
            async def locked() -> TurnOutcome:
                async with self.hold(key) as st:
                    if req.abandoned:
                        return TurnOutcome("failed", "The gateway is shutting down; your message "
                                                     "was saved.", st.sid)
                    return await self._run_locked(st, req)

            task = self.spawn(locked(), req)
        task.add_done_callback(self.capacity.release)
        return TurnHandle(self, req, task)

    async def _stateless(self, req: TurnRequest, platform: str) -> TurnOutcome:
        from hermes_state import SessionDB

        st = SessionState(new_session_id(), platform)
        st.store = SessionDB(":memory:")
        try:
            return await self._run_locked(st, req, stateless=True)
        finally:
            self.drop_agent(st)  # nobody will use it again: release its connections now
            st.store.close()

    async def _run_locked(self, st: SessionState, req: TurnRequest,
                          stateless: bool = False) -> TurnOutcome:
        """Run one turn; the caller holds ``st.lock`` (or owns ``st`` outright when stateless)."""
        loop = asyncio.get_running_loop()
        if req in self._pending:
            self._pending.remove(req)
        if req.stop_requested:
            return await self._stopped_before_start(st, req, stateless)
        st.running, req.started, req.state = req, True, st
        st.last_used = time.monotonic()
        who = req.key or st.sid
        result: dict[str, Any]
        try:
            def on_status(kind: str, message: str) -> None:
                """Warnings (a failed summary, a cooldown) reach the chat; the rest only the log."""
                log.info("%s: %s: %s", who, kind, message)
                if kind == "warning" and req.notify is not None:
                    asyncio.run_coroutine_threadsafe(req.notify(f"⚠ {message}"), loop)

            def call() -> Any:
                """One thread hop: the store's mark, the agent (made if none), the turn."""
                since = self.capacity.started()
                try:
                    from agent.callbacks import AgentHooks
                    fresh = not stateless and self.sessions.take_fresh(st.sid, st.taken_mark)
                    if not stateless:  # before the turn writes: what a stop looks after
                        req.mark = self.sessions.turn_mark(st.sid, fresh, st.taken_mark)
                    agent = self._agent_here(st, req.key)
                    agent.hooks = AgentHooks(status=on_status, tool_progress=req.tool_callback,
                                             approval=req.approval_callback)  # None: denied
                    # a cronjob created in this turn is delivered back here
                    agent.origin = req.origin
                    agent.write_fence = st.fence  # writes stop if our turn lease is lost mid-turn
                    agent.owner = owner_of(req.origin)  # a chat user reaches only their own data
                    if req.stop_requested:  # stopped while the agent was being made
                        return {"interrupted": True, "completed": False, "final_response": None}
                    if fresh:  # only now: a stopped turn's kept message would be in the store
                        agent.start_empty()
                    return agent.run_conversation(req.text, system_message=req.system_message,
                                                  conversation_history=req.conversation_history,
                                                  stream_callback=req.stream_callback)
                finally:
                    self.capacity.finished(since)

            result = await loop.run_in_executor(self.pool, call)
            if not isinstance(result, dict):
                result = {"failed": True, "error": f"agent returned {type(result).__name__}"}
        except Exception as exc:
            log.exception("turn for %s raised", who)
            result = {"failed": True, "completed": False, "error": f"{type(exc).__name__}: {exc}"}
        finally:
            st.running, req.done = None, True
            st.last_used = time.monotonic()
        if req.stop_requested and not stateless and not result.get("final_response"):
            await persist_user_message(self, st, req)  # a stop never costs the user their words
        outcome = await react(self, st, req, result, stateless)
        self.turns_completed += 1
        self._evict_idle()
        return outcome

    async def _stopped_before_start(self, st: SessionState, req: TurnRequest,
                                    stateless: bool) -> TurnOutcome:
        req.done = True
        if not stateless:
            req.mark = await asyncio.to_thread(self.sessions.mark, st.sid)
            await persist_user_message(self, st, req)
        log.info("%s: stopped before it started", req.key or st.sid)
        return TurnOutcome("interrupted", STOPPED_BEFORE_START if req.stop_notice else "", st.sid,
                           {"interrupted": True, "completed": False, "partial": True})

    def _evict_idle(self) -> None:
        """At most ``max_cached_agents`` live agents: past it, the least recently used idle ones
        go down to 90%, so a gateway at its limit scans once a tenth of the cache, not per turn."""
        if len(self._key_sid) > 4 * (len(self._states) + 256):
            self._key_sid = {k: sid for k, sid in self._key_sid.items() if sid in self._states}
        limit = self.max_cached_agents
        live = ([] if len(self._states) <= limit
                else [s for s in self._states.values() if s.agent is not None])
        if len(live) <= limit:
            return
        idle = sorted((s for s in live
                       if s.holders == 0 and s.running is None and not s.lock.locked()),
                      key=lambda s: s.last_used)
        for st in idle[: len(live) - (limit - limit // 10)]:
            self.drop_agent(st)
            self._states.pop(st.sid, None)
        self._key_sid = {k: sid for k, sid in self._key_sid.items() if sid in self._states}
