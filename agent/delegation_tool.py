"""The ``delegate_task`` tool (SPEC §13): parse the call, run the children, report in task order.

The children themselves are built and run by ``agent.delegation``; this module owns what the model
sees: the schema (kept under 300 tokens, SPEC §9), the argument checks with errors it can act on,
and the bounded result.
"""
from __future__ import annotations

import json
from collections import Counter
from typing import Any, Optional

from tools.registry import ToolContext, ToolError, ToolSpec

MAX_GOAL_CHARS = 20_000
MAX_CONTEXT_CHARS = 100_000

DESCRIPTION = (
    "Hand independent tasks to subagents that run in parallel, each with a fresh context, and get "
    "their answers. A subagent knows only its goal and context: include every fact, path and "
    "constraint it needs. One task: goal+context. Several: tasks."
)

_TOOLSETS = {"type": "array", "items": {"type": "string"},
             "description": "Only these of your toolsets (default: all a subagent may use)."}
SCHEMA = {
    "type": "object",
    "properties": {
        "goal": {"type": "string", "description": "What the subagent must achieve."},
        "context": {"type": "string",
                    "description": "What it needs to know (files, findings, constraints); with "
                                   "tasks, shared by all."},
        "toolsets": _TOOLSETS,
        "tasks": {"type": "array", "description": "Tasks run in parallel (default limit 3).",
                  "items": {"type": "object", "required": ["goal"], "properties": {
                      "goal": {"type": "string"}, "context": {"type": "string"},
                      "toolsets": {"type": "array", "items": {"type": "string"}}}}},
    },
}


def _text(value: Any, what: str, limit: int) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ToolError(f"delegate_task: {what} must be a string, got {type(value).__name__}")
    if len(value) > limit:
        raise ToolError(f"delegate_task: {what} is {len(value):,} characters, at most {limit:,}; "
                        "name the files to read instead of pasting them")
    return value


def _toolsets(value: Any, where: str) -> Optional[tuple[str, ...]]:
    if value is None:
        return None
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ToolError(f"delegate_task: {where}toolsets must be a list of toolset names")
    return tuple(value)


def _task_list(tasks: Any) -> list:
    if isinstance(tasks, str):  # some models send the array as JSON text
        try:
            tasks = json.loads(tasks)
        except ValueError:
            raise ToolError("delegate_task: tasks must be a list of {goal, context, toolsets} "
                            "objects; got a string that is not JSON") from None
    if isinstance(tasks, dict):
        tasks = [tasks]
    if not isinstance(tasks, list):
        raise ToolError("delegate_task: tasks must be a list of {goal, context, toolsets} "
                        f"objects, got {type(tasks).__name__}")
    return tasks


def parse_tasks(args: dict, limit: int) -> list:
    """The tasks of one call, all checked before anything runs; ToolError says what to fix."""
    from agent.delegation import Task

    goal, tasks = args.get("goal"), args.get("tasks")
    shared = _text(args.get("context"), "context", MAX_CONTEXT_CHARS)
    if tasks is not None:
        if goal:
            raise ToolError("delegate_task: give goal (one task) or tasks (several), not both")
        raw = _task_list(tasks)
    elif goal is None or (isinstance(goal, str) and not goal.strip()):
        raise ToolError("delegate_task: nothing to delegate; give goal (+ context) for one task or "
                        "tasks: [{goal, context}] for several")
    else:
        raw = [{"goal": goal, "toolsets": args.get("toolsets")}]
    if not raw:
        raise ToolError(f"delegate_task: tasks is empty; give 1 to {limit} tasks")
    if len(raw) > limit:
        raise ToolError(f"delegate_task: {len(raw)} tasks, but at most {limit} run at once "
                        "(delegation.max_concurrent_children); send the rest in another call")
    out = []
    for i, item in enumerate(raw, 1):
        where = f"task {i}: " if tasks is not None else ""
        if not isinstance(item, dict):
            raise ToolError(f"delegate_task: {where}must be an object {{goal, context, toolsets}}, "
                            f"got {type(item).__name__}")
        g = _text(item.get("goal"), f"{where}goal", MAX_GOAL_CHARS)
        if not g.strip():
            raise ToolError(f"delegate_task: {where}has no goal; every task needs one")
        own = _text(item.get("context"), f"{where}context", MAX_CONTEXT_CHARS)
        context = "\n\n".join(c for c in (shared.strip(), own.strip()) if c)
        out.append(Task(goal=g, context=context, toolsets=_toolsets(item.get("toolsets"), where)))
    return out


def cut_answer(text: str, limit: int) -> tuple[str, bool]:
    """(text, was_cut): head and tail kept within ``limit`` characters."""
    from tools.shell import cap_output

    return (text, False) if len(text) <= limit else (cap_output(text, limit), True)


def format_results(results: list, max_answer_chars: int) -> str:
    """The tool result: one entry per child in task order, and a one-line summary."""
    entries = []
    for r in results:
        answer, cut = cut_answer(r.answer, max_answer_chars)
        entry: dict[str, Any] = {"task": r.index, "status": r.status, "answer": answer}
        if cut:
            entry["full_answer"] = (f"{len(r.answer):,} characters: the last message of session "
                                    f"{r.session_id} (`hermes sessions show {r.session_id}`)")
        if r.error:
            entry["error"] = r.error
        entry.update(session_id=r.session_id, api_calls=r.api_calls,
                     duration_s=round(r.duration, 2),
                     tokens={"prompt": r.prompt_tokens, "completion": r.completion_tokens})
        entries.append(entry)
    counts = Counter(r.status for r in results)
    summary = ", ".join(f"{n} {status}" for status, n in counts.items())
    return json.dumps({"summary": summary, "results": entries}, ensure_ascii=False)


def delegate_task(args: dict, ctx: ToolContext) -> str:
    from agent.delegation import DelegationError, run_children

    agent = ctx.agent
    if agent is None:
        raise ToolError("delegate_task: no agent to delegate from (this tool runs inside an agent)")
    cfg = agent.config.delegation
    tasks = parse_tasks(args, cfg.max_concurrent_children)
    try:
        results = run_children(agent, tasks, ctx)
    except DelegationError as exc:
        raise ToolError(f"delegate_task: {exc}") from None
    return format_results(results, cfg.max_answer_chars)


def register(ctx: Any) -> None:
    """The plugin entry point (pyproject.toml, group hermes_agent.plugins)."""
    ctx.register_tool(ToolSpec("delegate_task", DESCRIPTION, SCHEMA, delegate_task, "delegation",
                                mutating=True))  # children act with the parent's tools
