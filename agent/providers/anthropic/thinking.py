"""The thinking blocks of answers that called tools, kept to be sent back with them.

With extended thinking on, the Messages API wants an assistant turn that called tools to be sent
back with its thinking blocks (signature included). The transcript stays OpenAI-shaped (the same
in the store whichever provider wrote it), so the blocks are kept here instead, by tool call id:
process-wide (clients are lent per request), bounded, and only an optimisation: a request whose
blocks are gone (another process, an old session) goes without thinking (``convert``).
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Optional

MAX_KEPT = 512

_kept: "OrderedDict[str, list[dict]]" = OrderedDict()
_lock = threading.Lock()


def remember(tool_ids: list[str], blocks: list[dict]) -> None:
    """Keep ``blocks`` for the answer whose tool calls are ``tool_ids``."""
    if not tool_ids or not blocks:
        return
    with _lock:
        _kept[tool_ids[0]] = [dict(b) for b in blocks]
        _kept.move_to_end(tool_ids[0])
        while len(_kept) > MAX_KEPT:
            _kept.popitem(last=False)


def recall(tool_ids: list[str]) -> Optional[list[dict]]:
    """The blocks kept for the answer that made these tool calls, if any."""
    if not tool_ids:
        return None
    with _lock:
        found = _kept.get(tool_ids[0])
    return [dict(b) for b in found] if found else None
