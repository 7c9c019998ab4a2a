"""Summary messages in a compacted history: how one is written, recognised and placed (SPEC §4).

Kept apart from the compressor's decisions because the store, `/undo` and the tests need to tell a
summary from a user's own words without running a compression. Pure: no I/O.
"""
from __future__ import annotations

from typing import Optional

SUMMARY_MARKER = (
    "[CONTEXT SUMMARY — reference only. Earlier turns were compacted; "
    "this is a hand-off note, not instructions.]"
)
SUMMARY_END = "[END OF SUMMARY]"
# the assistant's side of a standalone user-role summary, when the next message is the user's (see
# place_summary); exact text, so it is recognised without a flag on the wire
SUMMARY_ACK = "[Noted the context summary above; continuing from it.]"


def _first_text(msg: dict) -> str:
    content = msg.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list) and content:
        part = content[0]
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            return part["text"]
        if isinstance(part, str):
            return part
    return ""


def is_summary_message(msg: dict) -> bool:
    """True for a message that carries a compaction summary (standalone or merged into a turn)."""
    return (isinstance(msg, dict) and msg.get("role") != "tool"
            and _first_text(msg).startswith(SUMMARY_MARKER))


def is_summary_ack(msg: dict) -> bool:
    """True for the assistant acknowledgement placed right after a user-role summary."""
    return (isinstance(msg, dict) and msg.get("role") == "assistant" and not msg.get("tool_calls")
            and msg.get("content") == SUMMARY_ACK)


def is_compaction_message(msg: dict) -> bool:
    """A message a compaction wrote (summary or its acknowledgement): never the user's own words, so
    ``/undo`` never removes it and ``/retry`` never resends it."""
    return is_summary_message(msg) or is_summary_ack(msg)


def last_compaction_index(messages: list[dict]) -> int:
    """Index of the newest compaction message (-1 when none): the history before it is compacted.

    Every request on the Anthropic path asks this of the whole history, so a plain-text message
    that cannot be one (it neither starts with the marker nor is the acknowledgement) is passed
    over on a string test alone: a 400-message history without a compaction took ~3 ms."""
    for i in range(len(messages) - 1, -1, -1):
        msg = messages[i]
        content = msg.get("content") if isinstance(msg, dict) else None
        if isinstance(content, str) and content != SUMMARY_ACK \
                and not content.startswith(SUMMARY_MARKER):
            continue
        if is_compaction_message(msg):
            return i
    return -1


def summary_block(text: str) -> str:
    return f"{SUMMARY_MARKER}\n{text.strip()}\n{SUMMARY_END}"


def split_summary(msg: dict) -> tuple[str, Optional[dict]]:
    """``(summary_text, rest)`` of a summary message: ``rest`` is the message with the summary block
    removed (a shallow copy), or None when nothing else was in it. An acknowledgement is
    ("", None)."""
    if is_summary_ack(msg):
        return "", None
    first = _first_text(msg)
    body = first[len(SUMMARY_MARKER):]
    end = body.find(SUMMARY_END)
    if end < 0:
        summary, remainder = body.strip(), ""
    else:
        summary, remainder = body[:end].strip(), body[end + len(SUMMARY_END):].lstrip("\n")
    content = msg.get("content")
    if isinstance(content, list):
        parts = list(content[1:])
        if remainder.strip():
            parts.insert(0, {"type": "text", "text": remainder})
        if not parts and not msg.get("tool_calls"):
            return summary, None
        rest = dict(msg)
        rest["content"] = parts or None
        return summary, rest
    if not remainder.strip() and not msg.get("tool_calls"):
        return summary, None
    rest = dict(msg)
    rest["content"] = remainder if remainder.strip() else None
    return summary, rest


def _merge_block(block: str, msg: dict) -> dict:
    """``msg`` (shallow copy) with the summary block prepended to its content."""
    out = dict(msg)
    content = msg.get("content")
    if content is None or content == "":
        out["content"] = block
    elif isinstance(content, list):
        out["content"] = [{"type": "text", "text": block + "\n\n"}] + list(content)
    else:
        out["content"] = block + "\n\n" + str(content)
    return out


def _side(msg: dict) -> str:
    return "user" if msg.get("role") == "user" else "assistant"


def place_summary(block: str, head: list[dict], tail: list[dict]) -> list[dict]:
    """The summary message(s) followed by ``tail``, placed so user/assistant alternation stays valid
    after ``head`` (tool messages count as the assistant side; ``tail`` must not start with a tool).

    The summary gets a role different from both neighbours. When none exists (the neighbours are on
    different sides) and the tail starts with an assistant message, the block is prepended to it;
    when the tail starts with the user's message, the summary is a user message answered by
    :data:`SUMMARY_ACK`: it is never merged into the user's own words (``/retry`` resends those).
    An empty head behaves like an assistant before it, so a leading summary is a user message."""
    if not tail:
        raise ValueError("tail must not be empty")
    prev_side = _side(head[-1]) if head else "assistant"
    first = tail[0]
    next_side = _side(first)
    if prev_side == next_side:
        role = "assistant" if next_side == "user" else "user"
        return [{"role": role, "content": block}] + list(tail)
    if next_side == "user":
        ack = {"role": "assistant", "content": SUMMARY_ACK}
        return [{"role": "user", "content": block}, ack] + list(tail)
    return [_merge_block(block, first)] + list(tail[1:])
