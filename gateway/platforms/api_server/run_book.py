"""API runs (``/v1/runs``): a turn started by one request and followed by others.

A ``Run`` records what its turn reports as numbered events (text deltas, tool progress, approval
questions, the end), so a client can poll ``GET /v1/runs/{id}``, stream the events (and come
back with ``Last-Event-ID`` to get only what it missed), answer an approval, or stop the run.
The agent's thread reports through thread-safe callbacks that hop onto the event loop; an
approval question parks the agent's thread until ``POST .../approval`` answers it, the run is
stopped, or the wait times out (then it is a deny, as everywhere else).

``RunBook`` keeps the runs of this process: finished ones for ``RUN_TTL`` seconds (at most
``MAX_FINISHED``), so a client that polls late still finds its answer.
"""
from __future__ import annotations

import asyncio
import os
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Optional

RUN_TTL = 3600.0
MAX_FINISHED = 500
DEFAULT_APPROVAL_TIMEOUT = 300.0
CHOICES = ("once", "always", "deny")
END_EVENTS = ("run.completed", "run.failed", "run.cancelled")


def approval_timeout() -> float:
    """Seconds a run waits for an approval answer: ``HERMES_APPROVAL_TIMEOUT`` (the CLI's
    setting too), else 300 (a person reading a page needs longer than one at a prompt)."""
    try:
        return max(0.1, float(os.environ.get("HERMES_APPROVAL_TIMEOUT", "")))
    except ValueError:
        return DEFAULT_APPROVAL_TIMEOUT


def parse_choice(body: dict[str, Any]) -> Optional[str]:
    """``{"choice": "once"|"always"|"deny"}`` or ``{"approved": bool}`` -> a choice (pure)."""
    choice = body.get("choice", body.get("decision"))
    if isinstance(choice, str) and choice.strip().lower() in CHOICES:
        return choice.strip().lower()
    if isinstance(body.get("approved"), bool):
        return "once" if body["approved"] else "deny"
    return None


@dataclass
class Approval:
    """One parked question of a run's agent."""
    id: str
    command: str
    reason: str
    asked_at: float
    answer: Optional[str] = None
    answered: threading.Event = field(default_factory=threading.Event)

    def view(self) -> dict[str, Any]:
        return {"approval_id": self.id, "command": self.command, "reason": self.reason,
                "asked_at": self.asked_at, "choices": list(CHOICES)}


