"""todo tool: per-task in-memory list."""

from __future__ import annotations

import json

import pytest

from tools.registry import ToolContext, ToolError, dispatch
from tools.todo import clear_todos, get_todos


@pytest.fixture
def ctx(tmp_path, request):
    key = f"task-{request.node.name}"
    yield ToolContext(cwd=tmp_path, task_id=key)
    clear_todos(key)


def todo(ctx, **args):
    return json.loads(dispatch("todo", args, ctx))


def test_empty_then_replace_then_read(ctx):
    assert todo(ctx) == {"todos": [], "summary": {"pending": 0, "in_progress": 0, "completed": 0, "cancelled": 0}}
    out = todo(ctx, todos=[{"id": "1", "content": "write code", "status": "in_progress"},
                           {"id": "2", "content": "test it"}])
    assert out["todos"] == [{"id": "1", "content": "write code", "status": "in_progress"},
                            {"id": "2", "content": "test it", "status": "pending"}]
    assert out["summary"]["in_progress"] == 1 and out["summary"]["pending"] == 1
    assert todo(ctx)["todos"] == out["todos"]
    assert todo(ctx, todos=[{"id": "9", "content": "other"}])["todos"] == [
        {"id": "9", "content": "other", "status": "pending"}]


def test_merge_updates_by_id_and_appends(ctx):
    todo(ctx, todos=[{"id": "a", "content": "one"}, {"id": "b", "content": "two"}])
    out = todo(ctx, merge=True, todos=[{"id": "a", "status": "completed"},
                                       {"id": "c", "content": "three", "status": "in_progress"}])
    assert out["todos"] == [
        {"id": "a", "content": "one", "status": "completed"},
        {"id": "b", "content": "two", "status": "pending"},
        {"id": "c", "content": "three", "status": "in_progress"},
    ]
    assert get_todos(ctx.task_id) == out["todos"]


def test_lists_are_per_task(tmp_path, ctx):
    todo(ctx, todos=[{"id": "1", "content": "mine"}])
    other = ToolContext(cwd=tmp_path, session_id="some-other-session")
    try:
        assert todo(other)["todos"] == []
    finally:
        clear_todos("some-other-session")
    assert len(todo(ctx)["todos"]) == 1


@pytest.mark.parametrize("todos, match", [
    ([{"id": "1", "content": "x", "status": "done"}], "status"),
    ([{"content": "x"}], "id"),
    ([{"id": "1"}], "content"),
    ([{"id": "1", "content": "x"}, {"id": "1", "content": "y"}], "unique"),
    (["just text"], "object"),
])
def test_invalid_items_are_rejected(ctx, todos, match):
    with pytest.raises(ToolError, match=match):
        todo(ctx, todos=todos)
    assert todo(ctx)["todos"] == []


def test_merge_new_item_needs_content(ctx):
    with pytest.raises(ToolError, match="content"):
        todo(ctx, merge=True, todos=[{"id": "new", "status": "pending"}])
