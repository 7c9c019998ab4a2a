"""The ``memory`` tool (SPEC §8): durable notes about the environment (MEMORY.md) and the user
(USER.md), edited under a file lock with all-or-nothing batches. The format and the edits live in
``agent.memory_format``, the files in ``agent.memory_store``; this module is the tool's surface:
arguments, the per-turn failure cap, and what the model reads back.
"""
from __future__ import annotations

import json
from typing import Any

from tools.memory import format as fmt
from tools.memory import store as store
from hermes_core.config import hermes_home
from tools.registry import ToolContext, ToolError, ToolSpec

MAX_FAILURES_PER_TURN = 3
ACTIONS = ("add", "replace", "remove", "read")
STOP = ("Stop calling memory for this turn: answer the user now (say what could not be saved, "
        "if it matters).")


def _edits(args: dict, targets: tuple[str, ...]) -> list[fmt.Edit]:
    raw = args.get("operations")
    if raw is None:
        raw = [{k: args.get(k) for k in ("target", "action", "content", "old_text")}]
    elif not raw:
        raise ToolError("memory: operations is empty; give at least one {target, action, ...}")
    edits = []
    for n, op in enumerate(raw):
        where = f"operations[{n}]" if args.get("operations") is not None else "memory"
        if not isinstance(op, dict):
            raise ToolError(f"{where} must be an object with target and action")
        target = op.get("target") or args.get("target")
        single = args.get("action") if args.get("operations") is None else None
        action = op.get("action") or single
        if target not in targets:
            on = " or ".join(targets) or "nothing (memory is off in config)"
            raise ToolError(f"{where}: target must be {on}, got {target!r}")
        if action not in ACTIONS:
            raise ToolError(f"{where}: action must be one of {', '.join(ACTIONS)}, got {action!r}")
        edits.append(fmt.Edit(target, action, str(op.get("content") or ""),
                              str(op.get("old_text") or "")))
    return edits


def _read(home, targets: list[str], budgets: dict[str, int]) -> str:
    out = {}
    for t in targets:
        entries = store.load(home, t)
        out[t] = {"usage": f"{fmt.usage(entries):,}/{budgets[t]:,} chars",
                  "entries": [{"id": fmt.entry_id(e), "text": e} for e in entries]}
    return json.dumps(out, ensure_ascii=False)


def _run(args: dict, ctx: ToolContext) -> str:
    if ctx.platform in ("cron", "subagent"):
        raise ToolError("memory is not available here (cron and subagent runs do not keep memory)")
    home = store.owner_home(hermes_home(), ctx.owner, ctx.config)  # a chat user's own files
    targets = store.enabled_targets(ctx.config)
    budgets = store.limits(ctx.config)
    edits = _edits(args, targets)
    reads = [e.target for e in edits if e.action == "read"]
    if reads and len(reads) == len(edits):
        return _read(home, list(dict.fromkeys(reads)), budgets)
    if reads:
        raise ToolError("memory: read cannot be mixed with changes in one call")
    try:
        notes = store.apply_edits(home, edits, budgets)
    except fmt.MemoryEditError as exc:
        n = len(edits)
        prefix = f"memory: nothing was saved (batch of {n}): " if n > 1 else "memory: "
        raise ToolError(prefix + str(exc)) from None
    except store.MemoryStoreError as exc:
        raise ToolError(f"memory: {exc}") from None
    return ("; ".join(notes)
            + ". (The prompt keeps the session-start snapshot; this change is saved.)")


def memory(args: dict, ctx: ToolContext) -> str:
    """Run the call; after MAX_FAILURES_PER_TURN failures in one turn, tell the model to stop."""
    failures = ctx.turn.get("memory_failures", 0)
    if failures >= MAX_FAILURES_PER_TURN:
        raise ToolError(f"memory: {failures} failed calls this turn. {STOP}")
    try:
        return _run(args, ctx)
    except ToolError as exc:
        ctx.turn["memory_failures"] = failures + 1
        if failures + 1 >= MAX_FAILURES_PER_TURN:
            raise ToolError(f"{exc} {STOP}") from None
        raise


def changes_memory(args: dict) -> bool:
    """Any action but ``read`` (alone or in ``operations``) changes the files: consent applies."""
    ops = args.get("operations")
    actions = [op.get("action") if isinstance(op, dict) else None for op in ops] \
        if isinstance(ops, list) and ops else [args.get("action")]
    return any(a != "read" for a in actions)


def register(ctx: Any) -> None:
    """The plugin entry point (pyproject.toml, group hermes_agent.plugins)."""
    ctx.register_tool(ToolSpec(
        "memory",
        "Durable notes kept across sessions. target memory: your notes (environment, conventions, "
        "lessons); target user: who the user is (name, preferences, habits). "
        "Entries are short facts shown in the prompt at session start.",
        {"type": "object", "properties": {
            "target": {"type": "string", "enum": ["memory", "user"]},
            "action": {"type": "string", "enum": list(ACTIONS)},
            "content": {"type": "string",
                        "description": "Entry text for add, new text for replace."},
            "old_text": {"type": "string",
                         "description": "replace/remove: the entry's id "
                                        "or a substring unique to it."},
            "operations": {"type": "array", "items": {"type": "object"},
                           "description": "Several {target, action, content, old_text} "
                                          "applied all or none; "
                                          "replaces the single-action fields."},
        }},
        memory, "memory", mutating=changes_memory,
    ))
