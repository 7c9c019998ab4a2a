"""Where the turn fires the plugins' lifecycle hooks (``hermes_core.hooks``), in one place.

Each function costs one dictionary lookup when no plugin listens, so the turn pays nothing for
hooks nobody registered.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional

from hermes_core.hooks import HOOKS

if TYPE_CHECKING:  # pragma: no cover
    from agent.host import TurnHost

ToolCall = Callable[[str, dict], str]


def around_tools(call: ToolCall, session_id: str, task_id: Optional[str]) -> ToolCall:
    """``call`` with ``pre_tool_call``/``post_tool_call`` fired around each tool."""
    if not (HOOKS.has("pre_tool_call") or HOOKS.has("post_tool_call")):
        return call

    def hooked(name: str, args: dict) -> str:
        HOOKS.fire("pre_tool_call", tool_name=name, args=args, task_id=task_id,
                   session_id=session_id)
        result = call(name, args)
        HOOKS.fire("post_tool_call", tool_name=name, args=args, result=result, task_id=task_id,
                   session_id=session_id)
        return result

    return hooked


def turn_started(agent: TurnHost, user_message: str, new_session: bool) -> Optional[str]:
    """``on_session_start`` (a session's first turn) and ``pre_llm_call``; the context plugins
    asked to add to this turn's system message (ephemeral: never stored, never cached)."""
    if new_session and HOOKS.has("on_session_start"):
        HOOKS.fire("on_session_start", session_id=agent.session_id, platform=agent.platform)
    if not HOOKS.has("pre_llm_call"):
        return None
    answers = HOOKS.fire("pre_llm_call", messages=list(agent.messages), model=agent.model,
                         session_id=agent.session_id, user_message=user_message)
    parts = [str(a.get("context")) for a in answers if isinstance(a, dict) and a.get("context")]
    parts += [a for a in answers if isinstance(a, str) and a.strip()]
    return "\n\n".join(parts) or None


def turn_ended(agent: TurnHost, user_message: str, result: dict) -> None:
    """``post_llm_call`` with the exchange, then ``on_session_end`` (Hermes fires it per turn)."""
    if HOOKS.has("post_llm_call"):
        HOOKS.fire("post_llm_call", user_message=user_message,
                   assistant_response=result.get("final_response"), model=agent.model,
                   session_id=agent.session_id)
    if HOOKS.has("on_session_end"):
        HOOKS.fire("on_session_end", session_id=agent.session_id, platform=agent.platform)


def around_request(agent: TurnHost, messages: list, send: Callable[[], Any]) -> Any:
    """One model request with ``pre_api_request``/``post_api_request`` around it."""
    if HOOKS.has("pre_api_request"):
        HOOKS.fire("pre_api_request", messages=messages, model=agent.model,
                   session_id=agent.session_id)
    reply = send()
    if HOOKS.has("post_api_request"):
        HOOKS.fire("post_api_request", response=reply, model=agent.model,
                   session_id=agent.session_id)
    return reply
