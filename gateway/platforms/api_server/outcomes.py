"""What a turn's outcome looks like on the wire (pure): HTTP errors, finish reasons, the ``hermes`` member.

SPEC §15: the last chunk's ``finish_reason`` is ``stop``, ``length`` (the turn stopped before an answer,
e.g. at its iteration limit) or ``error`` (a failed or interrupted turn), and a turn that did not simply
complete carries ``"hermes": {"completed", "failed", "partial", "error_code"}``. A lock-deferred turn is
``partial``, not failed: its message is kept and the next one goes through.
"""
from __future__ import annotations

from typing import Any, Optional

from gateway.platforms.api_server.wire import APIError

INTERRUPTED = "The turn was interrupted before it finished; retry shortly."


def ending(outcome: Any, key: Optional[str]) -> tuple[str, Optional[dict[str, Any]]]:
    """(finish_reason, hermes member or None) of a turn outcome."""
    result = outcome.result or {}

    def member(code: str, failed: bool, partial: bool = True) -> dict[str, Any]:
        return {"completed": False, "failed": failed, "partial": partial, "error_code": code}

    if outcome.kind == "ok":
        if result.get("completed", True) is not False:
            return "stop", None
        return "length", member("max_iterations", failed=False)
    if outcome.kind == "deferred":
        return "stop", member("compression_deferred", failed=False)
    if outcome.kind == "exhausted":
        if key is None:
            return "error", member("context_length_exceeded", failed=True)
        return "error", {**member("compression_exhausted", failed=True), "session_id": outcome.session_id}
    if outcome.kind == "interrupted":
        return "error", member("interrupted", failed=False)
    return "error", member("agent_error", failed=True, partial=bool(result.get("partial", False)))


def message_text(outcome: Any) -> str:
    """What the user reads for this outcome (an interrupted turn has no text of its own)."""
    if outcome.kind == "interrupted" and not outcome.text:
        return INTERRUPTED
    return outcome.text or ""


def raise_for(outcome: Any, key: Optional[str]) -> None:
    """A non-streamed turn that produced no answer becomes an OpenAI error response."""
    if outcome.kind == "failed":
        raise APIError(500, outcome.text, "server_error", "agent_error")
    if outcome.kind == "exhausted" and key is None:
        raise APIError(400, outcome.text, code="context_length_exceeded", param="messages")
    if outcome.kind == "interrupted":
        raise APIError(503, INTERRUPTED, "server_error", "interrupted", headers={"Retry-After": "5"})


def tool_progress(event: dict[str, Any]) -> dict[str, Any]:
    """A ``hermes.tool.progress`` SSE record from an agent tool event. ``choices: []`` makes the record
    look like a usage-only chunk to OpenAI SDKs that parse named events as chunks."""
    done = event.get("type") == "tool_end"
    data: dict[str, Any] = {"toolCallId": str(event.get("id") or ""), "tool": str(event.get("name") or ""),
                            "status": "completed" if done else "running"}
    if done:
        data["ok"] = bool(event.get("ok", True))
    return {**data, "object": "hermes.tool.progress", "choices": []}
