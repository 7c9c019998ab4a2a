"""Matrix event content in and out (pure): what a message is, whether it addresses the bot, its
thread, and the content of what the bot sends (``m.text`` with an HTML body, ``m.image`` /
``m.file`` for uploads, thread relations)."""
from __future__ import annotations

import re
from typing import Any, Optional

from gateway.platforms.markup import looks_formatted, markdown_html

KINDS = {"m.text": "text", "m.notice": "text", "m.emote": "text", "m.image": "image",
         "m.audio": "voice", "m.file": "file", "m.video": "file"}


def kind_of(content: dict[str, Any]) -> Optional[str]:
    """``text``, ``image``, ``voice`` (audio, voice notes included), ``file``, or None (not a
    message the bot handles: reactions, edits of earlier messages...)."""
    relates = content.get("m.relates_to") or {}
    if relates.get("rel_type") == "m.replace":
        return None  # an edit: the original was answered already
    return KINDS.get(str(content.get("msgtype") or ""))


def thread_of(content: dict[str, Any]) -> Optional[str]:
    relates = content.get("m.relates_to") or {}
    if relates.get("rel_type") == "m.thread" and relates.get("event_id"):
        return str(relates["event_id"])
    return None


def addresses_bot(content: dict[str, Any], user_id: str, display_name: str = "") -> bool:
    """A group message is for the bot when it mentions it: ``m.mentions``, its user id, or its
    display name at the start (``hermes: ...``)."""
    mentioned = (content.get("m.mentions") or {}).get("user_ids") or []
    if user_id in mentioned:
        return True
    body = str(content.get("body") or "")
    if user_id and user_id in body:
        return True
    localpart = user_id[1:].split(":", 1)[0] if user_id.startswith("@") else ""
    names = [n for n in (display_name, localpart) if n]
    return any(re.match(rf"\s*@?{re.escape(n)}\b[:,]?", body, re.I) for n in names)


def strip_mention(body: str, user_id: str, display_name: str = "") -> str:
    """The message without the bot's name in front (``hermes: what time is it`` -> the question)."""
    localpart = user_id[1:].split(":", 1)[0] if user_id.startswith("@") else ""
    for name in (user_id, display_name, localpart):
        if name:
            m = re.match(rf"\s*@?{re.escape(name)}\b[:,]?\s*", body, re.I)
            if m:
                return body[m.end():]
    return body.replace(user_id, "").strip() if user_id else body


def text_content(text: str) -> dict[str, Any]:
    """An ``m.text`` message: the Markdown as ``body``, rendered HTML as ``formatted_body``."""
    content: dict[str, Any] = {"msgtype": "m.text", "body": text}
    if looks_formatted(text):
        content.update(format="org.matrix.custom.html", formatted_body=markdown_html(text))
    return content


def file_content(name: str, mime: str, size: int, mxc: str) -> dict[str, Any]:
    msgtype = "m.image" if mime.startswith("image/") else (
        "m.audio" if mime.startswith("audio/") else "m.file")
    return {"msgtype": msgtype, "body": name, "url": mxc, "info": {"mimetype": mime, "size": size}}


def in_thread(content: dict[str, Any], thread_id: Optional[str],
              reply_to: Optional[str] = None) -> dict[str, Any]:
    """``content`` sent into a thread (with the reply fallback older clients show)."""
    if not thread_id:
        return content
    relation: dict[str, Any] = {"rel_type": "m.thread", "event_id": thread_id,
                                "is_falling_back": True}
    relation["m.in_reply_to"] = {"event_id": reply_to or thread_id}
    return {**content, "m.relates_to": relation}
