"""The callbacks a surface hands an agent, as one typed object (``AgentHooks``).

Why one object: surfaces attach the same five callbacks (answer text, tool progress, status lines,
approval questions, reasoning) and a cached gateway agent gets new ones every turn. One value
passes through ``agent.factory.AgentSpec`` whole and is swapped in one assignment
(``agent.hooks = AgentHooks(...)``). ``AIAgent`` still takes Hermes' keyword callbacks
(``status_callback=`` ...) and builds this object from them.

Every callback is optional, called from the agent's thread, and must not raise: one that does is
logged and the turn goes on (a surface's display never costs the user their turn).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from enum import StrEnum
from typing import Callable, Optional

log = logging.getLogger("hermes.agent")

StreamCallback = Callable[[str], None]  # a delta of the final answer's text
ToolProgressCallback = Callable[[dict], None]  # tool_start / tool_end events (CONTRACTS.md)
StatusCallback = Callable[[str, str], None]  # (kind, message); kind is a StatusKind
ApprovalCallback = Callable[[str, str], str]  # (command, reason) -> "once" | "always" | "deny"
ReasoningCallback = Callable[[str], None]  # the provider's reasoning_content of a reply


class StatusKind(StrEnum):
    """What a status line is about. A ``str``: callbacks written for Hermes compare it to
    ``"warning"`` and friends, and it serialises as that string."""

    WARNING = "warning"  # the user should know: a failed summary, a cooldown, a store failure
    COMPRESSION = "compression"  # a compaction happened
    RETRY = "retry"  # the provider failed and the request is retried
    INFO = "info"  # progress worth a line in the log (learned window, repaired history)


@dataclass
class AgentHooks:
    """The surface's callbacks; ``None`` means nobody listens (status lines then go to the log)."""

    stream: Optional[StreamCallback] = None  # when run_conversation gets no stream_callback
    tool_progress: Optional[ToolProgressCallback] = None
    status: Optional[StatusCallback] = None
    approval: Optional[ApprovalCallback] = None  # None: questions are denied (fail closed)
    reasoning: Optional[ReasoningCallback] = None

    def send_status(self, kind: StatusKind, message: str) -> bool:
        """Give the line to the surface; False when nobody listens or the callback failed."""
        if self.status is None:
            return False
        try:
            self.status(kind, message)
            return True
        except Exception:
            log.exception("status callback failed")
            return False

    def send_reasoning(self, text: str) -> None:
        if not text or self.reasoning is None:
            return
        try:
            self.reasoning(text)
        except Exception:  # a surface's display must never break the turn
            log.exception("reasoning callback failed")
