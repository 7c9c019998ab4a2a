"""Subagents for ``delegate_task`` (SPEC §13): one factory builds a child, one runner runs a batch.

Why this shape:
- A child is a plain ``AIAgent`` built through the facade (platform ``subagent``), so it has the
  loop, retries, compression and persistence of any agent. Isolation comes only from what it is
  given: a short system prompt of its own (its task and context), no memory, no context files, its
  own iteration budget, the parent's tools narrowed, and its own session whose
  ``parent_session_id`` is the parent's.
- The child's system prompt is written into its session row before the agent is built; the agent
  picks it up like the stored prompt of any resumed session. No persona, memory or context file
  reaches the child, and the facade needs no special case for it.
- Children run in daemon threads, all at once. The parent's tool call waits for them while watching
  the parent's interrupt flag and the children's deadline; a stop is repeated until the child has
  ended (``run_conversation`` clears the flag when it starts, so a single early stop could be lost).
  A child that has not stopped ``STOP_GRACE`` seconds after being told is reported and left behind.
- Approvals: a child has no one to ask. A dangerous command runs only if the user already allowed it
  for the parent's session (an "always" answer, or --yolo); otherwise it is denied and the child is
  told so, and its answer says what it could not do. Asking the user on behalf of several children
  at once, about commands they never saw being planned, would be a worse question than none.
"""
from __future__ import annotations

import dataclasses
import logging
import os
import queue
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional

from agent.delegation_notify import Notifier, short

log = logging.getLogger("hermes.delegation")

PLATFORM = "subagent"
# Never offered to a child: it cannot delegate (unless delegation.max_depth allows), write the
# user's memory, schedule jobs, or ask the user anything (``clarify``: Hermes Agent's interactive
# toolset; none is built in yet, the name is reserved here so a plugin cannot slip one in).
EXCLUDED_TOOLSETS = ("delegation", "memory", "cronjob", "clarify")
STOP_GRACE = 15.0  # seconds a child gets to stop after an interrupt or its timeout
POLL = 0.05  # how often the waiting parent looks at its interrupt flag and the deadline

COMPLETED, FAILED, INTERRUPTED, TIMEOUT = "completed", "failed", "interrupted", "timeout"

CHILD_IDENTITY = (
    "You are a subagent of Hermes, an AI agent. Another agent handed you the task below and "
    "waits for your answer; no one can answer questions, so decide for yourself. Use your tools "
    "to do the task and check the results, then reply with a concise final answer: what you did, "
    "what you found (exact paths, names, numbers) and anything left undone."
)


class DelegationError(ValueError):
    """A delegation that cannot run as asked; the message tells the model what to change."""


@dataclass(frozen=True)
class Task:
    goal: str
    context: str = ""
    toolsets: Optional[tuple[str, ...]] = None  # None: every toolset a child may have


@dataclass
class ChildResult:
    index: int  # 1-based place of the task in the call
    goal: str
    status: str  # completed | failed | interrupted | timeout
    answer: str = ""  # the final answer, or the last text the child produced
    error: Optional[str] = None
    session_id: Optional[str] = None
    api_calls: int = 0
    duration: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0


# ---- pure decisions ------------------------------------------------------------------------

_depths: "weakref.WeakKeyDictionary[Any, int]" = weakref.WeakKeyDictionary()


def depth_of(agent: Any) -> int:
    """0 for an agent a surface built, 1 for its children, and so on."""
    return _depths.get(agent, 0)


def toolsets_of(tool_definitions: Iterable[dict],
                toolset_of: Callable[[str], Optional[str]]) -> list[str]:
    """The toolsets of the tools an agent offers, in their order."""
    out: list[str] = []
    for d in tool_definitions:
        ts = toolset_of(str((d.get("function") or {}).get("name", "")))
        if ts and ts not in out:
            out.append(ts)
    return out


