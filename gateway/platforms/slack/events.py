"""Which Slack events are messages for the bot, and what they say (pure). DMs (``im``) are
``message`` events; in channels only ``app_mention`` counts, and the answer goes into the
thread the mention starts or is in: a thread is a session. Edits, joins, bot messages and our
own are not messages."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional

_MENTION = re.compile(r"<@([A-Z0-9]+)(?:\|[^>]*)?>")
_KEPT_SUBTYPES = (None, "file_share", "thread_broadcast")


@dataclass(frozen=True)
class Incoming:
    channel: str
    user: str
    text: str
    ts: str
    chat_type: str  # "dm" | "thread"
    thread: Optional[str]
    files: tuple[dict[str, Any], ...] = ()


def clean_text(text: str, bot_user: str) -> str:
    """The words without the mention of the bot; other people's mentions stay as ``@U…``."""
    text = _MENTION.sub(lambda m: "" if m.group(1) == bot_user else f"@{m.group(1)}", text)
    text = re.sub(r"[ \t]{2,}", " ", text).strip()
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def incoming(event: dict[str, Any], bot_user: str) -> Optional[Incoming]:
    """The message this event carries for the bot, or None."""
    kind, user = event.get("type"), str(event.get("user") or "")
    if not user or user == bot_user or event.get("bot_id"):
        return None
    if event.get("subtype") not in _KEPT_SUBTYPES:
        return None
    channel, ts = str(event.get("channel") or ""), str(event.get("ts") or "")
    files = tuple(f for f in event.get("files") or () if isinstance(f, dict))
    text = clean_text(str(event.get("text") or ""), bot_user)
    thread = str(event["thread_ts"]) if event.get("thread_ts") else None
    if kind == "message" and event.get("channel_type") == "im":
        return Incoming(channel, user, text, ts, "dm", thread, files)
    if kind == "app_mention":
        return Incoming(channel, user, text, ts, "thread", thread or ts, files)
    return None


def kind_of(mime: str) -> str:
    return "image" if mime.startswith("image/") else "voice" if mime.startswith("audio/") \
        else "file"
