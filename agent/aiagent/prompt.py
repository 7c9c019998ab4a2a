"""AIAgent's prompt room: the session's fixed system prompt, built once and stored with it."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from agent.callbacks import StatusKind
from hermes_core.config import hermes_home

if TYPE_CHECKING:  # pragma: no cover
    from agent.persistence import SessionRecorder
    from agent.prompt_builder import BuiltPrompt
    from hermes_core.config import HermesConfig


class PromptMixin:
    config: HermesConfig
    cwd: Path
    platform: str
    owner: Optional[str]
    skip_context_files: bool
    skip_memory: bool
    enabled_toolsets: Optional[list[str]]
    context_compressor: Any
    tools: list[dict]
    _all_tools: list[dict]
    _prompt: Optional[BuiltPrompt]
    _cached_system_prompt: Optional[str]
    _history_loaded: bool
    _recorder: SessionRecorder

    if TYPE_CHECKING:  # pragma: no cover - provided by the other rooms
        def _offer_tools(self, tools: list[dict]) -> None: ...
        def emit_status(self, kind: StatusKind, message: str) -> None: ...
        def history(self) -> list[dict]: ...

    def _memory_home(self) -> Path:
        from tools.memory.store import owner_home

        return owner_home(hermes_home(), self.owner, self.config)

    def _build_prompt(self) -> BuiltPrompt:
        from agent.prompt_builder import build_prompt
        from tools.registry import get_toolset

        return build_prompt(hermes_home(), self.cwd, tools=self._all_tools, toolset_of=get_toolset,
                            window=getattr(self.context_compressor, "context_length", None),
                            config=self.config, platform=self.platform,
                            skip_context_files=self.skip_context_files,
                            skip_memory=self.skip_memory,
                            explicit_toolsets=self.enabled_toolsets is not None,
                            memory_home=self._memory_home())

    def system_prompt(self) -> str:
        """The session's fixed system prompt: built (warnings shown, tools fitted beside it) and
        stored on first use, then byte-identical for the session (provider prompt caches)."""
        if self._cached_system_prompt is None:
            from agent.context_files import held_back_notices

            built = self._prompt = self._build_prompt()
            self._offer_tools(built.tools)
            for warning in built.warnings + held_back_notices(built.sources):
                self.emit_status(StatusKind.WARNING, warning)
            self._cached_system_prompt = built.text
            self._recorder.store_system_prompt(self._cached_system_prompt)
        return self._cached_system_prompt

    def fixed_prompt(self) -> BuiltPrompt:
        """This session's ``BuiltPrompt`` (parts and offered tools); before the first turn a
        preview, built without storing anything or warning anyone. A resumed session's stored
        prompt is one part."""
        from agent.prompt_builder import BuiltPrompt, PromptPart

        if not self._history_loaded:
            self.history()
        text = self._cached_system_prompt
        if text is None:
            return self._build_prompt()
        if self._prompt is not None and self._prompt.text == text:
            return self._prompt
        return BuiltPrompt([PromptPart("system prompt (stored)", text)], self.tools)

    def refresh_memory_snapshot(self, system_prompt: str) -> str:
        """After a compaction the prompt cache is cold anyway: pick up memory written since
        (SPEC §8)."""
        built, old = self._prompt, self._cached_system_prompt
        if built is None or self.skip_memory or not old or not system_prompt.startswith(old):
            return system_prompt
        from tools.memory.store import snapshot

        fresh = built.replace("memory", snapshot(self._memory_home(), self.config)[0])
        if fresh.text == old:
            return system_prompt
        self._prompt, self._cached_system_prompt = fresh, fresh.text
        self._recorder.store_system_prompt(fresh.text)
        return fresh.text + system_prompt[len(old):]

    def prompt_breakdown(self) -> list[tuple[str, int]]:
        """(part, tokens) of the fixed prompt: its named parts, then each toolset's schemas."""
        from agent.prompt_builder import breakdown
        from tools.registry import get_toolset

        built = self.fixed_prompt()
        return breakdown(built.parts, built.tools, get_toolset)
