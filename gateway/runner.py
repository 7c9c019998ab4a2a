"""GatewayRunner: chat messages in, agent turns out — one turn at a time per session, many sessions at once.

Why it is shaped like this:
- ``AIAgent.run_conversation`` is synchronous, so turns run in a thread pool while the event loop
  keeps every platform responsive.
- Runtime state (the lock, the cached agent) belongs to a *session id*, not to a key: several keys
  may name one session (an API header naming a session id, a ``previous_response_id`` chain next to a
  named conversation), and they must share one lock and one agent, or one session would run two turns
  at once and a cached agent would miss the other key's exchanges.
- A message first takes its key's FIFO lock (so one chat's messages keep their arrival order while
  the key is resolved to its session), then the session's lock. Turns of one session never overlap
  (busy policy ``queue``), or the running turn is interrupted first (``interrupt``). Replies are sent
  while the locks are held so they arrive in order too.
- SPEC §7 reactions live in ``gateway.reactions``; slash commands in ``gateway.commands``.
- Every agent the runner lets go is ``close()``d (a client it made for summaries has connections);
  requests borrow clients from the process's pool (``agent.providers.client_pool``), so idle cached
  agents hold no sockets.
- A stop (/stop, a newer message under ``interrupt``, an API client that went away) also reaches a turn
  that was accepted but has not started: it never runs (its message is kept). A running turn is
  interrupted again and again until it ends, since an agent clears interrupts when its turn begins.
- Throwaway API turns (no session key) run on a private in-memory store: no transcript is written.
- On shutdown nothing already received is lost: running turns get a bounded drain, then anything
  still queued or running is written to the store as the user's message.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any, AsyncIterator, Awaitable, Callable, Optional

from gateway import delivery, replies, skills
from gateway.access import AccessControl
from gateway.capacity import BUSY_CHAT_REPLY, MAX_LIMIT, TurnGauge, TurnLimitReached
from gateway.commands import HELP_TEXT, command, format_usage  # noqa: F401 - re-exported
from gateway.lease import DEFAULT_WAIT as LEASE_WAIT
from gateway.lease import LeaseTimeout, TurnLeases  # noqa: F401 - LeaseTimeout re-exported
from gateway.platform_start import PlatformStarter
from gateway.platforms.base import MessageEvent, PlatformAdapter
from gateway.reactions import (SOFT_DEFERRED, TurnOutcome, persist_user_message, react,  # noqa: F401
                               short_error)
from gateway.sessions import SessionMap, key_for_event, new_session_id, owner_of, platform_of
from gateway.turn_threads import TurnThreads
from gateway.turn_state import (REARM_SECONDS, STOPPED_BEFORE_START, KeyLocks, SessionBusy,  # noqa: F401
                                SessionState, TurnHandle, TurnRequest)

log = logging.getLogger("gateway.runner")

AgentFactory = Callable[..., Any]  # (session_id=, platform=, model=) -> AIAgent-like


async def _noop_reply(_text: str) -> None:
    return None


def close_agent(agent: Any) -> None:
    close = getattr(agent, "close", None)
    if callable(close):
        try:
            close()
        except Exception as exc:
            log.debug("closing an agent: %s", exc)


def default_agent_factory(config: Any = None, session_db: Any = None) -> AgentFactory:
    """Agents for real: provider settings resolved once from config/env, one shared SessionDB (a
    throwaway turn passes its own ``store``).

    Least privilege (agent.tool_policy): the gateway's own toolsets (no terminal by default) and
    file tools confined to its working directory, whoever is on the other side of the chat.
    """
    from hermes_core.config import load_config
    from hermes_core.provider_settings import resolve_provider
    from agent.tool_policy import gateway_toolsets, gateway_working_dir

    cfg = config if config is not None else load_config()
    from agent.providers.models import settle

    settings = settle(resolve_provider(cfg))  # no model configured: the endpoint's, asked once
    from agent.tool_selection import check_config

    check_config(cfg)  # an unknown toolset stops the gateway at start-up, not at the first message
    gw = cfg.gateway
    gateway_toolsets(gw)  # a bad gateway.toolsets stops the gateway at start-up too
    workdir = str(gateway_working_dir(gw))

    def make(session_id: Optional[str], platform: str, model: Optional[str] = None,
             store: Any = None) -> Any:
        from agent.factory import AgentSpec, ProviderChoice, build_agent

        enabled, disabled = gateway_toolsets(gw)  # per agent: MCP toolsets appear as servers start
        return build_agent(AgentSpec(
            config=cfg, platform=platform, provider=ProviderChoice.of(settings, model),
            session_id=session_id, session_db=store if store is not None else session_db,
            enabled_toolsets=enabled, disabled_toolsets=disabled, cwd=workdir, confine_to=workdir))

    make.workdir = workdir  # type: ignore[attr-defined]  # where chat uploads are saved
    make.default_model = settings.model  # type: ignore[attr-defined]
    make.config = cfg  # type: ignore[attr-defined]
    return make


class GatewayRunner:
    def __init__(self, *, session_db: Any, agent_factory: AgentFactory, adapters: list[PlatformAdapter] = (),
                 access: Optional[AccessControl] = None, busy_policy: str = "queue", max_workers: int = 128,
                 max_cached_agents: int = 1000, typing_interval: float = 4.0, turn_limit: int = MAX_LIMIT,
                 lease_wait: float = LEASE_WAIT) -> None:
        if busy_policy not in ("queue", "interrupt"):
            raise ValueError(f"gateway.busy_policy must be 'queue' or 'interrupt', not {busy_policy!r}")
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
        self.leases = TurnLeases(session_db, lease_wait, turn_limit)  # across processes (shared stores)
        self.accepting = False
        self._states: dict[str, SessionState] = {}  # session id -> state
        self._key_sid: dict[str, str] = {}  # key -> the session it last ran in (for /stop, interrupts)
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
            await adapter.stop_receiving()  # what they already fetched still arrives; handle_event stores it
        await asyncio.sleep(0)
        pending = {t for t in self._tasks if not t.done()}
        if pending:
            log.info("draining %d turn(s) for up to %.0fs", len(pending), drain_timeout)
            _, pending = await asyncio.wait(pending, timeout=drain_timeout)
        if pending:
            log.warning("%d turn(s) still running after the drain; interrupting and persisting", len(pending))
            for req in self._pending:
                req.abandoned = True
            for st in self._states.values():
                if st.running is not None and st.agent is not None:
                    self._interrupt(st.agent, "gateway shutting down")
            _, pending = await asyncio.wait(pending, timeout=grace)
            for st in list(self._states.values()):  # turns stuck in a provider call: keep the user's words
                if st.running is not None:
                    await asyncio.to_thread(self.sessions.ensure_user_message, st.sid, st.running.text,
                                            st.running.mark)
            await self._persist_abandoned()
        await asyncio.to_thread(skills.wait_for_reviews, grace)  # their one line can still be sent
        for adapter in self.adapters.values():
            await adapter.stop()  # replies of drained turns went out above; now disconnect
        late = {t for t in self._tasks if not t.done()}  # stored-only messages delivered during stop()
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

    # -- chat platforms --------------------------------------------------------------------------
    async def handle_event(self, event: MessageEvent) -> None:
        """Adapter callback: returns quickly; the turn runs in its own task."""
        adapter = self.adapters.get(event.platform)
        key = key_for_event(event)
        if not self.accepting:
            if self.access.is_allowed(event.platform, event.user_id) and (event.text.strip()
                                                                          or event.attachments):
                req = TurnRequest(event.text, key, event.user_id, persist_only=True)
                self.spawn(self._chat_turn(req, None, event.chat_id, _noop_reply), req)
            return
        if not self.access.is_allowed(event.platform, event.user_id):
            log.info("refused unknown user %s on %s; pairing code sent", event.user_id, event.platform)
            text = await asyncio.to_thread(self.access.refusal, event.platform, event.user_id,
                                           event.user_name, event.chat_id)
            if adapter and text:  # None: this user was answered recently (no reply per message)
                await adapter.send(event.chat_id, text, thread_id=event.thread_id)
            return
        if not event.text.strip() and not event.attachments:
            return

        async def reply(text: str) -> None:
            if adapter and text:  # MEDIA: lines become attachments (gateway.replies)
                await replies.send_answer(adapter, event.chat_id, text, event.thread_id,
                                          replies.workdir_of(self))

        origin = {"platform": event.platform, "chat_id": event.chat_id,  # user_id: owner_of
                  "thread_id": event.thread_id, "user_id": event.user_id}
        if event.text.startswith("/") and await command(self, key, event.user_id, event.text, reply,
                                                        origin=origin):
            return
        try:
            self.capacity.admit()
        except TurnLimitReached as exc:
            log.warning("refused a message for %s: %s", key, exc)
            await reply(BUSY_CHAT_REPLY)
            return
        req = TurnRequest(event.text, key, event.user_id, notify=reply, origin=origin,
                          attachments=list(event.attachments))
        if self.busy_policy == "interrupt":
            self.stop_turn(key, event.text)  # the running turn, or one still waiting to start
        self.spawn(self._chat_turn(req, adapter, event.chat_id, reply), req).add_done_callback(self.capacity.release)

    def spawn(self, coro: Awaitable[Any], req: Optional[TurnRequest]) -> asyncio.Task[Any]:
        if req is not None:
            self._pending.append(req)  # synchronously, so the drain sees it even before the task runs
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _chat_turn(self, req: TurnRequest, adapter: Optional[PlatformAdapter], chat_id: str,
                         reply: Callable[[str], Awaitable[None]]) -> None:
        try:
            await self._chat_turn_locked(req, adapter, chat_id, reply)
        except LeaseTimeout as exc:  # busy on another worker for too long: nothing was stored
            if not req.persist_only:
                with contextlib.suppress(Exception):
                    await reply(str(exc))
        except Exception as exc:  # e.g. the store failed while resolving the chat's session
            log.exception("message for %s could not be handled", req.key)
            if not req.persist_only:
                with contextlib.suppress(Exception):
                    await reply(f"Sorry, that failed: {type(exc).__name__}: {exc}. Your message could not be "
                                "saved; please send it again.")

    async def _chat_turn_locked(self, req: TurnRequest, adapter: Optional[PlatformAdapter], chat_id: str,
                                reply: Callable[[str], Awaitable[None]]) -> None:
        assert req.key is not None
        async with self.hold(req.key, req.user_id) as st:
            if req.abandoned:
                return
            if req.persist_only:  # arrived during the drain: keep it, in order, without a turn
                self._pending.remove(req)
                await asyncio.to_thread(self.db.append_message, st.sid, "user", req.text)
                log.info("draining: stored a message for %s without answering it", req.key)
                return
            typing = asyncio.ensure_future(self._keep_typing(adapter, chat_id)) if adapter else None
            try:
                if req.attachments and not await replies.prepare_turn(self, req, reply):
                    return  # images, voice, files -> the turn's content (gateway.media)
                if isinstance(req.text, str):
                    req.text = await skills.expand(self, req.text)  # /<skill> [text]: the skill
                outcome = await self._run_locked(st, req)
            finally:
                if typing:
                    typing.cancel()
            if outcome.kind != "interrupted" or outcome.text:
                await reply(outcome.text)
            if outcome.kind == "ok":
                skills.after_reply(st.agent, outcome.result, reply)  # in the background, after the reply

    async def _keep_typing(self, adapter: PlatformAdapter, chat_id: str) -> None:
        try:
            while True:
                await adapter.typing(chat_id)
                await asyncio.sleep(self.typing_interval)
        except asyncio.CancelledError:
            pass
        except Exception as exc:
            log.debug("typing indicator failed: %s", exc)

    # -- sessions: key -> session id -> state ----------------------------------------------------
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
            sid = self._key_sid.get(key)  # a key seen before whose session is live: no store round trip
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
            moved_to = st.moved_to  # rotated while we waited: follow the conversation to its new session
            st.lock.release()
            self._let_go(st)
            self._key_sid.pop(key, None)
            if moved_to is not None and await asyncio.to_thread(self.sessions.lookup, key) == sid:
                await asyncio.to_thread(self.db.bind_session_key, key, moved_to)

    async def _take_lease(self, st: SessionState, key: str) -> bool:
        """Hold the session's cross-process lease (gateway.lease), then look at the store as it is now:
        True when another worker moved the key elsewhere (rotated or deleted the session) while we
        waited, so the caller follows it. A cached agent that missed turns another worker wrote is
        dropped: the next one loads the transcript from the store."""
        st.lease = await self.leases.take(st.sid)
        st.fence = self.leases.fence(st.sid)
        try:
            current, mark = await asyncio.to_thread(
                lambda: (self.sessions.lookup(key), self.sessions.mark(st.sid)))
        except BaseException:
            await self._give_back_lease(st, remember=False)
            raise
        if current != st.sid:
            await self._give_back_lease(st, remember=False)
            st.moved_to, st.deleted = current, current is None
            self.drop_agent(st)
            return True
        if st.agent is not None and mark != st.seen_mark:
            log.info("%s: session %s changed on another worker; reloading its transcript", key, st.sid)
            self.drop_agent(st)
        return False

    async def _give_back_lease(self, st: SessionState, remember: bool = True) -> None:
        """Release the lease, first noting where the store stands (what our cached agent has seen)."""
        held, st.lease, st.fence = st.lease, None, None
        if held is None:
            return
        try:
            if remember:
                st.seen_mark = await asyncio.to_thread(self.sessions.mark, st.sid)
        finally:
            await self.leases.release(held)

    def _let_go(self, st: SessionState) -> None:
        st.holders -= 1
        if st.holders == 0 and (st.agent is None or st.moved_to or st.deleted) and self._states.get(st.sid) is st:
            del self._states[st.sid]  # nothing cached: the state is rebuilt on demand

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

    def stop_turn(self, key: str, message: Optional[str] = None, notice: bool = False) -> Optional[str]:
        """Stop the turn running in the key's session (``"running"``), else the key's next turn that
        was accepted but has not started (``"pending"``: it will not run; with ``notice`` the chat is
        told); None when there is nothing to stop."""
        st = self.live_state(key)
        if st is not None and st.running is not None and not st.running.stop_requested:
            self.stop_request(st.running, message)
            return "running"
        for req in self._pending:
            if req.key == key and not req.started and not req.stop_requested and not req.persist_only:
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
            self.spawn(self._keep_interrupting(req), None)
        return True

    async def _keep_interrupting(self, req: TurnRequest) -> None:
        while not req.done:
            st = req.state
            if st is not None and st.agent is not None:
                self._interrupt(st.agent, req.stop_message)
            await asyncio.sleep(REARM_SECONDS)

    def is_busy(self, session_id: str) -> bool:
        """A turn (or a chat command) holds or waits for the session."""
        st = self._states.get(session_id)
        return st is not None and (st.running is not None or st.lock.locked() or st.holders > 0)

    async def delete_session(self, session_id: str) -> bool:
        """Delete a stored session (messages, keys, responses); SessionBusy while a turn runs or waits.
        Keys that named it lead to a fresh session afterwards. False when there was no such session."""
        if self.is_busy(session_id):
            raise SessionBusy(session_id)
        st = self._states.get(session_id) or self._states.setdefault(session_id, SessionState(session_id))
        st.holders += 1
        await st.lock.acquire()  # free (checked above): no turn can start while the rows go
        try:
            st.lease = await self.leases.take(session_id, wait=0)  # LeaseTimeout: busy on another worker
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

    async def rotate(self, st: SessionState, key: str, reason: str, user_id: Optional[str]) -> tuple[Optional[str], str]:
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
            platform = platform_of(key) if key else st.platform
            model = self.models.get(key) if key else None
            extra = {"store": st.store} if st.store is not None else {}
            st.agent = await asyncio.get_running_loop().run_in_executor(
                self.pool, lambda: self.agent_factory(session_id=st.sid, platform=platform, model=model, **extra))
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
                          tool_progress_callback, approval_callback=approval_callback, origin=origin)
        if key is None:
            task = self.spawn(self._stateless(req, platform), None)
        else:
            async def locked() -> TurnOutcome:
                async with self.hold(key) as st:
                    if req.abandoned:
                        return TurnOutcome("failed", "The gateway is shutting down; your message was saved.", st.sid)
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

    async def _run_locked(self, st: SessionState, req: TurnRequest, stateless: bool = False) -> TurnOutcome:
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
            if not stateless:
                req.mark = await asyncio.to_thread(self.sessions.mark, st.sid)
            agent = await self.agent_for(st, req.key)

            def on_status(kind: str, message: str) -> None:
                """Warnings (a failed summary, a cooldown) reach the chat; the rest only the log."""
                log.info("%s: %s: %s", who, kind, message)
                if kind == "warning" and req.notify is not None:
                    asyncio.run_coroutine_threadsafe(req.notify(f"⚠ {message}"), loop)

            def call() -> Any:
                since = self.capacity.started()
                try:
                    from agent.callbacks import AgentHooks

                    agent.hooks = AgentHooks(status=on_status, tool_progress=req.tool_callback,
                                             approval=req.approval_callback)  # None: denied
                    agent.origin = req.origin  # a cronjob created in this turn is delivered back here
                    agent.write_fence = st.fence  # writes stop if our turn lease is lost mid-turn
                    agent.owner = owner_of(req.origin)  # a chat user reaches only their own data
                    if req.stop_requested:  # stopped while the agent was being made
                        return {"interrupted": True, "completed": False, "final_response": None}
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

    async def _stopped_before_start(self, st: SessionState, req: TurnRequest, stateless: bool) -> TurnOutcome:
        req.done = True
        if not stateless:
            req.mark = await asyncio.to_thread(self.sessions.mark, st.sid)
            await persist_user_message(self, st, req)
        log.info("%s: stopped before it started", req.key or st.sid)
        return TurnOutcome("interrupted", STOPPED_BEFORE_START if req.stop_notice else "", st.sid,
                           {"interrupted": True, "completed": False, "partial": True})

    def _evict_idle(self) -> None:
        """Keep at most ``max_cached_agents`` live agents; the least recently used idle ones go."""
        if len(self._key_sid) > 4 * (len(self._states) + 256):
            self._key_sid = {k: sid for k, sid in self._key_sid.items() if sid in self._states}
        live = [s for s in self._states.values() if s.agent is not None]
        if len(live) <= self.max_cached_agents:
            return
        idle = sorted((s for s in live if s.holders == 0 and s.running is None and not s.lock.locked()),
                      key=lambda s: s.last_used)
        for st in idle[: len(live) - self.max_cached_agents]:
            self.drop_agent(st)
            self._states.pop(st.sid, None)
        self._key_sid = {k: sid for k, sid in self._key_sid.items() if sid in self._states}

    @staticmethod
    def _interrupt(agent: Any, message: Optional[str]) -> None:
        try:
            agent.interrupt(message)
        except Exception as exc:
            log.warning("interrupt failed: %s", exc)
