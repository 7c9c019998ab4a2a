"""``AIAgent``: the public facade of the runtime (SPEC §1), kept thin.

The turn lives in ``agent.turn_context`` (prologue, preflight) and ``agent.conversation_loop``
(calls, gates, error paths), compression in ``agent.conversation_compression``; the loop drives
the agent through ``agent.host.TurnHost``. AIAgent's rooms are mixins in ``agent/aiagent/``:
provider client and requests, tools, system prompt, session in the store, the surface's callbacks.
Surfaces build agents through ``agent.factory.build_agent``; this constructor is the
Hermes-compatible one for library users.

The names ``OpenAI``, ``get_tool_definitions``, ``check_toolset_requirements`` and
``jittered_backoff`` are module globals looked up at call time, so patching them here takes
effect. ``OpenAI`` is imported on first use: ``import openai`` alone costs about a second.
"""
from __future__ import annotations

import logging
import os
import threading
import weakref
from pathlib import Path
from typing import Any, Callable, Optional

from agent import plugin_hooks, results
from agent.agent_kwargs import check_kwargs, honoured
from agent.aiagent.prompt import PromptMixin
from agent.aiagent.provider import ProviderMixin
from agent.aiagent.session import SessionMixin, new_session_id
from agent.aiagent.status import StatusMixin, hooks_from
from agent.aiagent.tools import ToolsMixin
from agent.callbacks import AgentHooks, StatusKind
from agent.conversation_compression import compress_context, compression_skipped_due_to_lock
from agent.conversation_loop import run_loop
from agent.persistence import HistoryLoadError, SessionRecorder
from agent.providers.models import settle as settle_model
from agent.providers.windows import family_window, window_for
from agent.providers.openai_compat import abort_connections
from agent.providers.client_pool import close_client
from agent.request_view import RequestView
from agent.turn_context import TurnState, build_turn, preflight_compress
from hermes_core.auxiliary import check_auxiliary
from hermes_core.config import HermesConfig, load_config, load_env_file, load_plugins
from hermes_core.provider_settings import ProviderSettings, resolve_provider
from hermes_core.retry import jittered_backoff
from hermes_core.tokens import estimate_messages_tokens_rough
from tools.registry import check_toolset_requirements, get_tool_definitions
from tools.registry import generation as tools_generation

log = logging.getLogger("hermes.agent")

__all__ = ["AIAgent", "OpenAI", "get_tool_definitions",  # noqa: F822 (OpenAI is lazy)
           "check_toolset_requirements", "jittered_backoff"]

from agent.providers.windows import (  # noqa: E402
    DEFAULT_CONTEXT_LENGTH, KNOWN_CONTEXT_LENGTHS,  # noqa: F401
)


def __getattr__(name: str) -> Any:
    if name == "OpenAI":
        from openai import OpenAI as _OpenAI

        globals()["OpenAI"] = _OpenAI
        return _OpenAI
    raise AttributeError(f"module 'run_agent' has no attribute {name!r}")


def context_length_for(model: str) -> int:
    """The known window of the model's family (``agent.providers.windows``)."""
    return family_window(model)


def _join(*parts: Optional[str]) -> Optional[str]:
    """System message parts, blank ones left out (None when none is left)."""
    return "\n\n".join(p for p in parts if p) or None


