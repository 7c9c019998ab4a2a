"""The `todo` tool: a small per-task plan the model keeps for itself during long tasks.

In memory only (keyed by task id, else session id): it is working state for one run, not data
the user needs persisted.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from tools.registry import ToolContext, ToolError, ToolSpec

STATUSES = ("pending", "in_progress", "completed", "cancelled")

_lists: dict[str, list[dict]] = {}
_lock = threading.Lock()


def _key(ctx: ToolContext) -> str:
    return ctx.task_id or ctx.session_id or "default"


def get_todos(key: str) -> list[dict]:
    """A copy of a task/session key's list (for the agent, e.g. to re-inject after compaction)."""
    with _lock:
        return [dict(item) for item in _lists.get(key, [])]


def clear_todos(key: str) -> None:
    """Forget a task's list (e.g. when its session ends)."""
    with _lock:
        _lists.pop(key, None)


def _check_item(item: object, index: int, partial: bool) -> dict:
    if not isinstance(item, dict):
        raise ToolError(f"todo: todos[{index}] must be an object with id, content, status")
    item_id = item.get("id")
    if item_id is None or str(item_id).strip() == "":
        raise ToolError(f"todo: todos[{index}] is missing 'id'")
    out = {"id": str(item_id)}
    if "content" in item:
        if not isinstance(item["content"], str) or not item["content"].strip():
            raise ToolError(f"todo: todos[{index}].content must be a non-empty string")
        out["content"] = item["content"].strip()
    elif not partial:
        raise ToolError(f"todo: todos[{index}] is missing 'content'")
    if "status" in item:
        if item["status"] not in STATUSES:
            raise ToolError(f"todo: todos[{index}].status must be one of {', '.join(STATUSES)}")
        out["status"] = item["status"]
    elif not partial:
        out["status"] = "pending"
    return out


def _render(items: list[dict]) -> str:
    counts = {s: sum(1 for i in items if i["status"] == s) for s in STATUSES}
    return json.dumps({"todos": items, "summary": counts}, ensure_ascii=False)


def todo(args: dict, ctx: ToolContext) -> str:
    """Read (no args), replace (merge=false) or update by id (merge=true) the task's todo list."""
    todos = args.get("todos")
    merge = bool(args.get("merge", False))
    key = _key(ctx)
    with _lock:
        current = _lists.setdefault(key, [])
        if todos is not None:
            if merge:
                by_id = {i["id"]: i for i in current}
                for n, raw in enumerate(todos):
                    item = _check_item(raw, n, partial=True)
                    if item["id"] in by_id:
                        by_id[item["id"]].update(item)
                    elif "content" not in item:
                        raise ToolError(f"todo: todos[{n}] has new id {item['id']!r} "
                                        "but no 'content'")
                    else:
                        item.setdefault("status", "pending")
                        current.append(item)
                        by_id[item["id"]] = item
            else:
                new = [_check_item(raw, n, partial=False) for n, raw in enumerate(todos)]
                ids = [i["id"] for i in new]
                if len(set(ids)) != len(ids):
                    raise ToolError("todo: ids must be unique")
                current[:] = new
        return _render([dict(i) for i in current])


def register(ctx: Any) -> None:
    """The plugin entry point (pyproject.toml, group hermes_agent.plugins)."""
    ctx.register_tool(ToolSpec(
        "todo",
        "Keep a task list for multi-step work. Call with no arguments to read it; pass todos to "
        "replace it, or todos with merge=true to update items by id. Keep one item in_progress.",
        {"type": "object", "properties": {
            "todos": {
                "type": "array",
                "description": "Items {id, content, status}; "
                               "status is pending|in_progress|completed|cancelled.",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string"},
                        "content": {"type": "string"},
                        "status": {"type": "string", "enum": list(STATUSES)},
                    },
                    "required": ["id"],
                },
            },
            "merge": {"type": "boolean",
                      "description": "Update items by id instead of replacing the list."},
        }},
        todo, "todo",
    ))
