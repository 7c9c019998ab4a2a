"""AIAgent's tools room: which tools a session offers, the ``ToolContext``, one batch of calls.

Loading the registry's tools (``AIAgent._load_tools``) stays in ``run_agent``: it calls
``get_tool_definitions`` and ``check_toolset_requirements`` there, where tests patch them.
"""
from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from agent import plugin_hooks
from agent.callbacks import AgentHooks, StatusKind
from tools.registry import generation as tools_generation
from tools.registry import settle as settle_tools

if TYPE_CHECKING:  # pragma: no cover
    from agent.turn_context import TurnState
    from hermes_core.config import HermesConfig


class ToolsMixin:
    config: HermesConfig
    hooks: AgentHooks
    cwd: Path
    platform: str
    yolo: bool
    origin: Optional[dict]
    owner: Optional[str]
    file_io: Any
    confine_to: Optional[Path]
    mutating_tools: str
    tool_delay: float
    enabled_toolsets: Optional[list[str]]
    context_compressor: Any
    tools: list[dict]
    _all_tools: list[dict]
    _tool_names: set[str]
    _tools_frozen: bool
    _tools_generation: int
    _tool_ctx: Any
    _cached_system_prompt: Optional[str]
    _interrupt_event: threading.Event

    if TYPE_CHECKING:  # pragma: no cover - provided by AIAgent and the other rooms
        def _load_tools(self) -> None: ...
        def emit_status(self, kind: StatusKind, message: str) -> None: ...
        def redact(self, text: str) -> str: ...
        @property
        def session_id(self) -> str: ...
        @property
        def session_db(self) -> Any: ...

    def _offer_tools(self, tools: list[dict]) -> None:
        self.tools = tools
        self._tool_names = {t["function"]["name"] for t in tools
                            if isinstance(t, dict) and "function" in t}

    def _fit_tools_to(self, system_prompt: str) -> None:
        """A stored prompt (resumed session): offer the tools that fit beside it, as when it was
        built."""
        from agent.tool_selection import fit_tools
        from hermes_core.tokens import estimate_text_tokens
        from tools.registry import get_toolset

        window = getattr(self.context_compressor, "context_length", None)
        tools, _ = fit_tools(self._all_tools, estimate_text_tokens(system_prompt), window,
                             toolset_of=get_toolset, explicit=self.enabled_toolsets is not None)
        self._offer_tools(tools)

    def _freeze_tools(self) -> None:
        """A session's tool list is fixed at its first turn (provider prompt caches key on it).
        Tool sources that register late (MCP servers still connecting) get until then, each
        bounded by its own timeout; whatever registered since construction is picked up."""
        if self._tools_frozen:
            return
        settle_tools(lambda line: self.emit_status(StatusKind.INFO, line), self._interrupt_event)
        if tools_generation() != self._tools_generation:
            self._load_tools()
            if self._cached_system_prompt is not None:
                self._fit_tools_to(self._cached_system_prompt)
        self._tools_frozen = True

    def _tool_context(self) -> Any:
        from tools.registry import ToolContext

        if self._tool_ctx is None:
            terminal = self.config.terminal
            self._tool_ctx = ToolContext(
                cwd=self.cwd, session_id=self.session_id, approval_callback=self.hooks.approval,
                yolo=self.yolo, interrupt_event=self._interrupt_event, timeout=terminal.timeout,
                max_output_chars=terminal.max_output_chars, config=self.config,
                platform=self.platform, agent=self, confine_to=self.confine_to,
                mutations=self.mutating_tools)
        ctx = self._tool_ctx
        ctx.session_db, ctx.origin, ctx.owner = self.session_db, self.origin, self.owner
        ctx.toolsets, ctx.file_io = self.enabled_toolsets, self.file_io
        ctx.yolo, ctx.approval_callback = self.yolo, self.hooks.approval
        ctx.session_id = self.session_id
        return ctx

    def run_tools(self, tool_calls: list[dict], state: TurnState) -> list[dict]:
        from agent.tool_runner import run_tool_calls
        from tools.registry import dispatch

        ctx = self._tool_context()
        ctx.task_id = state.task_id or self.session_id
        state.extras["tool_rounds"] = state.extras.get("tool_rounds", 0) + 1
        if self.tool_delay:
            time.sleep(self.tool_delay)
        call = plugin_hooks.around_tools(lambda name, args: dispatch(name, args, ctx),
                                         self.session_id, ctx.task_id)
        return run_tool_calls(tool_calls, self._tool_names, call, self.hooks.tool_progress,
                              redact=self.redact)

    def _cleanup_task_resources(self, task_id: Optional[str]) -> None:
        """Per-task resources (none held beyond a turn today); a hook surfaces and tests can rely
        on."""
