"""GatewayRunner: chat messages in, agent turns out — one turn at a time per session, many sessions at once.

Why it is shaped like this:
- ``AIAgent.run_conversation`` is synchronous, so turns run in a thread pool while the event loop
  keeps every platform responsive.
- Each session key has a FIFO ``asyncio.Lock``; a message's task takes it before anything else, so
  turns of one chat run strictly in arrival order and never overlap (busy policy ``queue``), or the
  running turn is interrupted first (``interrupt``). Replies are sent while the lock is held so they
  arrive in order too.
- The three endings of SPEC §7 are handled in ``_react``: deferred keeps everything, exhausted binds
  the key to a fresh session, any other failure keeps the session with the user's message persisted.
- On shutdown nothing already received is lost: running turns get a bounded drain, then anything
  still queued or running is written to the store as the user's message.
"""
from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Optional

from gateway.access import AccessControl
from gateway.platforms.base import MessageEvent, PlatformAdapter
from gateway.sessions import SessionMap, key_for_event

log = logging.getLogger("gateway.runner")

AgentFactory = Callable[..., Any]  # (session_id=, platform=, model=) -> AIAgent-like

SOFT_DEFERRED = ("Compression is already running for this conversation, so I couldn't answer just now. "
                 "Nothing was lost; your next message will go through.")
HELP_TEXT = ("Commands: /new (fresh session), /usage (tokens and context), /compress [focus], "
             "/model [name], /stop (interrupt the running turn), /help")


@dataclass
class TurnOutcome:
    """What a turn produced, after the gateway's reaction to it."""

    kind: str  # "ok" | "deferred" | "exhausted" | "failed" | "interrupted"
    text: str
    session_id: str
    result: dict[str, Any] = field(default_factory=dict)
    new_session_id: Optional[str] = None


@dataclass
class _Request:
    text: str
    system_message: Optional[str] = None
    conversation_history: Optional[list[dict[str, Any]]] = None
    stream_callback: Optional[Callable[[str], None]] = None
    started: bool = False
    abandoned: bool = False  # persisted by the drain instead of run
    persist_only: bool = False  # received while draining: stored in order, not answered
    mark: int = 0  # store position before the turn (see SessionMap.ensure_user_message)
    notify: Optional[Callable[[str], Awaitable[None]]] = None  # tells the chat about warnings mid-turn


class _Session:
    def __init__(self, key: str) -> None:
        self.key = key
        self.lock = asyncio.Lock()
        self.agent: Any = None
        self.agent_session: Optional[str] = None
        self.running: Optional[_Request] = None
        self.tasks = 0  # spawned and not finished; a session with tasks is never evicted
        self.waiting: list[_Request] = []
        self.model: Optional[str] = None
        self.last_used = time.monotonic()
        self.user_id: Optional[str] = None


async def _noop_reply(_text: str) -> None:
    return None


def short_error(result: dict[str, Any]) -> str:
    err = str(result.get("error") or result.get("final_response") or "unknown error").strip()
    return (err.splitlines() or ["unknown error"])[0][:300]


def default_agent_factory(config: Any = None, session_db: Any = None) -> AgentFactory:
    """Agents for real: provider settings resolved once from config/env, one shared SessionDB."""
    from agent.config import load_config, resolve_provider

    cfg = config if config is not None else load_config()
    settings = resolve_provider(cfg)

    def make(session_id: Optional[str], platform: str, model: Optional[str] = None) -> Any:
        from run_agent import AIAgent

        return AIAgent(base_url=settings.base_url, api_key=settings.api_key, model=model or settings.model,
                        provider=settings.provider, context_length=settings.context_length, config=cfg,
                        session_id=session_id, platform=platform, quiet_mode=True, session_db=session_db)

    make.default_model = settings.model  # type: ignore[attr-defined]
    return make


