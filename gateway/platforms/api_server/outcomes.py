"""What a turn's outcome looks like on the wire (pure): HTTP errors, finish reasons, the ``hermes``
member.

SPEC §15: the last chunk's ``finish_reason`` is ``stop``, ``length`` (the turn stopped before an
answer, e.g. at its iteration limit) or ``error`` (a failed or interrupted turn), and a turn that
did not simply complete carries ``"hermes": {"completed", "failed", "partial", "error_code"}``. A
lock-deferred turn is ``partial``, not failed: its message is kept and the next one goes through.

A failed turn is one OpenAI-shaped error: 502 when the provider failed (``agent.provider_failures``
codes), 503 with ``Retry-After`` when it is overloaded, 500 for a failure of ours; its message is
the agent's one line, plus "saved" only when a session really kept the message.
"""
from __future__ import annotations

from typing import Any, Optional

from gateway.platforms.api_server.wire import APIError

INTERRUPTED = "The turn was interrupted before it finished; retry shortly."
OVERLOADED_RETRY_AFTER = 30  # seconds, when the provider gave no Retry-After of its own


def error_code(outcome: Any) -> str:
    return str((outcome.result or {}).get("error_code") or "agent_error")


def failure_message(outcome: Any, key: Optional[str]) -> str:
    """The failed turn's one line for an API client (not the chat apology around it); a keyed
    request learns whether its session kept the message (a stateless one stores nothing)."""
    result = outcome.result or {}
    text = " ".join(str(result.get("error") or outcome.text or "The turn failed.").split())
    if key is None:
        return text
    if getattr(outcome, "saved", False):
        return text.rstrip(" .") + ". Your message is saved in the session."
    return text.rstrip(" .") + ". Your message could not be saved; send it again."


def failure_status(outcome: Any) -> tuple[int, dict[str, str]]:
    """(HTTP status, headers) of a failed turn: whose failure it was decides."""
    code = error_code(outcome)
    if code == "provider_overloaded":
        after = (outcome.result or {}).get("retry_after")
        given = isinstance(after, (int, float)) and after > 0
        seconds = int(after) if given else OVERLOADED_RETRY_AFTER
        return 503, {"Retry-After": str(seconds)}
    return (502, {}) if code.startswith("provider_") else (500, {})


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
        return "error", {**member("compression_exhausted", failed=True),
                         "session_id": outcome.session_id}
    if outcome.kind == "interrupted":
        return "error", member("interrupted", failed=False)
    return "error", member(error_code(outcome), failed=True,
                           partial=bool(result.get("partial", False)))


def message_text(outcome: Any) -> str:
    """What the user reads for this outcome (an interrupted turn has no text of its own; a failed
    one is an error, not an answer: it travels as one, ``failure_message``)."""
    if outcome.kind == "interrupted" and not outcome.text:
        return INTERRUPTED
    if outcome.kind == "failed":
        return ""
    return outcome.text or ""


def raise_for(outcome: Any, key: Optional[str]) -> None:
    """A non-streamed turn that produced no answer becomes an OpenAI error response."""
    if outcome.kind == "failed":
        status, headers = failure_status(outcome)
        raise APIError(status, failure_message(outcome, key), "server_error", error_code(outcome),
                       headers=headers or None)
    if outcome.kind == "exhausted" and key is None:
        raise APIError(400, outcome.text, code="context_length_exceeded", param="messages")
    if outcome.kind == "interrupted":
        raise APIError(503, INTERRUPTED, "server_error", "interrupted",
                       headers={"Retry-After": "5"})


def tool_progress(event: dict[str, Any]) -> dict[str, Any]:
    """A ``hermes.tool.progress`` SSE record from an agent tool event. ``choices: []`` makes the
    record look like a usage-only chunk to OpenAI SDKs that parse named events as chunks."""
    done = event.get("type") == "tool_end"
    data: dict[str, Any] = {"toolCallId": str(event.get("id") or ""),
                            "tool": str(event.get("name") or ""),
                            "status": "completed" if done else "running"}
    if done:
        data["ok"] = bool(event.get("ok", True))
    return {**data, "object": "hermes.tool.progress", "choices": []}
