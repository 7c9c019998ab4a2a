"""The system prompt, assembled from named parts (SPEC §8, §9).

Parts, in order: ``identity`` (SOUL.md, else a built-in line), ``guidance`` (a sentence per toolset
that needs one), ``memory`` (the snapshot at session start), ``context_files``, ``skills_index``,
``tools_note`` (the toolsets a small window left out) and ``environment``. Built once per session
and kept byte-identical across turns so provider prompt caches hit: nothing time-varying goes in.
The parts stay known so ``/usage`` and ``hermes config show --prompt`` can show the breakdown.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from agent import context_files
from tools.memory import store as memory_store
from hermes_core.tokens import estimate_text_tokens, schema_tokens
from agent.tool_selection import fit_tools, omitted_note, tool_name

DEFAULT_IDENTITY = (
    "You are Hermes, a capable personal AI agent. You can run tools: use them when they help, "
    "check their results, and answer plainly. When a task is done, say what you did."
)
# toolset -> the one place its usage guidance lives (the schema says what, this says when)
GUIDANCE = {
    "memory": (
        "Memory: save what will matter in later sessions with the memory tool: who the user is, "
        "their preferences and habits (target user); the environment, conventions and lessons "
        "learned (target memory). Not task progress or what is easy to look up again. Keep entries "
        "short; when a store is full, merge or remove entries."),
    "session_search": (
        "Past conversations: when the user refers to an earlier session, or a detail you need was "
        "dropped by a context summary, use session_search before saying you do not know."),
}
PART_ORDER = ("identity", "guidance", "memory", "context_files", "skills_index", "tools_note",
              "environment")
CONTEXT_SHARE = 16  # a context file takes at most 1/16 of a small window


@dataclass(frozen=True)
class PromptPart:
    name: str
    text: str


@dataclass
class BuiltPrompt:
    parts: list[PromptPart]
    tools: list[dict]
    omitted_toolsets: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # for the user (e.g. a memory file left out)
    # SOUL.md and the context files
    sources: list[context_files.ContextFile] = field(default_factory=list)

    @property
    def text(self) -> str:
        return join_parts(self.parts)

    def replace(self, name: str, text: str) -> "BuiltPrompt":
        """The same prompt with part ``name`` swapped (e.g. a fresh memory snapshot)."""
        parts = [PromptPart(p.name, text) if p.name == name else p for p in self.parts]
        if name not in {p.name for p in parts}:
            parts.append(PromptPart(name, text))
            parts.sort(key=lambda p: PART_ORDER.index(p.name) if p.name in PART_ORDER
                       else len(PART_ORDER))
        return BuiltPrompt(parts, self.tools, self.omitted_toolsets, [], self.sources)


def join_parts(parts: list[PromptPart]) -> str:
    return "\n\n".join(p.text for p in parts if p.text)


def skills_index(home: Path, config: Any = None) -> Optional[str]:
    """The skills part: names and one-line descriptions by category within
    ``skills.index_budget``."""
    from tools.skills.index import prompt_part

    return prompt_part(home, config) or None


def guidance(toolsets: set[str]) -> str:
    return "\n".join(text for ts, text in GUIDANCE.items() if ts in toolsets)


def context_cap(config: Any, window: Optional[int]) -> int:
    """Characters per context file: config ``context_files.max_chars``, less in a small window."""
    cap = int(getattr(getattr(config, "context_files", None), "max_chars", 20_000))
    if window:
        cap = min(cap, max(1000, window * 4 // CONTEXT_SHARE))
    return cap


def _context_part(files: list[context_files.ContextFile]) -> str:
    return "\n\n".join(f"## Instructions from {f.label}\n{f.text}" for f in files)


def build_prompt(home: Path, cwd: Path, *, tools: list[dict],
                 toolset_of: Callable[[str], Optional[str]], window: Optional[int] = None,
                 config: Any = None, platform: str = "cli",
                 skip_context_files: bool = False, skip_memory: bool = False,
                 explicit_toolsets: bool = False,
                 memory_home: Optional[Path] = None) -> BuiltPrompt:
    """The system prompt and the tools to offer with it (fitted to a quarter of ``window``).
    ``memory_home``: whose memory files the snapshot reads (``memory_store.owner_home``)."""
    cap = context_cap(config, window)
    warnings: list[str] = []
    soul = context_files.load_soul(home, cap)
    files = [] if skip_context_files else context_files.load_context_files(cwd, home, cap)
    memory = ""
    if not skip_memory:
        memory, notes = memory_store.snapshot(memory_home or home, config)
        warnings += notes
    parts = [PromptPart("identity", soul.text if soul else DEFAULT_IDENTITY),
             PromptPart("guidance", ""),
             PromptPart("memory", memory),
             PromptPart("context_files", _context_part(files)),
             PromptPart("skills_index", skills_index(home, config) or ""),
             PromptPart("tools_note", ""),
             PromptPart("environment", f"Working directory: {cwd}. Platform: {platform}.")]

    def with_guidance(offered: list[dict]) -> list[PromptPart]:
        sets = {toolset_of(tool_name(t)) or "" for t in offered}
        return [PromptPart("guidance", guidance(sets)) if p.name == "guidance"
                else PromptPart(p.name, "") if p.name == "skills_index" and "skills" not in sets
                else p for p in parts]

    parts = with_guidance(tools)
    offered, omitted = fit_tools(tools, estimate_text_tokens(join_parts(parts)), window,
                                 toolset_of=toolset_of, explicit=explicit_toolsets)
    if omitted and window:
        parts = with_guidance(offered)
        note = PromptPart("tools_note", omitted_note(omitted, window))
        parts = [note if p.name == "tools_note" else p for p in parts]
    return BuiltPrompt(parts, offered, omitted, warnings, ([soul] if soul else []) + files)


def breakdown(parts: list[PromptPart], tools: list[dict],
              toolset_of: Callable[[str], Optional[str]]) -> list[tuple[str, int]]:
    """(part, tokens) for every prompt part, then each toolset's schemas (``tools:<toolset>``)."""
    rows = [(p.name, estimate_text_tokens(p.text)) for p in parts]
    by_set: dict[str, list[dict]] = {}
    for t in tools:
        by_set.setdefault(toolset_of(tool_name(t)) or "other", []).append(t)
    rows += [(f"tools:{ts}", schema_tokens(defs)) for ts, defs in by_set.items()]
    return rows


def breakdown_lines(rows: list[tuple[str, int]], target: Optional[int] = None) -> list[str]:
    """Aligned text rows for a breakdown, with the total (and the target when given)."""
    total = sum(n for _, n in rows)
    width = max([len(name) for name, _ in rows] + [5])
    lines = [f"  {name.ljust(width)}  {n:>6,}" for name, n in rows]
    tail = f" (target {target:,})" if target else ""
    lines.append(f"  {'total'.ljust(width)}  {total:>6,} tokens{tail}")
    return lines