class Run:
    """One run: its status, its events in order, and its pending approval."""

    def __init__(self, loop: asyncio.AbstractEventLoop, session_id: Optional[str]) -> None:
        self.id = "run_" + secrets.token_hex(12)
        self.loop = loop
        self.session_id = session_id
        self.status = "queued"
        self.created_at = time.time()
        self.finished_at: Optional[float] = None
        self.output: Optional[str] = None
        self.error: Optional[str] = None
        self.hermes: Optional[dict[str, Any]] = None
        self.usage: dict[str, int] = {}
        self.events: list[dict[str, Any]] = []
        self.pending: Optional[Approval] = None
        self.handle: Any = None  # the runner's TurnHandle
        self.changed = asyncio.Condition()
        self._stopped = threading.Event()

    @property
    def done(self) -> bool:
        return self.finished_at is not None

    def view(self) -> dict[str, Any]:
        return {"object": "hermes.run", "id": self.id, "run_id": self.id, "status": self.status,
                "session_id": self.session_id, "created_at": self.created_at,
                "finished_at": self.finished_at, "output": self.output, "error": self.error,
                "pending_approval": self.pending.view() if self.pending else None,
                "usage": self.usage or None, "hermes": self.hermes, "events": len(self.events)}

    # -- events (on the loop) ----------------------------------------------------------------
    def add(self, kind: str, data: dict[str, Any]) -> None:
        """Append an event and wake the streams; call on the loop."""
        self.events.append({"seq": len(self.events) + 1, "event": kind, "run_id": self.id,
                            "at": time.time(), **data})
        self.loop.create_task(self._notify())

    async def _notify(self) -> None:
        async with self.changed:
            self.changed.notify_all()

    def add_threadsafe(self, kind: str, data: dict[str, Any]) -> None:
        self.loop.call_soon_threadsafe(self.add, kind, data)

    def set_status(self, status: str) -> None:
        if not self.done:
            self.status = status

    # -- callbacks of the agent's thread ------------------------------------------------------
    def on_delta(self, text: str) -> None:
        if text:
            self.add_threadsafe("message.delta", {"delta": text})

    def on_tool(self, event: dict[str, Any]) -> None:
        if not isinstance(event, dict) or event.get("type") not in ("tool_start", "tool_end"):
            return
        data = {"tool_call_id": str(event.get("id") or ""), "tool": str(event.get("name") or "")}
        if event["type"] == "tool_start":
            self.add_threadsafe("tool.started", {**data, "args": event.get("args")})
        else:
            self.add_threadsafe("tool.completed", {**data, "ok": bool(event.get("ok", True)),
                                                   "summary": str(event.get("summary") or ""),
                                                   "duration": event.get("duration")})

    def ask(self, command: str, reason: str) -> str:
        """The agent's ``approval_callback``: park the question, wait for the answer."""
        if self._stopped.is_set():
            return "deny"
        approval = Approval("apr_" + secrets.token_hex(8), command, reason, time.time())
        self.loop.call_soon_threadsafe(self._park, approval)
        answered = approval.answered.wait(approval_timeout())
        choice = approval.answer if answered and approval.answer in CHOICES else "deny"
        self.loop.call_soon_threadsafe(self._unpark, approval, choice,
                                       "answered" if answered else "timed out")
        return choice

    def _park(self, approval: Approval) -> None:
        self.pending = approval
        self.set_status("waiting_for_approval")
        self.add("approval.requested", approval.view())

    def _unpark(self, approval: Approval, choice: str, how: str) -> None:
        if self.pending is approval:
            self.pending = None
        self.set_status("running")
        self.add("approval.resolved", {"approval_id": approval.id, "choice": choice, "how": how})

    # -- requests (on the loop) ---------------------------------------------------------------
    def answer(self, choice: str, approval_id: Optional[str] = None) -> Optional[Approval]:
        """Answer the pending question (the named one, when given); None when none matches."""
        approval = self.pending
        if approval is None or (approval_id and approval_id != approval.id):
            return None
        approval.answer = choice
        approval.answered.set()
        return approval

    def stop(self, message: str) -> bool:
        """Stop the run: the turn interrupted, then a parked question denied (in that order: a
        denial first would let the agent go on to its next model call before the interrupt)."""
        if self.done:
            return False
        self._stopped.set()
        self.set_status("stopping")
        if self.handle is not None:
            self.handle.stop(message)
        if self.pending is not None:
            self.answer("deny")
        return True

    def finish(self, status: str, output: Optional[str], error: Optional[str],
               hermes: Optional[dict[str, Any]], usage: dict[str, int]) -> None:
        self.status, self.output, self.error, self.hermes = status, output, error, hermes
        self.usage = usage
        kind = {"completed": "run.completed", "failed": "run.failed"}.get(status, "run.cancelled")
        self.add(kind, {"status": status, "output": output, "error": error, "hermes": hermes})
        self.finished_at = time.time()


class RunBook:
    """The runs of this API server, by id."""

    def __init__(self) -> None:
        self._runs: dict[str, Run] = {}

    def add(self, run: Run) -> Run:
        self._sweep()
        self._runs[run.id] = run
        return run

    def get(self, run_id: str) -> Optional[Run]:
        return self._runs.get(run_id)

    def active(self) -> list[Run]:
        return [r for r in self._runs.values() if not r.done]

    def _sweep(self) -> None:
        now = time.time()
        finished = sorted((r for r in self._runs.values() if r.done),
                          key=lambda r: r.finished_at or 0)
        extra = len(finished) - MAX_FINISHED
        for n, run in enumerate(finished):
            if n < extra or now - (run.finished_at or now) > RUN_TTL:
                self._runs.pop(run.id, None)
