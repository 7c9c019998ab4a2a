"""Scripting the loopback provider for a parent agent and its subagents.

The provider tells parent and children apart by the system prompt (a child's starts with the
subagent identity) and each child by its goal (its user message), so a script does not depend on
which thread gets there first.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Union

from agent.delegation import CHILD_IDENTITY
from tests.fake_provider import Reply, text, tool_calls

Script = Union[Reply, Callable[[dict], Reply]]


def is_child(body: dict) -> bool:
    msgs = body.get("messages") or []
    return bool(msgs) and msgs[0]["role"] == "system" and msgs[0]["content"].startswith(CHILD_IDENTITY[:40])


def goal_of(body: dict) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def calls_of(body: dict) -> int:
    """How many replies this asker had already received (its assistant messages so far)."""
    return sum(1 for m in body["messages"] if m["role"] == "assistant")


class Router:
    """fp.handler: the parent's replies in order, each child's by its goal; the last reply repeats."""

    def __init__(self, parent: list[Script], children: dict[str, list[Script]]) -> None:
        self.parent = list(parent)
        self.children = {goal: list(script) for goal, script in children.items()}
        self.lock = threading.Lock()

    def __call__(self, body: dict) -> Reply:
        with self.lock:
            if is_child(body):
                script = self.children[goal_of(body)]
                reply = script[min(calls_of(body), len(script) - 1)]
            else:
                reply = self.parent.pop(0) if self.parent else text("(the parent script ran out)")
        return reply(body) if callable(reply) else reply


def delegate(*goals: str, **extra: Any) -> Reply:
    return tool_calls([("delegate_task", {"tasks": [{"goal": g} for g in goals], **extra})])
