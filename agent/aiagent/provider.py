"""AIAgent's provider room: its SDK client, one request, token usage and the learned window."""
from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING, Any, Callable, Optional

from agent import plugin_hooks
from agent.callbacks import StatusKind
from agent.conversation_loop import Interrupted
from agent.providers.client_pool import ClientPool
from agent.providers.clients import make_client, pool_of
from agent.providers.openai_compat import ModelReply, request_chat

if TYPE_CHECKING:  # pragma: no cover
    from agent.persistence import SessionRecorder
    from agent.turn_context import TurnState
    from hermes_core.config import HermesConfig

LOCAL_MAX_TOOL_ROUNDS = 1  # rounds of tool calls per turn offered to the embedded model
EMPTY_RETRY_TEMPERATURE = 0.7  # the one retry after an empty reply from the embedded model
EMPTY_RETRY_MAX_TOKENS = 192  # ... and its length


class ProviderMixin:
    config: HermesConfig
    provider: str
    base_url: Optional[str]
    api_key: Optional[str]
    model: str
    max_tokens: Optional[int]
    tools: list[dict]
    context_compressor: Any
    usage_baseline: Optional[tuple[int, int]]
    session_prompt_tokens: int
    session_completion_tokens: int
    session_api_calls: int
    session_cache_read_tokens: int
    _provider_settings: Any
    _recorder: SessionRecorder
    _model_path: Optional[str]
    _context_length_pinned: bool
    _client: Any
    _owns_client: bool
    _raw_body: bool
    _inflight: Any
    _inflight_lock: threading.Lock
    _interrupt_event: threading.Event

    if TYPE_CHECKING:  # pragma: no cover - provided by AIAgent and the other rooms
        def _openai(self) -> Any: ...
        def emit_status(self, kind: StatusKind, message: str) -> None: ...
        def _emit_reasoning(self, reply: ModelReply) -> None: ...
        def _persist_ahead(self, messages: list[dict]) -> None: ...
        @property
        def lease_lost(self) -> Optional[str]: ...

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
            client = LocalClient(model_path=self._model_path, seed=m.seed,
                                 temperature=m.temperature, timeout=m.timeout)
            self._raw_body = False
            return client
        return make_client(self._active_settings())

    @property
    def provider_settings(self) -> Any:
        """The main model's ``ProviderSettings`` as they are now (the fallback's while on one):
        what the auxiliary roles default to (``hermes_core.auxiliary``)."""
        return self._active_settings()

    def _active_settings(self) -> Any:
        """The provider settings of the next request (model and key as they are now): the wire
        and plugin come from ``resolve_provider`` (issue 25)."""
        return self._provider_settings.model_copy(update={
            "model": self.model, "api_key": self.api_key, "base_url": self.base_url})

    def call_model_api(self, api_messages: list[dict], state: TurnState) -> ModelReply:
        """One request on this thread; ``interrupt()`` aborts it by closing the client's
        connections. Without a client of its own the agent borrows one from the process's pool
        for this request."""
        local = self.provider == "local"
        if local:
            self._sync_local_window(self.client)
        self._persist_ahead(state.messages)  # the user's message: written as the request goes
        if self.lease_lost:  # another worker holds the session now: nothing goes out
            raise Interrupted()
        pool: Optional[ClientPool] = None
        if self._client is None and not local:
            pool = pool_of(self._active_settings())
        client = pool.borrow() if pool is not None else self.client
        self._inflight = client if (pool is not None or self._owns_client) else None
        try:
            reply = plugin_hooks.around_request(self, api_messages, lambda: request_chat(
                client, model=self.model, messages=api_messages, tools=self._offered(state),
                stream_callback=state.stream_callback, interrupted=self._interrupt_event,
                raw_body=self._raw_body, max_tokens=self._max_tokens(state),
                tool_choice=self._tool_choice(state), temperature=self._retry_temperature(state)))
            if local and self._interrupt_event.is_set():
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

    def _retry_temperature(self, state: TurnState) -> Optional[float]:
        """The embedded model samples greedily, so asking again after an empty reply would get the
        same empty reply: that one retry samples (``EMPTY_RETRY_TEMPERATURE``) instead."""
        if self.provider == "local" and state.extras.get("empty_retry"):
            return EMPTY_RETRY_TEMPERATURE
        return None

    def _max_tokens(self, state: TurnState) -> Optional[int]:
        """The sampled retry of the embedded model is kept short: it must not ramble for minutes."""
        if self.max_tokens is None and self._retry_temperature(state) is not None:
            return EMPTY_RETRY_MAX_TOKENS
        return self.max_tokens

    def _offered(self, state: TurnState) -> Optional[list[dict]]:
        """The tools this request offers: a tiny local model would call tools forever, so after
        ``LOCAL_MAX_TOOL_ROUNDS`` rounds it must answer."""
        rounds = state.extras.get("tool_rounds", 0)
        if self.provider == "local" and rounds >= LOCAL_MAX_TOOL_ROUNDS:
            return None
        return self.tools or None

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
            self.learn_context_limit(n, lower_only=False, announce=False)
            self._context_length_pinned = True

    def learn_context_limit(self, limit: int, lower_only: bool = True,
                            announce: bool = True) -> None:
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
            self.emit_status(StatusKind.INFO, f"Context window is now {limit:,} tokens "
                                              "(learned from the provider).")

    def _make_summarizer(self) -> Callable[..., str]:
        from agent.summarizer import make_summarizer

        from hermes_core.auxiliary import resolve_auxiliary

        main = self._provider_settings
        aux = resolve_auxiliary(self.config, "summary", main)
        timeout = self.config.compression.summary_timeout
        if aux is main:  # the main model's own client: the fallback's while the turn is on one
            me = weakref.proxy(self)  # no cycle through the compressor (see AIAgent.__init__)
            return make_summarizer(lambda: me.client, self.model, timeout=timeout)
        holder: dict[str, Any] = {}

        def aux_client() -> Any:
            if "c" not in holder:
                holder["c"] = make_client(aux)
            return holder["c"]

        return make_summarizer(aux_client, aux.model, timeout=timeout)

    def record_usage(self, state: TurnState, reply: ModelReply) -> None:
        if reply.prompt_tokens:
            state.prompt_tokens += reply.prompt_tokens
            self.session_prompt_tokens += reply.prompt_tokens
            # the reading covers the request just sent: system + every message before this reply
            self.usage_baseline = (reply.prompt_tokens, len(state.messages))
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

    def api_key_setting(self) -> str:
        from hermes_core.provider_table import PROVIDERS

        info = PROVIDERS.get(self.provider)
        return f"{(info and info.key_var) or 'OPENAI_API_KEY'} (or model.api_key in config.yaml)"
