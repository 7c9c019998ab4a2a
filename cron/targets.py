"""What a chat id looks like on each platform, for delivery targets ``<platform>:<chat>[:<thread>]``
(pure). A platform plugin of someone else's is accepted with any non-empty chat id.

- telegram: a number or ``@channel``; thread: a topic number
- discord: a channel id (a snowflake); thread: a thread's channel id
- slack: a channel id (``C…``, ``D…``, ``G…``) or ``#name``; thread: a message ``ts``
- matrix: a room id ``!id:server`` or alias ``#alias:server``; thread: its root ``$event`` id
- email: an address
"""
from __future__ import annotations

import re
from typing import Optional

BUILTIN = ("telegram", "discord", "slack", "matrix", "email")
_SHAPES = {
    "telegram": (re.compile(r"^(-?\d+|@[A-Za-z0-9_]{4,})(?::(\d+))?$"),
                 "a Telegram chat id is a number (or @channel), "
                 "optionally followed by :<topic id>"),
    "discord": (re.compile(r"^(\d{5,25})(?::(\d{5,25}))?$"),
                "a Discord channel id is a number (a snowflake), optionally :<thread id>"),
    "slack": (re.compile(r"^([CDG][A-Z0-9]{6,}|#[a-z0-9_.\-]{1,80})(?::(\d+\.\d+))?$"),
              "a Slack channel is its id (C…, D…, G…) or #name, optionally :<thread ts>"),
    "matrix": (re.compile(r"^([!#][^:\s]+:[A-Za-z0-9.\-\[\]]+(?::\d+)?)(?::(\$\S+))?$"),
               "a Matrix room is !id:server or #alias:server, optionally :<thread root $event>"),
    "email": (re.compile(r"^([^@\s:<>,]+@[^@\s:<>,]+\.[^@\s:<>,]+)$"),
              "an email target is an address, e.g. email:alice@example.com"),
}


class TargetSyntax(ValueError):
    """A chat id that cannot be one on its platform; the text says what one looks like."""


def split_chat(platform: str, rest: str) -> tuple[str, Optional[str]]:
    """``rest`` of ``<platform>:<rest>`` -> (chat id, thread id or None)."""
    shape = _SHAPES.get(platform)
    if shape is None:
        chat, _, thread = rest.partition(":")
        if not chat:
            raise TargetSyntax(f"{platform}:{rest!r} names no chat")
        return chat, thread or None
    m = shape[0].match(rest)
    if not m:
        raise TargetSyntax(f"{platform}:{rest!r}: {shape[1]}")
    return m.group(1), (m.group(2) if m.lastindex and m.lastindex >= 2 else None)