class AIAgent(ProviderMixin, ToolsMixin, PromptMixin, SessionMixin, StatusMixin):
    """One conversation with one model, its tools, and its session in the store."""

    def __init__(self, base_url: Optional[str] = None, api_key: Optional[str] = None,
                 model: Optional[str] = None, provider: Optional[str] = None,
                 max_iterations: int = 90, quiet_mode: bool = False,
                 skip_context_files: bool = False, skip_memory: bool = False,
                 session_db: Any = None, session_id: Optional[str] = None,
                 enabled_toolsets: Optional[list[str]] = None,
                 disabled_toolsets: Optional[list[str]] = None, save_trajectories: bool = False,
                 config: Optional[HermesConfig] = None, platform: str = "cli",
                 cwd: Optional[str] = None, context_length: Optional[int] = None,
                 yolo: bool = False,
                 tool_progress_callback: Optional[Callable[[dict], None]] = None,
                 status_callback: Optional[Callable[[str, str], None]] = None,
                 approval_callback: Optional[Callable[[str, str], str]] = None,
                 confine_to: Optional[str] = None, mutating_tools: Optional[str] = None,
                 hooks: Optional[AgentHooks] = None,
                 provider_settings: Optional[ProviderSettings] = None,
                 **hermes_kwargs: Any) -> None:
        """Hermes Agent keywords beyond these are listed in ``agent.agent_kwargs`` (others:
        TypeError).

        ``confine_to``: file tools refuse paths outside this directory (the gateway's working
        dir). ``mutating_tools``: "allow", "ask" (approval per call) or "deny" for tools that
        change things; default "ask" on the embedded model (provider ``local``), else "allow".
        ``hooks``: the callbacks as one ``agent.callbacks.AgentHooks`` (or the keyword ones).
        ``provider_settings``: what a surface resolved (agent.factory), taken as it is.
        """
        check_kwargs(hermes_kwargs)
        if mutating_tools not in (None, "allow", "ask", "deny"):
            raise ValueError("mutating_tools must be 'allow', 'ask' or 'deny', "
                             f"not {mutating_tools!r}")
        self.hooks = hooks_from(hooks, tool_progress=tool_progress_callback,
                                status=status_callback, approval=approval_callback)
        if config is None:
            load_env_file()
            config = load_config()
        self.config = config
        load_plugins(config)  # once per process: the tools, hooks and providers plugins offer
        settings = self._use_provider(provider_settings, base_url, api_key, model, provider)
        self.max_iterations = max_iterations
        self.quiet_mode = quiet_mode
        self.skip_context_files = skip_context_files
        self.save_trajectories = save_trajectories or config.agent.save_trajectories
        self.platform = platform
        self.cwd = Path(cwd or config.terminal.cwd or os.getcwd()).expanduser()
        self.yolo = yolo
        self._honour(hermes_kwargs)
        self.confine_to = Path(confine_to).expanduser() if confine_to else None
        self.mutating_tools = mutating_tools or ("ask" if self.provider == "local" else "allow")
        self.file_io: Any = None  # set by a surface: reads/writes through an editor (ACP fs/*)
        self.origin: Optional[dict] = None  # set by a surface: the chat a turn comes from
        self.owner: Optional[str] = None  # set by a surface: a chat user's "<platform>:<id>"
        self.write_fence: Any = None  # set by a surface per turn: what its writes must prove
        self._use_prompt_caching = False
        self._select_tools(enabled_toolsets, disabled_toolsets, skip_memory)
        self._use_compressor(context_length or settings.context_length)
        self._recorder = self._new_recorder(session_db, session_id or new_session_id(), platform)
        self._start_state(resumed=session_id is not None)

    def _new_recorder(self, session_db: Any, session_id: str, platform: str) -> SessionRecorder:
        """The recorder points back weakly: a dropped agent is freed at once by its reference
        count, not by a full collection of the process (gateway/heap.py holds those back)."""
        me = weakref.proxy(self)
        return SessionRecorder(
            session_db, session_id, platform, model=lambda: me.model,
            warn=lambda m: me.emit_status(StatusKind.WARNING, m), fence=lambda: me.write_fence,
            owner=lambda: me.owner, open_store=lambda: me._open_store())

    def _use_provider(self, settings: Optional[ProviderSettings], base_url: Optional[str],
                      api_key: Optional[str], model: Optional[str],
                      provider: Optional[str]) -> ProviderSettings:
        settings = settings or resolve_provider(self.config, base_url=base_url, api_key=api_key,
                                                model=model, provider=provider)
        self._provider_settings = settings  # the wire and plugin of this provider (issue 25)
        check_auxiliary(self.config, settings)  # junk under auxiliary: refused now, not mid-task
        self._fallback: Any = None  # agent.providers.fallback.AgentChain, made when first needed
        self.provider = settings.provider
        self.base_url = settings.base_url
        self.api_key = settings.api_key
        self.model = settings.model or settle_model(settings).model
        self._model_path = settings.model_path
        return settings

    def _honour(self, hermes_kwargs: dict[str, Any]) -> None:
        """The Hermes keywords this agent acts on (``agent.agent_kwargs.HONOURED``)."""
        self.tool_delay = float(honoured(hermes_kwargs, "tool_delay", 0.0))
        self.ephemeral_system_prompt: Optional[str] = honoured(hermes_kwargs,
                                                               "ephemeral_system_prompt")
        self.max_tokens: Optional[int] = honoured(hermes_kwargs, "max_tokens")
        if honoured(hermes_kwargs, "verbose_logging", False):
            log.setLevel(logging.DEBUG)

    def _select_tools(self, enabled: Optional[list[str]], disabled: Optional[list[str]],
                      skip_memory: bool) -> None:
        from agent.tool_selection import memory_enabled, select_toolsets

        cfg, platform = self.config, self.platform
        self.skip_memory = not memory_enabled(cfg, skip_memory=skip_memory, platform=platform)
        self.enabled_toolsets, self.disabled_toolsets = select_toolsets(
            enabled, disabled, cfg, skip_memory=skip_memory, platform=platform)
        self._tool_ctx: Any = None
        self._load_tools()

    def _use_compressor(self, context_length: Optional[int]) -> None:
        from agent.context_compressor import ContextCompressor

        comp_cfg = self.config.compression
        self.compression_enabled = comp_cfg.enabled
        self.max_compression_attempts = comp_cfg.max_attempts
        window = context_length or window_for(self.model, self.base_url)
        self._context_length_pinned = bool(context_length)
        self.context_compressor: Any = ContextCompressor.from_config(
            comp_cfg, window, summarize=self._make_summarizer())

    def _start_state(self, resumed: bool) -> None:
        """The state of a session not yet used here (a resumed one's history loads lazily)."""
        self.messages: list[dict] = []
        self._history_loaded = not resumed
        self._prompt: Any = None  # agent.prompt_builder.BuiltPrompt of this session, when built
        self._cached_system_prompt: Optional[str] = None
        self.usage_baseline: Optional[tuple[int, int]] = None
        self.request_view = RequestView()
        self._compression_skipped_due_to_lock: Any = None
        self._interrupt_event = threading.Event()
        self._client: Any = None
        self._owns_client = False
        self._inflight: Any = None  # the client of the request on the wire (interrupt() cuts it)
        self._inflight_lock = threading.Lock()
        self._raw_body = True
        self.compactions = 0
        self.session_prompt_tokens = 0
        self.session_completion_tokens = 0
        self.session_api_calls = 0
        self.session_cache_read_tokens = 0  # of session_prompt_tokens, read from the prompt cache

    # ---- what tests patch here ---------------------------------------------------------------

    def _openai(self) -> Any:
        import run_agent  # the seed patches run_agent.OpenAI

        return run_agent.OpenAI

    def _load_tools(self) -> None:
        """The registry's tools in this agent's toolsets; MCP tools join as their servers
        connect."""
        self._tools_generation = tools_generation()
        checked: dict = {}  # each availability check runs once for both lists
        self._all_tools: list[dict] = get_tool_definitions(
            enabled_toolsets=self.enabled_toolsets, disabled_toolsets=self.disabled_toolsets,
            checked=checked) or []
        self._checked = checked  # ``unavailable_toolsets`` reuses these answers
        self._offer_tools(self._all_tools)  # fitted to the window when the system prompt is built
        self._tools_frozen = False

    @property
    def unavailable_toolsets(self) -> dict[str, str]:
        """toolset -> why none of its tools can run here (Hermes' attribute). Worked out when
        asked, not for every new agent, from the answers the agent's tool list was made of."""
        return check_toolset_requirements(dict(self._checked)) or {}

    @property
    def interrupt_event(self) -> threading.Event:
        """Set by ``interrupt()``; cleared when a turn starts."""
        return self._interrupt_event

    # ---- the public API ----------------------------------------------------------------------

    def run_conversation(self, user_message: str, system_message: Optional[str] = None,
                         conversation_history: Optional[list] = None,
                         task_id: Optional[str] = None,
                         stream_callback: Optional[Callable[[str], None]] = None) -> dict:
        """One user turn: preflight, then call/tools until a final answer (SPEC §2, §6)."""
        self._interrupt_event.clear()
        system_message = _join(system_message, self.ephemeral_system_prompt)
        if self._tool_ctx is not None:
            self._tool_ctx.turn = {}
        self._freeze_tools()
        extra = plugin_hooks.turn_started(self, user_message, new_session=self._is_new_session())
        system_message = _join(system_message, extra)
        try:
            state = build_turn(self, user_message, system_message, conversation_history, task_id,
                               stream_callback or self.hooks.stream)
        except HistoryLoadError as exc:  # never answer (or write) without the stored history
            state = TurnState(agent=self, messages=list(self.messages), system_prompt="",
                              user_message=user_message, task_id=task_id)
            return results.failed_result(state, self.redact(str(exc)))
        try:
            preflight_compress(self, state)
            result = run_loop(self, state)
        except Exception as exc:  # a bug must not cost the user their turn: persist, then report
            log.exception("turn failed")
            self._persist_session(state.messages)
            result = results.failed_result(
                state, f"Internal error: {type(exc).__name__}: {self.redact(str(exc))}")
        finally:
            self._settle_store()  # every write of the turn is done when it returns
            self.messages = state.messages
            self._cleanup_task_resources(task_id)
        if self.save_trajectories:
            self._save_trajectory(state.messages, user_message, bool(result.get("completed")))
        plugin_hooks.turn_ended(self, user_message, result)
        return result

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
        agents all the time; their sockets must not pile up). The agent may be used again
        after."""
        client, self._client = (self._client, None) if self._owns_client else (None, self._client)
        if client is not None and self.provider != "local":
            close_client(client)

    def _compress_context(self, messages: list, system_message: str,
                          **kwargs: Any) -> tuple[list, str]:
        return compress_context(self, messages, system_message, **kwargs)

    def compress(self, focus: Optional[str] = None) -> dict:
        """Manual compaction (``/compress``); honours the cross-process lock."""
        messages = self.history()
        system_prompt = self.system_prompt()
        before_tokens = estimate_messages_tokens_rough(messages)
        new, _ = self._compress_context(messages, system_prompt, focus=focus, force=True)
        deferred = compression_skipped_due_to_lock(self)
        changed = new is not messages
        if changed:
            self.messages = new
        after_tokens = estimate_messages_tokens_rough(new)
        if deferred:
            msg = ("Compression is already running for this session in another process; "
                   "try again shortly.")
        elif changed:
            msg = (f"Compressed {len(messages)} -> {len(new)} messages "
                   f"(~{before_tokens:,} -> ~{after_tokens:,} tokens).")
        else:
            why = getattr(self.context_compressor, "nothing_to_compact", None)
            why = why(messages) if callable(why) else None
            msg = (f"Nothing to compress: {why}." if why else "Compression made no change: a "
                   "summary would not be smaller than what it replaces.")
        return {"compressed": changed, "deferred": deferred, "before_tokens": before_tokens,
                "after_tokens": after_tokens, "message": msg}
