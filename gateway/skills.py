"""Skills in chats (SPEC §10): ``/<skill> [text]`` sends the message with the skill attached, and
after a reply is sent the background review may run; its one line goes to the same chat."""
from __future__ import annotations

import asyncio
import logging
from typing import Any, Awaitable, Callable, Optional

log = logging.getLogger("gateway.runner")

MAX_HELP_SKILLS = 40


def _config(runner: Any) -> Any:
    return getattr(runner.agent_factory, "config", None)


async def expand(runner: Any, text: str) -> str:
    """The message to send: ``text`` with the skill attached when it starts with ``/<skill>``."""
    from hermes_core.config import hermes_home
    from tools.skills import invoke

    if not text.lstrip().startswith("/"):
        return text
    try:
        hit = await asyncio.to_thread(invoke.expand, text, hermes_home(), _config(runner))
    # a skill that became unreadable: the message still goes through as typed
    except Exception as exc:
        log.warning("could not attach the skill of %r: %s", text[:40], exc)
        return text
    return hit[1] if hit else text


def help_text(runner: Any) -> str:
    """The skills line of /help ('' when there are none)."""
    from hermes_core.config import hermes_home
    from tools.skills.bundled import catalog

    try:
        names = catalog(hermes_home(), _config(runner)).names()
    except Exception:  # noqa: BLE001 - /help must answer
        return ""
    if not names:
        return ""
    more = f" and {len(names) - MAX_HELP_SKILLS} more" if len(names) > MAX_HELP_SKILLS else ""
    return ("\nSkills (send /<skill> [text] to use one): "
            + ", ".join("/" + n for n in names[:MAX_HELP_SKILLS]) + more)


def after_reply(agent: Any, result: dict, reply: Callable[[str], Awaitable[None]]) -> Optional[Any]:
    """Start the skill review once the reply is out; its line is sent to the chat from the loop."""
    from agent import skill_review as review

    if agent is None:
        return None
    loop = asyncio.get_running_loop()

    def notify(line: str) -> None:
        asyncio.run_coroutine_threadsafe(reply(line), loop)

    return review.after_turn(agent, result, notify)


def wait_for_reviews(timeout: float) -> bool:
    """Shutting down: give running reviews ``timeout`` seconds (their writes are atomic anyway)."""
    from agent import skill_review as review

    return review.wait(timeout)
