"""The result dicts of ``run_conversation``: normal, deferred, exhausted, failed — in one place
(SPEC §2, §6)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:  # pragma: no cover
    from agent.turn_context import TurnState

DEFERRED_MESSAGE = (
    "Context compression is already running for this session in another process, so this turn "
    "was paused. Nothing was lost: your message is saved, and your next message will go through."
)


def _base(state: TurnState, *, final_response: Optional[str], completed: bool, partial: bool,
          failed: bool) -> dict:
    agent = state.agent
    return {
        "final_response": final_response,
        "messages": state.messages,
        "api_calls": state.api_calls,
        "completed": completed,
        "partial": partial,
        "failed": failed,
        "interrupted": state.interrupted,
        "compression_deferred": False,
        "compression_exhausted": False,
        "input_tokens": state.prompt_tokens,
        "output_tokens": state.completion_tokens,
        "prompt_tokens": state.prompt_tokens,
        "completion_tokens": state.completion_tokens,
        "total_tokens": state.prompt_tokens + state.completion_tokens,
        "last_prompt_tokens": getattr(agent.context_compressor, "last_prompt_tokens", 0) or 0,
        "session_id": agent.session_id,
        "model": agent.model,
    }


def normal_result(state: TurnState, final_response: Optional[str]) -> dict:
    """A final answer, or a stop at max_iterations / interrupt (completed=False then)."""
    completed = final_response is not None and not state.interrupted
    res = _base(state, final_response=final_response, completed=completed,
                partial=not completed, failed=False)
    if not completed and state.stop_reason:
        res["error"] = state.stop_reason
    return res


def deferred_result(state: TurnState) -> dict:
    res = _base(state, final_response=DEFERRED_MESSAGE, completed=False, partial=True, failed=False)
    res["compression_deferred"] = True
    res["error"] = DEFERRED_MESSAGE
    return res


def exhausted_result(state: TurnState, detail: str) -> dict:
    message = (f"This conversation no longer fits the model's context window and compression "
               f"could not shrink it further ({detail}). Start a new session to continue; this "
               "one is saved.")
    res = _base(state, final_response=message, completed=False, partial=True, failed=True)
    res["compression_exhausted"] = True
    res["error"] = message
    return res


def failed_result(state: TurnState, message: str, code: str = "agent_error",
                  retry_after: Optional[float] = None) -> dict:
    """A failed turn; ``error_code`` says whose failure (``agent.provider_failures`` codes for the
    provider's, ``agent_error`` for ours), ``retry_after`` the provider's hint when it gave one."""
    res = _base(state, final_response=message, completed=False, partial=True, failed=True)
    res["error"] = message
    res["error_code"] = code
    if retry_after is not None:
        res["retry_after"] = retry_after
    return res
