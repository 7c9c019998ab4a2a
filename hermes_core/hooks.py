"""Lifecycle hooks: named events that plugins observe (and a few may answer).

Hermes-compatible names and keyword arguments, so a plugin written for Hermes Agent runs here:

    pre_tool_call(tool_name, args, task_id, session_id)          before a tool runs
    post_tool_call(tool_name, args, result, task_id, session_id)  after it returned
    pre_llm_call(messages, model, session_id, user_message)       once per turn, before the loop;
                                                                  may return {"context": "..."}
    post_llm_call(user_message, assistant_response, model, session_id)   once per turn, after
    pre_api_request(messages, model, session_id)                  before each model request
    post_api_request(response, model, session_id)                 after each model request
    on_session_start(session_id, platform)                        a session's first turn
    on_session_end(session_id, platform)                          the end of each turn

A callback takes keyword arguments (and should accept ``**kwargs``: new fields are added over
time). A callback that raises is logged and skipped: a plugin can never break a turn.
"""
from __future__ import annotations

import logging
import threading
from typing import Any, Callable

log = logging.getLogger("hermes.hooks")

VALID_HOOKS = frozenset({
    "pre_tool_call", "post_tool_call", "pre_llm_call", "post_llm_call", "pre_api_request",
    "post_api_request", "on_session_start", "on_session_end",
})

Callback = Callable[..., Any]


class UnknownHook(ValueError):
    """A hook name nobody fires; the message lists the valid ones."""


class HookBus:
    """Callbacks by hook name; ``fire`` calls them in registration order."""

    def __init__(self) -> None:
        self._callbacks: dict[str, list[tuple[str, Callback]]] = {}
        self._lock = threading.Lock()

    def add(self, name: str, callback: Callback, owner: str = "") -> None:
        if name not in VALID_HOOKS:
            valid = ", ".join(sorted(VALID_HOOKS))
            raise UnknownHook(f"unknown hook {name!r}; valid hooks: {valid}")
        if not callable(callback):
            raise TypeError(f"the callback for hook {name!r} is not callable")
        with self._lock:
            self._callbacks.setdefault(name, []).append((owner, callback))

    def remove_owner(self, owner: str) -> None:
        """Forget every callback a plugin registered (it was disabled or failed to load)."""
        with self._lock:
            for name, entries in self._callbacks.items():
                self._callbacks[name] = [e for e in entries if e[0] != owner]

    def has(self, name: str) -> bool:
        return bool(self._callbacks.get(name))

    def fire(self, name: str, **kwargs: Any) -> list[Any]:
        """Call every callback of ``name``; the non-None answers, in order."""
        entries = self._callbacks.get(name)
        if not entries:
            return []
        answers = []
        for owner, callback in list(entries):
            try:
                out = callback(**kwargs)
            except Exception as exc:
                log.warning("hook %s of plugin %s failed: %s: %s", name, owner or "?",
                            type(exc).__name__, exc)
                continue
            if out is not None:
                answers.append(out)
        return answers


HOOKS = HookBus()  # the process's hooks: plugins add to it, the agent fires it
