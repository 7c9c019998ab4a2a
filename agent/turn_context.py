"""The turn prologue: the per-turn state, the user message in the history, and preflight
compression.

``estimate_request_tokens_rough`` is looked up through this module's globals at call time (the
seed test patches it here).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

from agent.conversation_compression import compression_skipped_due_to_lock, made_progress
from agent.host import TurnHost
from hermes_core.tokens import estimate_messages_tokens_rough, estimate_request_tokens_rough


@dataclass
class TurnState:
    """Everything one ``run_conversation`` call carries between the loop's steps."""

    agent: TurnHost
    messages: list[dict]
    system_prompt: str
    user_message: str
    task_id: Optional[str] = None
    stream_callback: Optional[Callable[[str], None]] = None
    api_calls: int = 0
    compression_attempts: int = 0
    compression_blocked: bool = False
    interrupted: bool = False
    stop_reason: Optional[str] = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    extras: dict = field(default_factory=dict)

    @property
    def attempts_left(self) -> bool:
        return self.compression_attempts < self.agent.max_compression_attempts


def build_turn(agent: TurnHost, user_message: str, system_message: Optional[str],
               conversation_history: Optional[list], task_id: Optional[str],
               stream_callback: Optional[Callable[[str], None]]) -> TurnState:
    """Start a turn: pick the history and append the user message."""
    if conversation_history is not None:
        messages = list(conversation_history)
        agent.adopt_history(messages)
    else:
        messages = agent.history()
    # a previous turn that ended without a reply leaves two user messages in a row: the request
    # view (agent.request_view) puts a placeholder between them on the wire, never in the store
    system_prompt = agent.system_prompt()
    if system_message:
        system_prompt = f"{system_prompt}\n\n{system_message}" if system_prompt else system_message
    messages.append({"role": "user", "content": user_message})
    # the user message is written just before the first request goes out (call_model_api), and
    # every ending path persists too, so it is never lost
    return TurnState(agent=agent, messages=messages, system_prompt=system_prompt,
                     user_message=user_message, task_id=task_id, stream_callback=stream_callback)


def _request_tokens(agent: TurnHost, state: TurnState) -> int:
    return estimate_request_tokens_rough(state.messages, system_prompt=state.system_prompt,
                                         tools=agent.tools)


def _preflight_tokens(agent: TurnHost, state: TurnState) -> int:
    """A real provider reading plus an estimate of what was added since; else the rough
    estimate."""
    baseline = agent.usage_baseline
    if baseline is not None and baseline[1] <= len(state.messages):
        return baseline[0] + estimate_messages_tokens_rough(state.messages[baseline[1]:])
    return _request_tokens(agent, state)


def _preflight_due(agent: TurnHost, state: TurnState, tokens: int) -> bool:
    comp = agent.context_compressor
    if not comp.should_compress(tokens) or comp.should_defer_preflight_to_real_usage(tokens):
        return False
    window = getattr(comp, "window", None) or comp.context_length
    return not (comp.get_active_compression_failure_cooldown() and tokens <= window)


def preflight_compress(agent: TurnHost, state: TurnState) -> None:
    """Site 1 (SPEC §6): compress before the first call when the request is over the threshold."""
    comp = agent.context_compressor
    if not agent.compression_enabled or comp is None:
        return
    if len(state.messages) <= comp.protect_first_n + 3:
        return
    tokens = _preflight_tokens(agent, state)
    if not _preflight_due(agent, state, tokens):
        return
    while state.attempts_left:
        state.compression_attempts += 1
        before = state.messages
        new_messages, new_prompt = agent._compress_context(before, state.system_prompt,
                                                           approx_tokens=tokens)
        if compression_skipped_due_to_lock(agent):
            state.compression_attempts -= 1  # a lock-skip never burns the budget; stop quietly
            return
        if not made_progress(before, new_messages):
            state.compression_blocked = True
            return
        state.messages = new_messages
        state.system_prompt = new_prompt or state.system_prompt
        tokens = _request_tokens(agent, state)
        if not comp.should_compress(tokens):
            return
