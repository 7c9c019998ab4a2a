"""What every tool handler is handed (``ToolContext``) and how it fails (``ToolError``).

A leaf: the registry, approvals and every tool import it, and it imports nothing of theirs.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable


class ToolError(Exception):
    """A tool-level failure; the loop hands the message back to the model so it can adapt."""


@dataclass
class ToolContext:
    """Per-call environment handed to every tool handler."""

    cwd: Path
    task_id: str | None = None
    session_id: str | None = None
    approval_callback: Callable[[str, str], str] | None = None
    yolo: bool = False
    always_allowed: set[tuple[str | None, str]] = field(default_factory=set)  # (session, command)
    interrupt_event: threading.Event | None = None
    max_output_chars: int = 50_000
    timeout: int = 180
    approval_lock: threading.Lock = field(default_factory=threading.Lock)  # one question at a time
    # What tools beyond shell and files need (memory, search, skills, cron, delegation):
    session_db: Any = None  # the agent's SessionDB (None when the store is unavailable)
    config: Any = None  # the agent's HermesConfig
    platform: str = "cli"  # cli, telegram, api_server, cron, subagent, ...
    agent: Any = None  # the owning AIAgent, opaque to tools except delegation
    origin: dict | None = None  # the chat a gateway turn came from: {platform, chat_id, thread_id}
    turn: dict = field(default_factory=dict)  # per-turn scratch (failure caps); reset every turn
    # Least privilege, decided where the agent is built (gateway, one-shot, embedded model):
    confine_to: Path | None = None  # file tools refuse paths outside this directory
    mutations: str = "allow"  # mutating tools: "allow", "ask" (approval each call) or "deny"
    owner: str | None = None  # whose data: None the local owner (all), else "<platform>:<user id>"
    toolsets: list[str] | None = None  # the toolsets the agent was granted (None: every one)

    def __post_init__(self) -> None:
        self.cwd = Path(self.cwd).expanduser()
