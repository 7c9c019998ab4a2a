"""What a turn's outcome looks like on the wire (pure): HTTP errors, SSE endings, the ``hermes`` member."""
from __future__ import annotations

from typing import Any, Optional

from gateway.platforms.api_server.wire import APIError

INTERRUPTED = "The turn was interrupted before it finished; retry shortly."


def raise_for(outcome: Any, key: Optional[str]) -> None:
    """A non-streamed turn that produced no answer becomes an OpenAI error response."""
    if outcome.kind == "failed":
        raise APIError(500, outcome.text, "server_error", "agent_error")
    if outcome.kind == "exhausted" and key is None:
        raise APIError(400, outcome.text, code="context_length_exceeded", param="messages")
    if outcome.kind == "interrupted":
        raise APIError(503, INTERRUPTED, "server_error", "interrupted", headers={"Retry-After": "5"})


def stream_error(outcome: Any, key: Optional[str]) -> Optional[dict[str, Any]]:
    """The SSE error event for an outcome that is not an answer (the stream already said 200)."""
    if outcome.kind == "failed" or (outcome.kind == "exhausted" and key is None):
        return {"message": outcome.text, "type": "server_error", "code": "agent_error"}
    if outcome.kind == "interrupted":
        return {"message": INTERRUPTED, "type": "server_error", "code": "interrupted"}
    return None
