"""The Hermes Agent keyword arguments ``AIAgent`` accepts beyond its own signature, in one place.

Code written for Hermes Agent passes these; they must not crash. Anything else is a TypeError
naming it: a misspelt ``disabled_toolsets`` must not silently leave tools on. To support one for
real, give ``AIAgent`` the parameter (real parameters win) or move it to HONOURED here and read it
with ``kwargs.get``; an ignored one needs only its line in IGNORED.
"""
from __future__ import annotations

from typing import Any, Iterable

# Read by AIAgent.__init__ from **kwargs.
HONOURED: dict[str, str] = {
    "tool_delay": "seconds to wait before each batch of tool calls",
    "ephemeral_system_prompt": "added to the system prompt of every request, never stored",
    "max_tokens": "cap on the tokens of each model reply",
    "verbose_logging": "DEBUG logging for the hermes.agent logger",
}

# Accepted so Hermes Agent code keeps running; no effect here (yet).
IGNORED: dict[str, str] = {
    "log_prefix_chars": "log formatting",
    "log_prefix": "log formatting",
    "providers_allowed": "OpenRouter provider routing",
    "providers_ignored": "OpenRouter provider routing",
    "providers_order": "OpenRouter provider routing",
    "provider_sort": "OpenRouter provider routing",
    "reasoning_config": "reasoning effort settings",
    "prefill_messages": "few-shot messages before the conversation",
    "iteration_budget": "a budget shared with subagents",
    "fallback_model": "a second model when the first fails",
    "clarify_callback": "the clarify tool (not built here)",
    "step_callback": "per-iteration callback",
    "thinking_callback": "reasoning text callback",
    "reasoning_callback": "reasoning text callback",
    "stream_delta_callback": "use run_conversation(stream_callback=...)",
    "honcho_session_key": "Honcho memory integration",
    "api_mode": "chat completions is the only wire protocol",
    "acp_command": "ACP editor integration",
    "acp_args": "ACP editor integration",
    "provider_require_parameters": "OpenRouter provider routing",
    "provider_data_collection": "OpenRouter provider routing",
    "honcho_manager": "Honcho memory integration",
    "honcho_config": "Honcho memory integration",
    "checkpoints_enabled": "file checkpoints before edits",
    "checkpoint_max_snapshots": "file checkpoints before edits",
    "pass_session_id": "session id in the system prompt",
}

ACCEPTED = frozenset(HONOURED) | frozenset(IGNORED)


def check_kwargs(kwargs: Iterable[str]) -> None:
    """Raise TypeError naming every keyword neither AIAgent nor Hermes Agent defines."""
    unknown = sorted(k for k in kwargs if k not in ACCEPTED)
    if unknown:
        names = ", ".join(repr(k) for k in unknown)
        plural = "s" if len(unknown) > 1 else ""
        raise TypeError(f"AIAgent() got unexpected keyword argument{plural} {names}")


def honoured(kwargs: dict[str, Any], name: str, default: Any = None) -> Any:
    """The value of a honoured compatibility keyword (None when absent)."""
    value = kwargs.get(name)
    return default if value is None else value
