"""AIAgent's room for the surface's callbacks (``agent.callbacks.AgentHooks``) and redaction.

The Hermes attribute names (``status_callback``, ``tool_progress_callback``,
``approval_callback``, ``reasoning_callback``) read and write the fields of ``hooks``, so code
written for Hermes that sets them on an agent keeps working.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Optional

from agent.callbacks import (AgentHooks, ApprovalCallback, ReasoningCallback, StatusCallback,
                             StatusKind, ToolProgressCallback)
from hermes_core.redact import config_secrets, redact, secret_values

if TYPE_CHECKING:  # pragma: no cover
    from agent.providers.openai_compat import ModelReply
    from hermes_core.config import HermesConfig

log = logging.getLogger("hermes.agent")


class StatusMixin:
    hooks: AgentHooks
    config: HermesConfig
    api_key: Optional[str]

    def emit_status(self, kind: StatusKind, message: str) -> None:
        """A status line for the surface (secrets masked); the log when nobody takes it."""
        message = self.redact(message)
        if not self.hooks.send_status(kind, message):
            (log.warning if kind == StatusKind.WARNING else log.info)("%s", message)

    def _emit_reasoning(self, reply: ModelReply) -> None:
        """The model's reasoning (``reasoning_content``) for surfaces that show it (ACP)."""
        if reply.reasoning:
            self.hooks.send_reasoning(reply.reasoning)

    def redact(self, text: str) -> str:
        """Mask the API keys and secret-looking environment values (tool output, errors,
        warnings)."""
        return redact(text, secret_values([self.api_key, *config_secrets(self.config)]))

    # ---- Hermes' names for the hooks ----------------------------------------------------------

    @property
    def status_callback(self) -> Optional[StatusCallback]:
        return self.hooks.status

    @status_callback.setter
    def status_callback(self, value: Optional[StatusCallback]) -> None:
        self.hooks.status = value

    @property
    def tool_progress_callback(self) -> Optional[ToolProgressCallback]:
        return self.hooks.tool_progress

    @tool_progress_callback.setter
    def tool_progress_callback(self, value: Optional[ToolProgressCallback]) -> None:
        self.hooks.tool_progress = value

    @property
    def approval_callback(self) -> Optional[ApprovalCallback]:
        return self.hooks.approval

    @approval_callback.setter
    def approval_callback(self, value: Optional[ApprovalCallback]) -> None:
        self.hooks.approval = value

    @property
    def reasoning_callback(self) -> Optional[ReasoningCallback]:
        return self.hooks.reasoning

    @reasoning_callback.setter
    def reasoning_callback(self, value: Optional[ReasoningCallback]) -> None:
        self.hooks.reasoning = value


def hooks_from(hooks: Optional[AgentHooks], **callbacks: Any) -> AgentHooks:
    """The agent's hooks from ``hooks=`` or Hermes' keyword callbacks (one way, not both: a
    callback in both places would leave one silently unused)."""
    given = {name: cb for name, cb in callbacks.items() if cb is not None}
    if hooks is None:
        return AgentHooks(**given)
    if given:
        names = ", ".join(f"{name}_callback" for name in sorted(given))
        raise TypeError(f"AIAgent() got hooks= and {names}: pass the callbacks in one of them")
    return hooks
