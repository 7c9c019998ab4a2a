"""The runner's two media steps for chat turns (issue 24), kept out of the runner itself:
``prepare_turn`` turns a message's attachments into the turn's content before it runs (voice
transcripts are shown to the user first), ``send_answer`` sends an answer with the files its
``MEDIA:`` lines name. The working directory and the ``stt:`` settings come from the agent
factory (``default_agent_factory`` sets ``workdir`` and ``config`` on it)."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Awaitable, Callable, Optional

from gateway import media

log = logging.getLogger("gateway.runner")


def workdir_of(runner: Any) -> Optional[Path]:
    raw = getattr(runner.agent_factory, "workdir", None)
    return Path(raw) if raw else None


async def send_answer(adapter: Any, chat_id: str, text: str, thread_id: Optional[str],
                      workdir: Optional[Path]) -> None:
    files: list[Path] = []
    if workdir is not None:
        text, files, problems = media.outgoing_files(text, workdir)
        text = "\n".join(p for p in [text, *problems] if p)
    if text.strip() or files:
        if not await adapter.deliver(chat_id, text, files, thread_id=thread_id):
            log.warning("%s: part of an answer to %s was not accepted", adapter.name, chat_id)


async def prepare_turn(runner: Any, req: Any, reply: Callable[[str], Awaitable[None]]) -> bool:
    """Replace ``req.text`` by the content of its attachments; False when nothing is left to
    answer (the user was told why)."""
    from gateway.stt import settings

    workdir = workdir_of(runner) or Path.cwd()
    stt = settings(getattr(runner.agent_factory, "config", None))
    prepared = await media.prepare(req.text if isinstance(req.text, str) else "",
                                   req.attachments, workdir, stt)
    for notice in prepared.notices:
        await reply(notice)
    req.attachments = []
    if not prepared.usable:
        return False
    req.text = prepared.content
    return True