class GatewayRunner:
    def __init__(self, *, session_db: Any, agent_factory: AgentFactory, adapters: list[PlatformAdapter] = (),
                 access: Optional[AccessControl] = None, busy_policy: str = "queue", max_workers: int = 128,
                 max_cached_agents: int = 1000, typing_interval: float = 4.0) -> None:
        if busy_policy not in ("queue", "interrupt"):
            raise ValueError(f"gateway.busy_policy must be 'queue' or 'interrupt', not {busy_policy!r}")
        self.db = session_db
        self.sessions = SessionMap(session_db)
        self.agent_factory = agent_factory
        self.adapters = {a.name: a for a in adapters}
        self.access = access or AccessControl()
        self.busy_policy = busy_policy
        self.max_cached_agents = max_cached_agents
        self.typing_interval = typing_interval
        self.pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="turn")
        self.accepting = False
        self._states: dict[str, _Session] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self.turns_completed = 0

    # -- lifecycle -------------------------------------------------------------------------------
    async def start(self) -> None:
        self.accepting = True
        for adapter in self.adapters.values():
            adapter.set_message_handler(self.handle_event)
            await adapter.start()
            log.info("platform %s started", adapter.name)

    async def shutdown(self, drain_timeout: float = 30.0, grace: float = 5.0) -> bool:
        """Stop taking messages, let turns finish for up to ``drain_timeout``, persist the rest.
        Returns True when no turn thread is left running."""
        self.accepting = False
        for adapter in self.adapters.values():
            await adapter.stop_receiving()  # what they already fetched still arrives; handle_event stores it
        await asyncio.sleep(0)
        pending = {t for t in self._tasks if not t.done()}
        if pending:
            log.info("draining %d turn(s) for up to %.0fs", len(pending), drain_timeout)
            _, pending = await asyncio.wait(pending, timeout=drain_timeout)
        if pending:
            log.warning("%d turn(s) still running after the drain; interrupting and persisting", len(pending))
            for st in self._states.values():
                for req in st.waiting:
                    req.abandoned = True
                if st.running is not None and st.agent is not None:
                    self._interrupt(st.agent, "gateway shutting down")
            _, pending = await asyncio.wait(pending, timeout=grace)
            for st in self._states.values():  # turns stuck in a provider call: keep the user's words
                if st.running is not None and st.agent_session:
                    await asyncio.to_thread(self.sessions.ensure_user_message, st.agent_session, st.running.text,
                                            st.running.mark)
            await self._persist_abandoned()
        for adapter in self.adapters.values():
            await adapter.stop()  # replies of drained turns went out above; now disconnect
        late = {t for t in self._tasks if not t.done()}  # stored-only messages delivered during stop()
        if late:
            await asyncio.wait(late, timeout=grace)
        self.pool.shutdown(wait=False, cancel_futures=True)
        return not pending

    async def _persist_abandoned(self) -> None:
        for st in list(self._states.values()):
            for req in [r for r in st.waiting if r.abandoned]:
                sid = await asyncio.to_thread(self.sessions.get_or_create, st.key, st.user_id)
                await asyncio.to_thread(self.db.append_message, sid, "user", req.text)
                log.info("persisted an unserved message for %s", st.key)

    # -- chat platforms --------------------------------------------------------------------------
    async def handle_event(self, event: MessageEvent) -> None:
        """Adapter callback: returns quickly; the turn runs in its own task."""
        adapter = self.adapters.get(event.platform)
        key = key_for_event(event)
        if not self.accepting:
            if self.access.is_allowed(event.platform, event.user_id) and event.text.strip():
                st = self._state(key)
                req = _Request(event.text, persist_only=True)
                self._spawn(self._chat_turn(st, req, None, event.chat_id, _noop_reply), req, st)
            return
        if not self.access.is_allowed(event.platform, event.user_id):
            log.info("refused unknown user %s on %s; pairing code sent", event.user_id, event.platform)
            text = await asyncio.to_thread(self.access.refusal, event.platform, event.user_id,
                                           event.user_name, event.chat_id)
            if adapter:
                await adapter.send(event.chat_id, text)
            return
        if not event.text.strip():
            return
        st = self._state(key)
        st.user_id = event.user_id

        async def reply(text: str) -> None:
            if adapter and text:
                await self._send_long(adapter, event.chat_id, text)

        if event.text.startswith("/") and await self._command(st, event, reply):
            return
        req = _Request(event.text, notify=reply)
        if st.running is not None and self.busy_policy == "interrupt" and st.agent is not None:
            self._interrupt(st.agent, event.text)
        self._spawn(self._chat_turn(st, req, adapter, event.chat_id, reply), req, st)

    def _spawn(self, coro: Awaitable[Any], req: Optional[_Request], st: _Session) -> asyncio.Task[Any]:
        if req is not None:
            st.waiting.append(req)  # synchronously, so the drain sees it even before the task runs
        st.tasks += 1
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)

        def done(t: asyncio.Task[Any]) -> None:
            self._tasks.discard(t)
            st.tasks -= 1

        task.add_done_callback(done)
        return task

    async def _chat_turn(self, st: _Session, req: _Request, adapter: Optional[PlatformAdapter], chat_id: str,
                         reply: Callable[[str], Awaitable[None]]) -> None:
        async with st.lock:
            if req.abandoned:
                return
            if req.persist_only:  # arrived during the drain: keep it, in order, without a turn
                st.waiting.remove(req)
                sid = await asyncio.to_thread(self.sessions.get_or_create, st.key, st.user_id)
                await asyncio.to_thread(self.db.append_message, sid, "user", req.text)
                log.info("draining: stored a message for %s without answering it", st.key)
                return
            typing = asyncio.ensure_future(self._keep_typing(adapter, chat_id)) if adapter else None
            try:
                outcome = await self._run_locked(st, req)
            finally:
                if typing:
                    typing.cancel()
            if outcome.kind != "interrupted" or outcome.text:
                await reply(outcome.text)

    async def _keep_typing(self, adapter: PlatformAdapter, chat_id: str) -> None:
        try:
            while True:
                await adapter.typing(chat_id)
                await asyncio.sleep(self.typing_interval)
        except asyncio.CancelledError:
            pass
        except Exception as exc:
            log.debug("typing indicator failed: %s", exc)

    async def _send_long(self, adapter: PlatformAdapter, chat_id: str, text: str) -> None:
        from gateway.platforms.telegram import split_message

        for piece in split_message(text, adapter.max_message_length):
            await adapter.send(chat_id, piece)

    # -- turns (shared by chats and the API server) ------------------------------------------------
    async def run_turn(self, key: Optional[str], text: str, *, platform: str = "api_server",
                       system_message: Optional[str] = None,
                       conversation_history: Optional[list[dict[str, Any]]] = None,
                       stream_callback: Optional[Callable[[str], None]] = None) -> TurnOutcome:
        """One turn for ``key`` (a persistent session), or a throwaway session when ``key`` is None.
        The turn runs to completion even if the caller goes away (e.g. an HTTP client disconnects)."""
        req = _Request(text, system_message, conversation_history, stream_callback)
        if key is None:
            st = _Session(f"{platform}:stateless")
            task = self._spawn(self._stateless(st, req, platform), None, st)
        else:
            st = self._state(key)

            async def locked() -> TurnOutcome:
                async with st.lock:
                    if req.abandoned:
                        return TurnOutcome("failed", "The gateway is shutting down; your message was saved.", "")
                    return await self._run_locked(st, req)

            task = self._spawn(locked(), req, st)
        return await asyncio.shield(task)

    async def _stateless(self, st: _Session, req: _Request, platform: str) -> TurnOutcome:
        from gateway.sessions import new_session_id

        sid = new_session_id()
        st.agent = await asyncio.get_running_loop().run_in_executor(
            self.pool, lambda: self.agent_factory(session_id=sid, platform=platform))
        st.agent_session = sid
        return await self._run_locked(st, req, stateless=True)

    async def _run_locked(self, st: _Session, req: _Request, stateless: bool = False) -> TurnOutcome:
        """Run one turn; the caller holds ``st.lock``."""
        loop = asyncio.get_running_loop()
        if req in st.waiting:
            st.waiting.remove(req)
        st.running, req.started = req, True
        st.last_used = time.monotonic()
        result: dict[str, Any]
        try:
            agent = st.agent if stateless else await self._agent_for(st)
            sid = st.agent_session or ""

            def on_status(kind: str, message: str) -> None:
                """Warnings (a failed summary, a cooldown) reach the chat; the rest only the log."""
                log.info("%s: %s: %s", st.key, kind, message)
                if kind == "warning" and req.notify is not None:
                    asyncio.run_coroutine_threadsafe(req.notify(f"⚠ {message}"), loop)

            def call() -> Any:
                agent.status_callback = on_status
                req.mark = self.sessions.mark(sid)
                return agent.run_conversation(req.text, system_message=req.system_message,
                                              conversation_history=req.conversation_history,
                                              stream_callback=req.stream_callback)

            result = await loop.run_in_executor(self.pool, call)
            if not isinstance(result, dict):
                result = {"failed": True, "error": f"agent returned {type(result).__name__}"}
        except Exception as exc:
            log.exception("turn for %s raised", st.key)
            result = {"failed": True, "completed": False, "error": f"{type(exc).__name__}: {exc}"}
        finally:
            st.running = None
            st.last_used = time.monotonic()
        outcome = await self._react(st, req, result, stateless)
        self.turns_completed += 1
        self._evict_idle()
        return outcome

    async def _react(self, st: _Session, req: _Request, result: dict[str, Any], stateless: bool) -> TurnOutcome:
        """SPEC §7: deferred keeps everything; exhausted resets the chat; other failures keep the session."""
        sid = str(result.get("session_id") or st.agent_session or "")
        if result.get("compression_deferred"):
            log.info("%s: compression deferred (lock held elsewhere); session %s kept", st.key, sid)
            await asyncio.to_thread(self.sessions.ensure_user_message, sid, req.text, req.mark)
            return TurnOutcome("deferred", str(result.get("final_response") or SOFT_DEFERRED), sid, result)
        if result.get("compression_exhausted"):
            why = short_error(result)
            if stateless:
                return TurnOutcome("exhausted", why, sid, result)
            old, new = await asyncio.to_thread(self.sessions.rotate, st.key, "compression_exhausted", st.user_id)
            st.agent, st.agent_session = None, None
            log.warning("%s: compression exhausted; session %s -> %s", st.key, old, new)
            text = ("This conversation grew too long to compress any further, so I've started a fresh session. "
                    f"The previous one is kept and searchable (session {old}). Reason: {why}")
            return TurnOutcome("exhausted", text, new, result, new_session_id=new)
        if result.get("interrupted"):
            return TurnOutcome("interrupted", str(result.get("final_response") or ""), sid, result)
        if result.get("failed"):
            log.warning("%s: turn failed: %s", st.key, short_error(result))
            if sid:
                try:
                    await asyncio.to_thread(self.sessions.ensure_user_message, sid, req.text, req.mark)
                except Exception as exc:
                    log.error("%s: could not persist the user's message: %s", st.key, exc)
            st.agent = None  # reload a consistent history from the store next time
            return TurnOutcome("failed", f"Sorry, that failed: {short_error(result)}. Your message is saved; "
                                         "please try again.", sid, result)
        # a stop without an answer (max_iterations) explains itself in ``error``
        return TurnOutcome("ok", str(result.get("final_response") or result.get("error") or ""), sid, result)

    async def _agent_for(self, st: _Session) -> Any:
        if st.agent is not None and st.agent_session:
            return st.agent  # the key's binding only changes through this runner (rotate drops the agent)
        sid = await asyncio.to_thread(self.sessions.get_or_create, st.key, st.user_id)
        if st.agent is None or st.agent_session != sid:
            platform = st.key.split(":", 1)[0]
            st.agent = await asyncio.get_running_loop().run_in_executor(
                self.pool, lambda: self.agent_factory(session_id=sid, platform=platform, model=st.model))
            st.agent_session = sid
        return st.agent

    def has_session(self, key: str) -> bool:
        """True when the key has a live agent here (its binding is then already known)."""
        st = self._states.get(key)
        return st is not None and st.agent is not None

    def _state(self, key: str) -> _Session:
        st = self._states.get(key)
        if st is None:
            st = self._states[key] = _Session(key)
        return st

    def _evict_idle(self) -> None:
        """Keep at most ``max_cached_agents`` live agents; the least recently used idle ones go."""
        if len(self._states) <= self.max_cached_agents:
            return
        live = [s for s in self._states.values() if s.agent is not None]
        if len(live) <= self.max_cached_agents:
            return
        idle = sorted((s for s in live if s.tasks == 0 and s.running is None and not s.lock.locked()),
                      key=lambda s: s.last_used)
        for st in idle[: len(live) - self.max_cached_agents]:
            st.agent = None
            self._states.pop(st.key, None)

    @staticmethod
    def _interrupt(agent: Any, message: Optional[str]) -> None:
        try:
            agent.interrupt(message)
        except Exception as exc:
            log.warning("interrupt failed: %s", exc)

    # -- slash commands --------------------------------------------------------------------------
    async def _command(self, st: _Session, event: MessageEvent, reply: Callable[[str], Awaitable[None]]) -> bool:
        """Handle a gateway command; False means 'not ours', and the text goes to the agent."""
        name, _, arg = event.text.strip().partition(" ")
        name, arg = name.lower(), arg.strip()
        if name == "/help":
            await reply(HELP_TEXT)
        elif name == "/stop":
            if st.running is not None and st.agent is not None:
                self._interrupt(st.agent, None)
                await reply("Stopping the current turn.")
            else:
                await reply("Nothing is running.")
        elif name == "/model":
            if arg:
                st.model = arg
                if st.agent is not None:
                    st.agent.model = arg
                await reply(f"Model for this chat set to {arg}.")
            else:
                current = getattr(st.agent, "model", None) or st.model or getattr(self.agent_factory, "default_model", "?")
                await reply(f"Current model: {current}. Use /model <name> to change it.")
        elif name in ("/new", "/reset", "/usage", "/compress"):
            self._spawn(self._locked_command(st, name, arg, reply), None, st)
        else:
            return False
        return True

    async def _locked_command(self, st: _Session, name: str, arg: str, reply: Callable[[str], Awaitable[None]]) -> None:
        async with st.lock:  # after any queued turn of this chat, never during one
            loop = asyncio.get_running_loop()
            if name in ("/new", "/reset"):
                old, new = await asyncio.to_thread(self.sessions.rotate, st.key, "new_session", st.user_id)
                st.agent, st.agent_session = None, None
                await reply(f"Started a new session ({new}). The previous one is kept and searchable.")
            elif name == "/usage":
                agent = await self._agent_for(st)
                await reply(format_usage(await loop.run_in_executor(self.pool, agent.usage), st.agent_session))
            else:
                agent = await self._agent_for(st)
                try:
                    res = await loop.run_in_executor(self.pool, lambda: agent.compress(arg or None))
                except Exception as exc:
                    await reply(f"Compression failed: {exc}")
                    return
                if res.get("deferred"):
                    await reply("Compression is already running for this conversation; try again shortly.")
                else:
                    await reply(str(res.get("message") or f"Compressed: {res.get('before_tokens')} -> "
                                                          f"{res.get('after_tokens')} tokens."))


def format_usage(u: dict[str, Any], session_id: Optional[str]) -> str:
    fill = float(u.get("context_fill") or 0.0)
    return (f"Session {session_id}\n"
            f"Tokens: {u.get('prompt_tokens', 0)} prompt + {u.get('completion_tokens', 0)} completion "
            f"= {u.get('total_tokens', 0)} over {u.get('api_calls', 0)} API call(s)\n"
            f"Context: {u.get('context_tokens', 0)} / {u.get('context_length', '?')} tokens ({fill:.0%}), "
            f"compactions: {u.get('compactions', 0)}")
