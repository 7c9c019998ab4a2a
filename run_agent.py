"""``AIAgent``: the public facade of the runtime (SPEC §1), kept thin.

The turn itself lives in ``agent.turn_context`` (prologue, preflight) and ``agent.conversation_loop``
(calls, gates, error paths); compression in ``agent.conversation_compression``. This module owns the
agent's state: provider client, tools, history and its persistence in the session store.

The names ``OpenAI``, ``get_tool_definitions``, ``check_toolset_requirements`` and
``jittered_backoff`` are module globals looked up at call time, so patching them here takes effect.
``OpenAI`` is imported on first use: ``import openai`` alone costs about a second.
"""
from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path
from typing import Any, Callable, Optional

from agent import plugin_hooks, results
from agent.agent_kwargs import check_kwargs, honoured
from hermes_core.config import (HermesConfig, hermes_home, load_config, load_env_file, load_plugins,
                          resolve_provider)
from agent.conversation_compression import compress_context, compression_skipped_due_to_lock
from agent.conversation_loop import Interrupted, run_loop
from hermes_core.messages import content_text, find_tool_pair_violations, sanitize_tool_pairs
from agent.persistence import HistoryLoadError, SessionRecorder, StoreError
from hermes_core.redact import config_secrets, redact, secret_values
from agent.providers.clients import make_client, pool_of
from agent.providers.models import settle as settle_model
from agent.providers.windows import family_window, window_for
from agent.providers.openai_compat import ModelReply, abort_connections, make_openai_client, request_chat
from hermes_core.retry import jittered_backoff
from hermes_core.tokens import estimate_messages_tokens_rough
from agent.turn_context import TurnState, build_turn, preflight_compress
from tools.registry import check_toolset_requirements, get_tool_definitions
from tools.registry import generation as tools_generation
from tools.registry import settle as settle_tools

log = logging.getLogger("hermes.agent")

__all__ = ["AIAgent", "OpenAI", "get_tool_definitions", "check_toolset_requirements", "jittered_backoff"]  # noqa: F822 (OpenAI is lazy)

from agent.providers.windows import DEFAULT_CONTEXT_LENGTH, KNOWN_CONTEXT_LENGTHS  # noqa: E402,F401
LOCAL_MAX_TOOL_ROUNDS = 1  # rounds of tool calls per turn offered to the embedded model


def __getattr__(name: str) -> Any:
    if name == "OpenAI":
        from openai import OpenAI as _OpenAI

        globals()["OpenAI"] = _OpenAI
        return _OpenAI
    raise AttributeError(f"module 'run_agent' has no attribute {name!r}")


def context_length_for(model: str) -> int:
    """The known window of the model's family (``agent.providers.windows``)."""
    return family_window(model)


def _new_session_id() -> str:
    return time.strftime("%Y%m%d_%H%M%S") + "_" + os.urandom(3).hex()