def child_toolsets(parent_toolsets: Iterable[str], requested: Optional[Iterable[str]], *,
                   can_delegate: bool) -> list[str]:
    """The parent's toolsets minus the excluded ones, narrowed to ``requested`` (never widened)."""
    excluded = set(EXCLUDED_TOOLSETS) - ({"delegation"} if can_delegate else set())
    allowed = [t for t in dict.fromkeys(parent_toolsets) if t not in excluded]
    if requested is None:
        return allowed
    wanted = list(dict.fromkeys(requested))
    extra = [t for t in wanted if t not in allowed]
    if extra:
        raise DelegationError(
            f"toolset{'s' if len(extra) > 1 else ''} {', '.join(map(repr, extra))} not available "
            f"to subagents; a task's toolsets can only narrow these: "
            f"{', '.join(allowed) or '(none)'}")
    return [t for t in allowed if t in wanted]


def child_system_prompt(task: Task, cwd: Any) -> str:
    parts = [CHILD_IDENTITY, f"## Task\n{task.goal.strip()}"]
    if task.context.strip():
        parts.append(f"## Context\n{task.context.strip()}")
    parts.append(f"Working directory: {cwd}.")
    return "\n\n".join(parts)


def child_provider(parent: Any, cfg: Any) -> dict[str, Any]:
    """Where a child's requests go: the parent's provider and model unless ``delegation.model``,
    ``base_url`` or ``api_key`` say otherwise. A base_url of its own never gets the parent's key
    (it may be someone else's server): it takes delegation.api_key or HERMES_DELEGATION_API_KEY."""
    key = cfg.api_key or os.environ.get("HERMES_DELEGATION_API_KEY") or None
    model = cfg.model or parent.model
    if cfg.base_url and cfg.base_url != parent.base_url:
        return {"provider": "custom", "base_url": cfg.base_url, "api_key": key, "model": model}
    return {"provider": parent.provider, "base_url": parent.base_url,
            "api_key": key or parent.api_key, "model": model}


def last_text(messages: Optional[list[dict]]) -> str:
    """The last thing an assistant said in ``messages`` (what a stopped child had produced)."""
    from hermes_core.messages import content_text

    for m in reversed(messages or []):
        if m.get("role") == "assistant":
            text = content_text(m.get("content")).strip()
            if text and not text.startswith("(no reply:"):
                return text
    return ""


def outcome(res: Optional[dict], stopped: Optional[str],
            error: Optional[BaseException]) -> tuple[str, str, Optional[str]]:
    """(status, answer, error) of a child from its result dict; ``stopped`` is why we stopped it."""
    res = res or {}
    if error is not None:
        return FAILED, "", f"{type(error).__name__}: {error}"
    if res.get("completed"):
        return COMPLETED, str(res.get("final_response") or ""), None
    partial = last_text(res.get("messages"))
    if stopped == TIMEOUT:
        return TIMEOUT, partial, "stopped: it ran past delegation.child_timeout"
    if stopped == INTERRUPTED or res.get("interrupted"):
        return INTERRUPTED, partial, "stopped: the parent was interrupted"
    if res.get("failed") or res.get("compression_deferred"):
        return FAILED, partial, str(res.get("error") or "it failed without saying why")
    return FAILED, partial, ("it used up its model calls (delegation.max_iterations) without a "
                             "final answer; give it a narrower goal")


# ---- the factory -----------------------------------------------------------------------------


def approval_from_parent(parent_ctx: Any) -> Callable[[str, str], str]:
    """A child's approval callback: "once" when the user allowed the command for the parent's
    session (or runs with --yolo), else "deny". Nobody is asked."""
    from tools.approval import request_approval

    view = dataclasses.replace(parent_ctx, approval_callback=None)  # shares the "always" answers

    def decide(command: str, reason: str) -> str:
        return "once" if request_approval(command, reason, view) else "deny"

    return decide


