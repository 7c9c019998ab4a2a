"""The background self-improvement review (SPEC §10).

After a turn that brought the tool calls since the last skill write to
``skills.creation_nudge_interval`` (default 10), a surface calls ``after_turn`` once the answer is
delivered. A thread then runs a separate agent with only the skill tools over a digest of the
conversation; it may patch a skill the turn used (preferred) or create one. Nothing of it is
stored as a session, it never runs twice at once for one session, it never edits a bundled skill,
and ``skills.auto_create: false`` turns it off. The user's answer never waits for it; the surface
shows the one line ``Review.outcome`` when a skill changed. One-shot runs ``wait()`` before exit.
"""
from __future__ import annotations

import logging
import threading
import time
import weakref
from typing import TYPE_CHECKING, Any, Callable, Optional

from tools.skills import activity
from tools.skills.activity import REVIEW_PLATFORM

if TYPE_CHECKING:  # pragma: no cover
    from run_agent import AIAgent

log = logging.getLogger("hermes.skills")

MAX_ITERATIONS = 8
INSTRUCTIONS = (
    "You are reviewing a finished conversation to decide whether to save what was learned "
    "as a skill: "
    "a reusable procedure for a task that will come back. Save only what will help next time: the "
    "steps that worked, pitfalls and their fixes, commands, the user's preferred way of doing it. "
    "Never save secrets, personal data or one-off facts. If a skill the conversation used "
    "covers this "
    "work, improve it with skill_manage patch instead of creating a new one. Create at most "
    "one skill "
    "(content: front matter with name and description, then short numbered steps). If nothing is "
    "worth saving, call no tool and answer: nothing to save.")

_state: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()  # agent -> counters
_running: dict[str, "Review"] = {}  # session id -> its review in progress
_lock = threading.Lock()


class Review(threading.Thread):
    """One review in the background; ``outcome`` is the line for the user (None: nothing
    changed)."""

    def __init__(self, agent: AIAgent, messages: list[dict], used: list[str],
                 notify: Optional[Callable[[str], None]]) -> None:
        super().__init__(name="hermes-skill-review", daemon=True)
        self.session_id = str(agent.session_id)
        self._agent = agent
        self._messages = messages
        self._used = used
        self._notify = notify
        self.outcome: Optional[str] = None
        self.written: list[tuple[str, str]] = []
        self.error: Optional[str] = None
        self.started_at = time.monotonic()
        self.finished_at: Optional[float] = None

    def run(self) -> None:
        try:
            self.written = run_review(self._agent, self._messages, self._used)
            self.outcome = activity.outcome_line(self.written)
        except Exception as exc:  # noqa: BLE001 - a failed review must not disturb the session
            self.error = f"{type(exc).__name__}: {exc}"
            log.warning("skill review failed: %s", self.error)
        finally:
            self.finished_at = time.monotonic()
            with _lock:
                if _running.get(self.session_id) is self:
                    del _running[self.session_id]
        if self.outcome and self._notify is not None:
            try:
                self._notify(self.outcome)
            except Exception:  # noqa: BLE001
                log.exception("showing the skill review's outcome failed")


def due(agent: AIAgent, result: Optional[dict]) -> Optional[activity.TurnActivity]:
    """Count the turn's tool calls; the turn's activity when a review should run now, else None."""
    section = agent.config.skills
    res = result or {}
    if not section.auto_create:
        return None
    own = review_settings(agent)
    if agent.platform == REVIEW_PLATFORM or (own.provider if own else agent.provider) == "local":
        return None  # the embedded model is too small to write skills, and is busy answering
    tools = {(t.get("function") or {}).get("name") for t in agent.tools or ()}
    if "skill_manage" not in tools or not res.get("completed") or res.get("interrupted"):
        return None
    turn = activity.activity(activity.last_turn(list(res.get("messages") or ())))
    with _lock:
        counters = _state.setdefault(agent, {"calls": 0})
        counters["calls"] = (turn.calls_after_write if turn.written
                             else counters["calls"] + turn.tool_calls)
        if counters["calls"] < section.creation_nudge_interval:
            return None
        if str(agent.session_id) in _running:
            return None  # one at a time per session; the count stays, so a later turn tries again
        counters["calls"] = 0
    return turn


def after_turn(agent: AIAgent, result: Optional[dict],
               notify: Optional[Callable[[str], None]] = None) -> Optional[Review]:
    """Start the review in the background when it is due (call after the answer is delivered)."""
    try:
        turn = due(agent, result)
    except Exception:  # noqa: BLE001 - deciding must never break a surface
        log.exception("deciding on a skill review failed")
        return None
    if turn is None:
        return None
    review = Review(agent, list((result or {}).get("messages") or ()), turn.viewed, notify)
    with _lock:
        if review.session_id in _running:
            return None
        _running[review.session_id] = review
    review.start()
    return review


def running(session_id: str) -> Optional[Review]:
    with _lock:
        return _running.get(session_id)


def wait(timeout: Optional[float] = None) -> bool:
    """Wait for every review of this process (one-shot exit); True when none is left running."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        with _lock:
            reviews = list(_running.values())
        if not reviews:
            return True
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            return False
        reviews[0].join(left)


def request(messages: list[dict], used: list[str]) -> str:
    """The review's user message: which skills the work used, then the conversation digest."""
    hint = (f"Skills this conversation used: {', '.join(used)}. Prefer patching one of them.\n\n"
            if used else "")
    return f"{hint}The conversation (newest part):\n\n{activity.digest(messages)}"


def review_settings(agent: AIAgent) -> Any:
    """``auxiliary.review``'s settings (``hermes_core.auxiliary``); None: the agent's own model,
    the fallback's while it is on one."""
    from hermes_core.auxiliary import is_configured, resolve_auxiliary

    if not is_configured(agent.config, "review"):
        return None
    return resolve_auxiliary(agent.config, "review", agent.provider_settings)


def run_review(agent: AIAgent, messages: list[dict], used: list[str]) -> list[tuple[str, str]]:
    """Run the review agent to the end (synchronously); the (action, skill) writes that
    succeeded."""
    from agent.factory import AgentSpec, ProviderChoice, build_agent

    own = review_settings(agent)
    choice = ProviderChoice.like(agent) if own is None else ProviderChoice.of(own)
    child = build_agent(AgentSpec(
        config=agent.config, platform=REVIEW_PLATFORM, provider=choice,
        cwd=agent.cwd, session_db=False, enabled_toolsets=["skills"], skip_memory=True,
        skip_context_files=True, max_iterations=MAX_ITERATIONS, yolo=agent.yolo,
        mutating_tools=agent.mutating_tools))  # nobody to ask: it writes only where the parent may
    try:
        res = child.run_conversation(request(messages, used), system_message=INSTRUCTIONS)
    finally:
        child.close()
    if res.get("failed"):
        raise RuntimeError(str(res.get("error") or "the review's turn failed"))
    return activity.activity(activity.last_turn(list(res.get("messages") or ()))).written