class AIAgent:
    """One conversation with one model, its tools, and its session in the store."""

    def __init__(self, base_url: Optional[str] = None, api_key: Optional[str] = None, model: Optional[str] = None,
                 provider: Optional[str] = None, max_iterations: int = 90, quiet_mode: bool = False,
                 skip_context_files: bool = False, skip_memory: bool = False, session_db: Any = None,
                 session_id: Optional[str] = None, enabled_toolsets: Optional[list[str]] = None,
                 disabled_toolsets: Optional[list[str]] = None, save_trajectories: bool = False,
                 config: Optional[HermesConfig] = None, platform: str = "cli", cwd: Optional[str] = None,
                 context_length: Optional[int] = None, yolo: bool = False,
                 tool_progress_callback: Optional[Callable[[dict], None]] = None,
                 status_callback: Optional[Callable[[str, str], None]] = None,
                 approval_callback: Optional[Callable[[str, str], str]] = None,
                 confine_to: Optional[str] = None, mutating_tools: Optional[str] = None,
                 **hermes_kwargs: Any) -> None:
        """Hermes Agent keywords beyond these are listed in ``agent.agent_kwargs`` (others: TypeError).

        ``confine_to``: file tools refuse paths outside this directory (the gateway's working dir).
        ``mutating_tools``: "allow", "ask" (approval per call) or "deny" for tools that change things;
        default "ask" on the embedded model (provider ``local``), else "allow".
        """
        check_kwargs(hermes_kwargs)
        if mutating_tools not in (None, "allow", "ask", "deny"):
            raise ValueError(f"mutating_tools must be 'allow', 'ask' or 'deny', not {mutating_tools!r}")
        if config is None:
            load_env_file()
            config = load_config()
        self.config = config
        load_plugins(config)  # once per process: the tools, hooks and providers plugins offer
        settings = resolve_provider(config, base_url=base_url, api_key=api_key, model=model, provider=provider)
        self._provider_settings = settings  # the wire and plugin of this provider (issue 25)
        self._fallback: Any = None  # agent.providers.fallback.AgentChain, made when first needed
        self.provider = settings.provider
        self.base_url = settings.base_url
        self.api_key = settings.api_key
        self.model = settings.model or settle_model(settings).model
        self._model_path = settings.model_path
        self.max_iterations = max_iterations
        self.quiet_mode = quiet_mode
        self.skip_context_files = skip_context_files
        from agent.tool_selection import memory_enabled, select_toolsets

        self.skip_memory = not memory_enabled(config, skip_memory=skip_memory, platform=platform)
        self.save_trajectories = save_trajectories or config.agent.save_trajectories
        self.platform = platform
        self.cwd = Path(cwd or config.terminal.cwd or os.getcwd()).expanduser()
        self.yolo = yolo
        self.tool_progress_callback = tool_progress_callback
        self.status_callback = status_callback
        self.approval_callback = approval_callback
        self.reasoning_callback: Optional[Callable[[str], None]] = None  # set by a surface (ACP)
        self.file_io: Any = None  # set by a surface: reads/writes through an editor (ACP fs/*)
        self.tool_delay = float(honoured(hermes_kwargs, "tool_delay", 0.0))
        self.ephemeral_system_prompt: Optional[str] = honoured(hermes_kwargs, "ephemeral_system_prompt")
        self.max_tokens: Optional[int] = honoured(hermes_kwargs, "max_tokens")
        if honoured(hermes_kwargs, "verbose_logging", False):
            log.setLevel(logging.DEBUG)
        self.confine_to = Path(confine_to).expanduser() if confine_to else None
        self.mutating_tools = mutating_tools or ("ask" if self.provider == "local" else "allow")
        self.origin: Optional[dict] = None  # set by a surface: the chat a turn comes from (cron's "origin")
        self.owner: Optional[str] = None  # set by a surface: a chat user's "<platform>:<user id>"
        self._use_prompt_caching = False

        self.enabled_toolsets, self.disabled_toolsets = select_toolsets(
            enabled_toolsets, disabled_toolsets, config, skip_memory=skip_memory, platform=platform)
        self._load_tools()
        self._prompt: Any = None  # agent.prompt_builder.BuiltPrompt of this session, when built here

        comp_cfg = config.compression
        self.compression_enabled = comp_cfg.enabled
        self.max_compression_attempts = comp_cfg.max_attempts
        window = context_length or settings.context_length or window_for(self.model, self.base_url)
        self._context_length_pinned = bool(context_length or settings.context_length)
        from agent.context_compressor import ContextCompressor

        self.context_compressor: Any = ContextCompressor.from_config(comp_cfg, window,
                                                                     summarize=self._make_summarizer())

        self.write_fence: Any = None  # set by a surface per turn: what its writes must prove
        self._recorder = SessionRecorder(session_db, session_id or _new_session_id(), platform,
                                         model=lambda: self.model,
                                         warn=lambda m: self._emit_status("warning", m),
                                         fence=lambda: self.write_fence, owner=lambda: self.owner,
                                         open_store=self._open_store)
        self.messages: list[dict] = []
        self._history_loaded = session_id is None
        self._cached_system_prompt: Optional[str] = None
        self._usage_baseline: Optional[tuple[int, int]] = None
        self._compression_skipped_due_to_lock: Any = None
        self._interrupt_event = threading.Event()
        self._client: Any = None
        self._owns_client = False
        self._inflight: Any = None  # the client of the request on the wire, when interrupt() may cut it
        self._inflight_lock = threading.Lock()
        self._raw_body = True
        self._tool_ctx: Any = None
        self.compactions = 0
        self.session_prompt_tokens = 0
        self.session_completion_tokens = 0
        self.session_api_calls = 0
        self.session_cache_read_tokens = 0  # of session_prompt_tokens, read from the prompt cache

    def _open_store(self) -> Any:
        """The configured store, for an agent given no ``session_db``."""
        from hermes_state import SessionDB

        return SessionDB.from_config(self.config)

    # ---- provider ------------------------------------------------------------------------

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = self._make_client()
            self._owns_client = True
        return self._client

    @client.setter
    def client(self, value: Any) -> None:
        self._client = value
        self._owns_client = False

    def _make_client(self) -> Any:
        if self.provider == "local":
            from agent.providers.local import LocalClient

            m = self.config.model
            client = LocalClient(model_path=self._model_path, seed=m.seed, temperature=m.temperature,
                                 timeout=m.timeout)
            self._raw_body = False
            return client
        return make_client(self._active_settings())

    def _active_settings(self) -> Any:
        """The provider settings of the next request (model and key as they are now)."""
        return self._provider_settings.model_copy(update={
            "model": self.model, "api_key": self.api_key, "base_url": self.base_url})

    def _call_model_api(self, api_messages: list[dict], state: TurnState) -> ModelReply:
        """One request on this thread; ``interrupt()`` aborts it by closing the client's connections.
        Without a client of its own the agent borrows one from the process's pool for this request."""
        borrow = self._client is None and self.provider != "local"
        if self.provider == "local":
            self._sync_local_window(self.client)
        self._persist_session(state.messages)  # the user's message is on disk before the wire
        if self.lease_lost:  # another worker holds the session now: nothing goes out
            raise Interrupted()
        tools = self.tools or None
        if self.provider == "local" and state.extras.get("tool_rounds", 0) >= LOCAL_MAX_TOOL_ROUNDS:
            tools = None  # a tiny local model would call tools forever; after this many rounds it must answer
        pool = None
        if borrow:
            pool = pool_of(self._active_settings())
        client = pool.borrow() if pool is not None else self.client
        self._inflight = client if (pool is not None or self._owns_client) else None
        try:
            reply = plugin_hooks.around_request(self, api_messages, lambda: request_chat(
                client, model=self.model, messages=api_messages, tools=tools,
                stream_callback=state.stream_callback, interrupted=self._interrupt_event,
                raw_body=self._raw_body, max_tokens=self.max_tokens,
                tool_choice=self._tool_choice(state)))
            if self.provider == "local" and self._interrupt_event.is_set():
                raise Interrupted()  # abort() cut the answer short: it is not the answer
            self._emit_reasoning(reply)
            return reply
        except Exception:
            if self._interrupt_event.is_set():
                raise Interrupted() from None
            raise
        finally:
            with self._inflight_lock:  # interrupt() either cut this request already or will not
                self._inflight = None
                cut = self._interrupt_event.is_set()
            if pool is not None:
                pool.give_back(client, reusable=not cut)

    def _tool_choice(self, state: TurnState) -> Optional[str]:
        """config model.tool_choice; "required" binds only the turn's first reply (a turn that
        had to call tools forever would never answer)."""
        choice = self.config.model.tool_choice
        if choice == "required" and state.extras.get("tool_rounds", 0):
            return None
        return choice

    def _sync_local_window(self, client: Any) -> None:
        n = getattr(client, "context_length", None)
        if isinstance(n, int) and n > 0 and not self._context_length_pinned:
            self._learn_context_limit(n, lower_only=False, announce=False)
            self._context_length_pinned = True

    def _learn_context_limit(self, limit: int, lower_only: bool = True, announce: bool = True) -> None:
        comp = self.context_compressor
        current = getattr(comp, "context_length", None)
        if lower_only and isinstance(current, int) and limit >= current:
            return
        setter = getattr(comp, "set_context_length", None)
        if callable(setter):
            setter(limit)
        else:
            comp.context_length = limit
        if announce:
            self._emit_status("info", f"Context window is now {limit:,} tokens (learned from the provider).")

    def _make_summarizer(self) -> Callable[..., str]:
        from agent.summarizer import make_summarizer

        aux = self.config.auxiliary.compression
        if not aux.api_key and os.environ.get("HERMES_AUX_COMPRESSION_API_KEY"):  # where `config set` puts it
            aux.api_key = os.environ["HERMES_AUX_COMPRESSION_API_KEY"]
        timeout = self.config.compression.summary_timeout
        if aux.model or aux.base_url or aux.api_key:
            holder: dict[str, Any] = {}

            def aux_client() -> Any:
                if "c" not in holder:
                    import run_agent

                    holder["c"] = make_openai_client(run_agent.OpenAI, aux.base_url or self.base_url,
                                                     aux.api_key or self.api_key)
                return holder["c"]

            return make_summarizer(aux_client, aux.model or self.model, timeout=timeout)
        return make_summarizer(lambda: self.client, self.model, timeout=timeout)

    def _record_usage(self, state: TurnState, reply: ModelReply) -> None:
        if reply.prompt_tokens:
            state.prompt_tokens += reply.prompt_tokens
            self.session_prompt_tokens += reply.prompt_tokens
            # the reading covers the request just sent: system + every message before this reply
            self._usage_baseline = (reply.prompt_tokens, len(state.messages))
            update = getattr(self.context_compressor, "update_from_usage", None)
            if callable(update):
                update(reply.prompt_tokens)
            else:
                self.context_compressor.last_prompt_tokens = reply.prompt_tokens
        if reply.cached_tokens:
            extras = state.extras
            extras["cache_read_tokens"] = extras.get("cache_read_tokens", 0) + reply.cached_tokens
            self.session_cache_read_tokens += reply.cached_tokens
        if reply.completion_tokens:
            state.completion_tokens += reply.completion_tokens
            self.session_completion_tokens += reply.completion_tokens
        self._recorder.add_usage(reply.prompt_tokens or 0, reply.completion_tokens or 0)
        self.session_api_calls += 1

    def _redact(self, text: str) -> str:
        """Mask the API keys and secret-looking environment values (tool output, errors, warnings)."""
        return redact(text, secret_values([self.api_key, *config_secrets(self.config)]))

    def _api_key_setting(self) -> str:
        from hermes_core.provider_table import PROVIDERS

        info = PROVIDERS.get(self.provider)
        return f"{(info and info.key_var) or 'OPENAI_API_KEY'} (or model.api_key in config.yaml)"

    # ---- tools ---------------------------------------------------------------------------

    def _offer_tools(self, tools: list[dict]) -> None:
        self.tools = tools
        self._tool_names = {t["function"]["name"] for t in tools if isinstance(t, dict) and "function" in t}

    def _fit_tools_to(self, system_prompt: str) -> None:
        """A stored prompt (resumed session): offer the tools that fit beside it, as when it was built."""
        from hermes_core.tokens import estimate_text_tokens
        from agent.tool_selection import fit_tools
        from tools.registry import get_toolset

        window = getattr(self.context_compressor, "context_length", None)
        tools, _ = fit_tools(self._all_tools, estimate_text_tokens(system_prompt), window,
                             toolset_of=get_toolset, explicit=self.enabled_toolsets is not None)
        self._offer_tools(tools)

    def _load_tools(self) -> None:
        """The registry's tools in this agent's toolsets; MCP tools join as their servers connect."""
        self._tools_generation = tools_generation()
        self._all_tools: list[dict] = get_tool_definitions(enabled_toolsets=self.enabled_toolsets,
                                                           disabled_toolsets=self.disabled_toolsets) or []
        self.unavailable_toolsets: dict[str, str] = check_toolset_requirements() or {}
        self._offer_tools(self._all_tools)  # fitted to the window when the system prompt is built
        self._tools_frozen = False

    def _freeze_tools(self) -> None:
        """A session's tool list is fixed at its first turn (provider prompt caches key on it). Tool
        sources that register late (MCP servers still connecting) get until then, each bounded by
        its own timeout; whatever registered since construction is picked up."""
        if self._tools_frozen:
            return
        settle_tools(lambda line: self._emit_status("info", line), self._interrupt_event)
        if tools_generation() != self._tools_generation:
            self._load_tools()
            if self._cached_system_prompt is not None:
                self._fit_tools_to(self._cached_system_prompt)
        self._tools_frozen = True

    def _tool_context(self) -> Any:
        from tools.registry import ToolContext

        if self._tool_ctx is None:
            self._tool_ctx = ToolContext(cwd=self.cwd, session_id=self.session_id, approval_callback=self.approval_callback,
                                         yolo=self.yolo, interrupt_event=self._interrupt_event,
                                         timeout=self.config.terminal.timeout,
                                         max_output_chars=self.config.terminal.max_output_chars,
                                         config=self.config, platform=self.platform, agent=self,
                                         confine_to=self.confine_to, mutations=self.mutating_tools)
        ctx = self._tool_ctx
        ctx.session_db, ctx.origin, ctx.owner = self.session_db, self.origin, self.owner
        ctx.toolsets, ctx.file_io = self.enabled_toolsets, self.file_io
        ctx.yolo, ctx.approval_callback, ctx.session_id = self.yolo, self.approval_callback, self.session_id
        return ctx

    def _run_tools(self, tool_calls: list[dict], state: TurnState) -> list[dict]:
        from agent.tool_runner import run_tool_calls
        from tools.registry import dispatch

        ctx = self._tool_context()
        ctx.task_id = state.task_id or self.session_id
        state.extras["tool_rounds"] = state.extras.get("tool_rounds", 0) + 1
        if self.tool_delay:
            time.sleep(self.tool_delay)
        call = plugin_hooks.around_tools(lambda name, args: dispatch(name, args, ctx),
                                         self.session_id, ctx.task_id)
        return run_tool_calls(tool_calls, self._tool_names, call, self.tool_progress_callback,
                              redact=self._redact)

    def _cleanup_task_resources(self, task_id: Optional[str]) -> None:
        """Per-task resources (none held beyond a turn today); a hook surfaces and tests can rely on."""

    # ---- status ------------------------------------------------------------------------------

    def _emit_reasoning(self, reply: ModelReply) -> None:
        """The model's reasoning (``reasoning_content``) for surfaces that show it (ACP)."""
        if reply.reasoning and self.reasoning_callback is not None:
            try:
                self.reasoning_callback(reply.reasoning)
            except Exception:  # a surface's display must never break the turn
                log.exception("reasoning callback failed")

    def _emit_status(self, kind: str, message: str) -> None:
        message = self._redact(message)
        if self.status_callback is not None:
            try:
                self.status_callback(kind, message)
                return
            except Exception:
                log.exception("status callback failed")
        (log.warning if kind == "warning" else log.info)("%s", message)

    # ---- the store (agent.persistence does the work) ------------------------------------------

    @property
    def session_id(self) -> str:
        return self._recorder.session_id

    @property
    def session_db(self) -> Any:
        return self._recorder.db

    @property
    def lease_lost(self) -> Optional[str]:
        """Why this agent's writes were refused (its turn lease was lost), else None."""
        return self._recorder.fenced

    def _load_history(self) -> list[dict]:
        """The agent's own history; on first use of a resumed session, its active rows from the store.

        Raises HistoryLoadError when the store cannot be read (the next call tries again)."""
        if not self._history_loaded:
            messages, stored_prompt = self._recorder.load()
            if find_tool_pair_violations(messages):
                # a run that died between a tool call and its result: answer the call with a stub so the
                # provider accepts the history again (the original rows stay in the store, inactive)
                repaired = sanitize_tool_pairs(messages)
                try:
                    self._recorder.replace(messages, repaired)
                except StoreError as exc:
                    raise HistoryLoadError(f"Session {self.session_id} has tool calls left unanswered by an "
                                           f"interrupted run, and the store refused the repair ({exc}). Run "
                                           "`hermes doctor`, then try again.") from exc
                messages = repaired
                self._emit_status("info", "Repaired tool calls left unanswered by an interrupted run.")
            self.messages, self._history_loaded = messages, True
            if stored_prompt and self._cached_system_prompt is None:
                self._cached_system_prompt = stored_prompt  # byte-identical across processes
                self._fit_tools_to(stored_prompt)
        return self.messages

    def _adopt_history(self, messages: list[dict]) -> None:
        """A caller-supplied history is the caller's to store; only what this turn adds is written."""
        self._history_loaded = True
        self._recorder.adopt(len(messages))

    def _persist_session(self, messages: list[dict]) -> None:
        """Write the messages not yet in the store, one row each (a crash loses at most the call in flight)."""
        self._recorder.persist(messages)

    def _commit_compaction(self, old: list[dict], new: list[dict],
                           lock_holder: Optional[str] = None) -> None:
        """Persist a compaction in place: old rows become inactive (still searchable), new rows active.
        With ``lock_holder`` the commit happens only if that holder still holds the compression lock."""
        self._recorder.replace(old, new, lock_holder=lock_holder)
        self._usage_baseline = None
        self.compactions += 1

    def _build_prompt(self) -> Any:
        from agent.prompt_builder import build_prompt
        from tools.registry import get_toolset

        from tools.memory.store import owner_home

        return build_prompt(hermes_home(), self.cwd, tools=self._all_tools, toolset_of=get_toolset,
                            window=getattr(self.context_compressor, "context_length", None),
                            config=self.config, platform=self.platform,
                            skip_context_files=self.skip_context_files, skip_memory=self.skip_memory,
                            explicit_toolsets=self.enabled_toolsets is not None,
                            memory_home=owner_home(hermes_home(), self.owner, self.config))

    def _get_system_prompt(self) -> str:
        if self._cached_system_prompt is None:
            from agent.context_files import held_back_notices

            built = self._prompt = self._build_prompt()
            self._offer_tools(built.tools)
            for warning in built.warnings + held_back_notices(built.sources):
                self._emit_status("warning", warning)
            self._cached_system_prompt = built.text
            self._recorder.store_system_prompt(self._cached_system_prompt)
        return self._cached_system_prompt

    def fixed_prompt(self) -> Any:
        """This session's ``BuiltPrompt`` (parts and offered tools); before the first turn a preview,
        built without storing anything or warning anyone. A resumed session's stored prompt is one part."""
        from agent.prompt_builder import BuiltPrompt, PromptPart

        if not self._history_loaded:
            self._load_history()
        text = self._cached_system_prompt
        if text is None:
            return self._build_prompt()
        if self._prompt is not None and self._prompt.text == text:
            return self._prompt
        return BuiltPrompt([PromptPart("system prompt (stored)", text)], self.tools)

    def _refresh_memory_snapshot(self, system_prompt: str) -> str:
        """After a compaction the prompt cache is cold anyway: pick up memory written since (SPEC §8)."""
        built, old = self._prompt, self._cached_system_prompt
        if built is None or self.skip_memory or not old or not system_prompt.startswith(old):
            return system_prompt
        from tools.memory.store import owner_home, snapshot

        fresh = built.replace("memory", snapshot(owner_home(hermes_home(), self.owner, self.config),
                                                 self.config)[0])
        if fresh.text == old:
            return system_prompt
        self._prompt, self._cached_system_prompt = fresh, fresh.text
        self._recorder.store_system_prompt(fresh.text)
        return fresh.text + system_prompt[len(old):]

    def prompt_breakdown(self) -> list[tuple[str, int]]:
        """(part, tokens) of the fixed prompt: its named parts, then each toolset's schemas."""
        from agent.prompt_builder import breakdown
        from tools.registry import get_toolset

        built = self.fixed_prompt()
        return breakdown(built.parts, built.tools, get_toolset)

    def _save_trajectory(self, messages: list[dict], user_message: str, completed: bool) -> None:
        from agent.trajectory import save_trajectory

        try:
            save_trajectory(hermes_home(), messages, self._cached_system_prompt, self.model, completed, self.session_id)
        except OSError as exc:
            self._emit_status("warning", f"Could not save the trajectory: {exc}")

    # ---- the public API ----------------------------------------------------------------------

    def run_conversation(self, user_message: str, system_message: Optional[str] = None,
                         conversation_history: Optional[list] = None, task_id: Optional[str] = None,
                         stream_callback: Optional[Callable[[str], None]] = None) -> dict:
        """One user turn: preflight, then call/tools until a final answer (SPEC §2, §6)."""
        self._interrupt_event.clear()
        if self.ephemeral_system_prompt:
            system_message = "\n\n".join(p for p in (system_message, self.ephemeral_system_prompt) if p)
        if self._tool_ctx is not None:
            self._tool_ctx.turn = {}
        self._freeze_tools()
        extra = plugin_hooks.turn_started(self, user_message, new_session=self._is_new_session())
        if extra:
            system_message = "\n\n".join(p for p in (system_message, extra) if p)
        try:
            state = build_turn(self, user_message, system_message, conversation_history, task_id,
                               stream_callback)
        except HistoryLoadError as exc:  # never answer (or write) without the stored history
            state = TurnState(agent=self, messages=list(self.messages), system_prompt="",
                              user_message=user_message, task_id=task_id)
            return results.failed_result(state, self._redact(str(exc)))
        try:
            preflight_compress(self, state)
            result = run_loop(self, state)
        except Exception as exc:  # a bug must not cost the user their turn: persist, then report
            log.exception("turn failed")
            self._persist_session(state.messages)
            result = results.failed_result(state, f"Internal error: {type(exc).__name__}: {self._redact(str(exc))}")
        finally:
            self.messages = state.messages
            self._cleanup_task_resources(task_id)
        if self.save_trajectories:
            self._save_trajectory(state.messages, user_message, bool(result.get("completed")))
        plugin_hooks.turn_ended(self, user_message, result)
        return result

    def _is_new_session(self) -> bool:
        """No turn of this session has run yet (in this process or, resumed, before it)."""
        return self._history_loaded and not self.messages and self._cached_system_prompt is None

    def history(self) -> list[dict]:
        """The live history; a resumed session's is read from the store on first use (``messages``
        stays empty until then). Raises HistoryLoadError when the store cannot be read."""
        return self._load_history()

    def chat(self, message: str) -> str:
        """Convenience: one turn, the final text."""
        return self.run_conversation(message).get("final_response") or ""

    def interrupt(self, message: Optional[str] = None) -> None:
        """Stop the running turn from any thread: a request in flight is cut at once."""
        self._interrupt_event.set()
        with self._inflight_lock:  # a borrowed client is never cut after it went back to the pool
            client = self._inflight
            if client is not None and self.provider == "local":
                client.abort()  # the model's child stops at its next token
            elif client is not None:
                abort_connections(client)

    def close(self) -> None:
        """Release what this agent holds: its own provider client's connections (a gateway drops
        agents all the time; their sockets must not pile up). The agent may be used again after."""
        client, self._client = (self._client, None) if self._owns_client else (None, self._client)
        close = getattr(client, "close", None)
        if callable(close) and self.provider != "local":
            try:
                close()
            except Exception as exc:
                log.debug("closing the provider client: %s", exc)

    def _compress_context(self, messages: list, system_message: str, **kwargs: Any) -> tuple[list, str]:
        return compress_context(self, messages, system_message, **kwargs)

    def compress(self, focus: Optional[str] = None) -> dict:
        """Manual compaction (``/compress``); honours the cross-process lock."""
        messages = self._load_history()
        system_prompt = self._get_system_prompt()
        before_tokens = estimate_messages_tokens_rough(messages)
        new, _ = self._compress_context(messages, system_prompt, focus=focus, force=True)
        deferred = compression_skipped_due_to_lock(self)
        changed = new is not messages
        if changed:
            self.messages = new
        after_tokens = estimate_messages_tokens_rough(new)
        if deferred:
            msg = "Compression is already running for this session in another process; try again shortly."
        elif changed:
            msg = f"Compressed {len(messages)} -> {len(new)} messages (~{before_tokens:,} -> ~{after_tokens:,} tokens)."
        else:
            why = getattr(self.context_compressor, "nothing_to_compact", None)
            why = why(messages) if callable(why) else None
            msg = (f"Nothing to compress: {why}." if why else "Compression made no change: a "
                   "summary would not be smaller than what it replaces.")
        return {"compressed": changed, "deferred": deferred, "before_tokens": before_tokens,
                "after_tokens": after_tokens, "message": msg}

    def new_session(self) -> str:
        """Start a fresh session; the old one is ended and stays in the store."""
        self._recorder.end("new_session")
        self._recorder.start(_new_session_id())
        self.messages = []
        self._history_loaded = True
        self._cached_system_prompt = None
        self._prompt = None
        self._offer_tools(self._all_tools)
        self._tools_frozen = False  # the next session may see tools that registered since
        self._usage_baseline = None
        self.compactions = 0
        self.session_prompt_tokens = self.session_completion_tokens = self.session_api_calls = 0
        self.session_cache_read_tokens = 0
        return self.session_id

    def undo_last_turn(self) -> Optional[str]:
        """Drop this agent's last user message and what followed it; returns its text (for ``/retry``).

        Only those messages' rows become inactive (by id; they stay in the store): rows another process
        appended meanwhile stay live. A compaction summary is never undone: a turn that was folded into
        one is past undoing (None, like an empty history)."""
        from agent.context_compressor import last_compaction_index

        messages = self._load_history()
        floor = last_compaction_index(messages) + 1
        idx = next((i for i in range(len(messages) - 1, floor - 1, -1)
                    if messages[i].get("role") == "user"), None)
        if idx is None:
            return None
        removed = content_text(messages[idx].get("content"))
        self._recorder.truncate(messages, idx)
        self.messages = messages[:idx]
        self._usage_baseline = None
        return removed

    def usage(self) -> dict:
        comp = self.context_compressor
        window = getattr(comp, "context_length", 0) or 0
        baseline = self._usage_baseline
        if baseline is not None and baseline[1] <= len(self.messages):
            ctx_tokens = baseline[0] + estimate_messages_tokens_rough(self.messages[baseline[1]:])
        else:
            ctx_tokens = estimate_messages_tokens_rough(self.messages)
        return {"prompt_tokens": self.session_prompt_tokens, "completion_tokens": self.session_completion_tokens,
                "total_tokens": self.session_prompt_tokens + self.session_completion_tokens,
                "api_calls": self.session_api_calls, "context_length": window, "context_tokens": ctx_tokens,
                "context_fill": (ctx_tokens / window) if window else 0.0, "compactions": self.compactions,
                "model": self.model, "session_id": self.session_id}