def build_child(parent: Any, task: Task, *, toolsets: list[str], ctx: Any,
                status_callback: Optional[Callable[[str, str], None]] = None) -> tuple[Any, str]:
    """A fresh AIAgent for ``task`` (and the user message to send it), its session stored with
    ``parent_session_id`` and the child's own system prompt."""
    from agent.callbacks import AgentHooks
    from agent.factory import AgentSpec, ProviderChoice, build_agent
    from hermes_state import new_session_id

    cfg = parent.config.delegation
    provider = child_provider(parent, cfg)
    sid = new_session_id()
    prompt = child_system_prompt(task, parent.cwd)
    message = task.goal.strip()
    db = parent.session_db
    try:
        if db is None:
            raise RuntimeError("no session store")
        db.create_session(sid, source=PLATFORM, model=provider["model"],
                          parent_session_id=parent.session_id, system_prompt=prompt,
                          owner=parent.owner)
    except Exception as exc:  # the child still runs; it gets its task in the message instead
        log.warning("could not store subagent session %s: %s", sid, exc)
        if task.context.strip():
            message = f"{message}\n\nContext:\n{task.context.strip()}"
    child = build_agent(AgentSpec(
        config=parent.config, platform=PLATFORM, provider=ProviderChoice(**provider),
        max_iterations=cfg.max_iterations, skip_context_files=True, skip_memory=True,
        session_db=db, session_id=sid, enabled_toolsets=toolsets, cwd=parent.cwd,
        yolo=bool(ctx.yolo),
        hooks=AgentHooks(approval=approval_from_parent(ctx), status=status_callback),
        # never more than the parent: its confinement, its policy for changes, and its owner
        # (a chat user's child reaches only their data too)
        confine_to=parent.confine_to, mutating_tools=parent.mutating_tools, owner=parent.owner))
    _depths[child] = depth_of(parent) + 1
    return child, message


# ---- the runner ------------------------------------------------------------------------------


@dataclass
class _Run:
    index: int
    task: Task
    agent: Any = None
    message: str = ""
    session_id: Optional[str] = None
    started: float = 0.0
    ended: Optional[float] = None
    stopped: Optional[str] = None  # INTERRUPTED or TIMEOUT once told to stop
    res: Optional[dict] = None
    error: Optional[BaseException] = None

    def go(self, done: "queue.Queue[int]") -> None:
        try:
            self.res = self.agent.run_conversation(self.message)
        except BaseException as exc:  # noqa: BLE001 - reported as this child's failure
            self.error = exc
        finally:
            self.ended = time.monotonic()
            done.put(self.index)


def run_children(parent: Any, tasks: list[Task], ctx: Any) -> list[ChildResult]:
    """Run ``tasks`` as parallel children of ``parent``; results in task order.

    Raises DelegationError (nothing started) when the parent may not delegate or a task asks for
    toolsets the parent cannot give. Every other problem is one child's ``failed`` result.
    """
    from tools.registry import get_toolset

    cfg = parent.config.delegation
    depth = depth_of(parent)
    if depth >= cfg.max_depth:
        raise DelegationError(
            "delegation is not available here: " + ("subagents cannot delegate further"
                                                    if depth else "delegation.max_depth is 0")
            + f" (delegation.max_depth={cfg.max_depth}); do the task yourself")
    base = toolsets_of(parent.tools, get_toolset)
    sets = [child_toolsets(base, t.toolsets, can_delegate=depth + 1 < cfg.max_depth) for t in tasks]
    if ctx.interrupt_event is not None and ctx.interrupt_event.is_set():
        return [ChildResult(i, t.goal, INTERRUPTED, error="not started: the parent was interrupted")
                for i, t in enumerate(tasks, 1)]
    notify = Notifier(parent)
    n = len(tasks)
    done: "queue.Queue[int]" = queue.Queue()
    runs = [_Run(i, t) for i, t in enumerate(tasks, 1)]
    started = time.monotonic()
    wall_started = time.time()
    for run, toolsets in zip(runs, sets):
        label = f"subagent {run.index}/{n}"
        run.started = time.monotonic()
        try:
            run.agent, run.message = build_child(parent, run.task, toolsets=toolsets, ctx=ctx,
                                                 status_callback=notify.child(label))
            run.session_id = run.agent.session_id
        except Exception as exc:  # noqa: BLE001 - e.g. an unusable delegation.base_url
            run.error, run.ended = exc, time.monotonic()
            done.put(run.index)
            continue
        notify("info", f"{label} started: {short(run.task.goal)}")
        threading.Thread(target=run.go, args=(done,), name=f"hermes-{label.replace(' ', '-')}",
                         daemon=True).start()
    _wait(runs, done, ctx.interrupt_event, started + cfg.child_timeout, notify)
    results = [_result(run) for run in runs]
    _record(parent, results, wall_started)
    return results


