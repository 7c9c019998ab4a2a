"""``TurnHost``: exactly what the turn needs from the agent that runs it.

The turn's modules (``turn_context``, ``conversation_loop``, ``conversation_compression``,
``results``, ``plugin_hooks``) take a ``TurnHost`` and touch nothing else of it;
``tests/test_turn_host.py`` reads them with ``ast`` to hold that, and checks that ``AIAgent``
implements every member. A host for another purpose (a test double, an embedding) implements
this and gets the loop, compression and its error paths unchanged.

Three names keep their underscores because the seed test (and Hermes' own tests) patch them on
the agent object: ``_compress_context``, ``_persist_session`` and the lock-skip signal
``_compression_skipped_due_to_lock`` (``True`` or the holder's string after a pass that lost the
compression lock, else ``None``; read only through
``conversation_compression.compression_skipped_due_to_lock``).

``context_compressor`` is any object with the attributes SPEC §4 names
(``protect_first_n``, ``protect_last_n``, ``threshold_tokens``, ``context_length``,
``last_prompt_tokens``, ``should_compress``, ``should_defer_preflight_to_real_usage``,
``get_active_compression_failure_cooldown``); the loop reads anything beyond them with
``getattr`` and a default.
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Optional, Protocol, runtime_checkable

if TYPE_CHECKING:  # pragma: no cover
    from agent.callbacks import StatusKind
    from agent.providers.openai_compat import ModelReply
    from agent.request_view import RequestView
    from agent.turn_context import TurnState


@runtime_checkable
class TurnHost(Protocol):
    """The agent as the turn sees it (implemented by ``run_agent.AIAgent``)."""

    # settings and state the turn reads
    model: str
    base_url: Optional[str]
    platform: str
    tools: list[dict]  # the tool schemas offered this session
    messages: list[dict]  # the live history (plugins' hooks see a copy)
    max_iterations: int
    compression_enabled: bool
    max_compression_attempts: int
    context_compressor: Any  # see the module docstring
    usage_baseline: Optional[tuple[int, int]]  # (prompt tokens read, messages they covered)
    request_view: RequestView  # the wire view of ``messages``, kept between requests
    _compression_skipped_due_to_lock: Any  # the seed's signal: True, a holder string, or None

    @property
    def session_id(self) -> str: ...

    @property
    def session_db(self) -> Any: ...

    @property
    def lease_lost(self) -> Optional[str]:
        """Why this agent's writes were refused (its turn lease was lost), else None."""

    @property
    def interrupt_event(self) -> threading.Event:
        """Set when the user asked the running turn to stop."""

    # the prologue
    def history(self) -> list[dict]:
        """The agent's own history (a resumed session's read from the store on first use)."""

    def adopt_history(self, messages: list[dict]) -> None:
        """A caller-supplied history: the caller's to store; only what the turn adds is written."""

    def system_prompt(self) -> str:
        """The session's fixed system prompt (built and stored on first use)."""

    # the request and the tools
    def call_model_api(self, api_messages: list[dict], state: TurnState) -> ModelReply: ...

    def record_usage(self, state: TurnState, reply: ModelReply) -> None: ...

    def learn_context_limit(self, limit: int, lower_only: bool = True,
                            announce: bool = True) -> None: ...

    def run_tools(self, tool_calls: list[dict], state: TurnState) -> list[dict]: ...

    # compression (the host side: agent.conversation_compression)
    def _compress_context(self, messages: list, system_message: str,
                          **kwargs: Any) -> tuple[list, str]: ...

    def commit_compaction(self, old: list[dict], new: list[dict],
                          lock_holder: Optional[str] = None) -> None: ...

    def refresh_memory_snapshot(self, system_prompt: str) -> str: ...

    # the store
    def _persist_session(self, messages: list[dict]) -> None: ...

    # telling the user
    def emit_status(self, kind: StatusKind, message: str) -> None: ...

    def redact(self, text: str) -> str:
        """``text`` with the API keys and secret-looking values masked."""

    def api_key_setting(self) -> str:
        """Where the user sets this provider's key (for an authentication failure's message)."""