def _wait(runs: list[_Run], done: "queue.Queue[int]", interrupted: Optional[threading.Event],
          deadline: float, notify: Callable[[str, str], None]) -> None:
    pending = {run.index for run in runs}
    by_index = {run.index: run for run in runs}
    give_up: Optional[float] = None
    while pending:
        now = time.monotonic()
        reason = INTERRUPTED if interrupted is not None and interrupted.is_set() else \
            TIMEOUT if now >= deadline else None
        if reason is not None:
            for i in pending:
                run = by_index[i]
                run.stopped = run.stopped or reason
                if run.agent is not None:
                    run.agent.interrupt()  # repeated each tick until it has ended (see above)
            give_up = give_up or now + STOP_GRACE
            if now >= give_up:
                break
        try:
            i = done.get(timeout=POLL)
        except queue.Empty:
            continue
        pending.discard(i)
        _announce(by_index[i], len(runs), notify)
        if by_index[i].agent is not None:
            by_index[i].agent.close()  # its provider connections; the agent object is done
    for i in sorted(pending):  # never stopped: report what we know, leave the thread behind
        run = by_index[i]
        run.error = TimeoutError(f"it did not stop within {STOP_GRACE:.0f}s of being told to; "
                                 f"its session {run.session_id} has what it did")
        notify("warning", f"subagent {i}/{len(runs)} did not stop; left running in the background")


def _announce(run: _Run, n: int, notify: Callable[[str, str], None]) -> None:
    r = _result(run)
    tokens = r.prompt_tokens + r.completion_tokens
    line = (f"subagent {run.index}/{n} {r.status} in {r.duration:.1f}s "
            f"({r.api_calls} call{'s' if r.api_calls != 1 else ''}, {tokens:,} tokens)")
    if r.status != COMPLETED and r.error:
        line += f": {short(r.error, 100)}"
    notify("info", line)


def _result(run: _Run) -> ChildResult:
    status, answer, error = outcome(run.res, run.stopped, run.error)
    if run.stopped and run.error is not None and status == FAILED:
        status = run.stopped  # a child that never stopped keeps the reason we stopped it for
    res = run.res or {}
    ended = run.ended if run.ended is not None else time.monotonic()
    return ChildResult(index=run.index, goal=run.task.goal, status=status, answer=answer,
                       error=error, session_id=run.session_id,
                       api_calls=int(res.get("api_calls") or 0),
                       duration=max(0.0, ended - run.started),
                       prompt_tokens=int(res.get("prompt_tokens") or 0),
                       completion_tokens=int(res.get("completion_tokens") or 0))


def _record(parent: Any, results: list[ChildResult], started_at: float) -> None:
    """The delegation records and the children's session ends (a store failure costs only these)."""
    db = parent.session_db
    if db is None:
        return
    for r in results:
        if r.session_id is None:
            continue
        try:
            db.record_delegation(parent.session_id, r.session_id, r.index, r.goal, r.status,
                                 started_at=started_at, duration=r.duration, api_calls=r.api_calls,
                                 prompt_tokens=r.prompt_tokens,
                                 completion_tokens=r.completion_tokens, error=r.error)
            db.end_session(r.session_id, reason=f"subagent {r.status}")
        except Exception as exc:
            log.warning("could not record subagent %s: %s", r.session_id, exc)
