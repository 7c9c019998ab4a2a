"""What a turn did with tools and skills, read from its messages (pure): the review's trigger, what
it is told, and the one line the user sees afterwards."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Iterable, Optional

from hermes_core.messages import content_text

# the review agent's platform; skill_manage writes as actor "review"
REVIEW_PLATFORM = "skill_review"

ACTION_WORDS = {"create": "created", "patch": "patched", "edit": "rewrote",
                "write_file": "added a file to", "remove_file": "removed a file from",
                "delete": "deleted"}


@dataclass
class TurnActivity:
    tool_calls: int = 0  # every tool call of the turn
    calls_after_write: int = 0  # tool calls after its last successful skill write
    # skills loaded with skill_view, first use first
    viewed: list[str] = field(default_factory=list)
    written: list[tuple[str, str]] = field(default_factory=list)  # (action, name) that succeeded


def _args(call: dict) -> dict:
    raw = (call.get("function") or {}).get("arguments")
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw or "{}")
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _succeeded(result: Optional[str]) -> bool:
    try:
        value = json.loads(result or "")
    except (TypeError, ValueError):
        return False
    return isinstance(value, dict) and value.get("ok") is True


def last_turn(messages: list[dict]) -> list[dict]:
    """The messages from the last user message on."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "user":
            return messages[i:]
    return list(messages)


def activity(messages: Iterable[dict]) -> TurnActivity:
    """Tool calls, skills viewed and skill writes in ``messages`` (usually ``last_turn(...)``)."""
    messages = list(messages)
    results = {m.get("tool_call_id"): content_text(m.get("content")) for m in messages
               if m.get("role") == "tool"}
    out = TurnActivity()
    for msg in messages:
        for call in (msg.get("tool_calls") or ()) if msg.get("role") == "assistant" else ():
            if not isinstance(call, dict):
                continue
            out.tool_calls += 1
            out.calls_after_write += 1
            name, args = (call.get("function") or {}).get("name"), _args(call)
            skill = str(args.get("name") or "").strip()
            if name == "skill_view" and skill and skill not in out.viewed:
                out.viewed.append(skill)
            elif name == "skill_manage" and skill and _succeeded(results.get(call.get("id"))):
                out.written.append((str(args.get("action")), skill))
                out.calls_after_write = 0
    return out


def digest(messages: list[dict], limit: int = 24_000, per_item: int = 600) -> str:
    """A plain transcript of the newest messages within ``limit`` characters (tool arguments and
    results shortened), for the review to read."""
    lines: list[str] = []
    for msg in messages:
        role = msg.get("role")
        text = " ".join(content_text(msg.get("content")).split())
        if role == "user":
            lines.append(f"USER: {_cut(text, per_item * 4)}")
        elif role == "assistant":
            if text:
                lines.append(f"ASSISTANT: {_cut(text, per_item * 2)}")
            for call in msg.get("tool_calls") or ():
                fn = (call.get("function") or {}) if isinstance(call, dict) else {}
                arguments = _cut(str(fn.get("arguments") or ""), per_item)
                lines.append(f"TOOL CALL {fn.get('name')}: {arguments}")
        elif role == "tool":
            lines.append(f"TOOL RESULT: {_cut(text, per_item)}")
    out: list[str] = []
    used = 0
    for line in reversed(lines):
        if used + len(line) + 1 > limit:
            out.append("[... earlier messages left out ...]")
            break
        out.append(line)
        used += len(line) + 1
    return "\n".join(reversed(out))


def _cut(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def outcome_line(written: list[tuple[str, str]]) -> Optional[str]:
    """The one line the user sees after a review that changed skills (None when nothing changed)."""
    if not written:
        return None
    by_name: dict[str, list[str]] = {}
    for action, name in written:
        by_name.setdefault(name, [])
        word = ACTION_WORDS.get(action, action)
        if word not in by_name[name]:
            by_name[name].append(word)
    parts = [f"{' and '.join(words)} {name!r}" for name, words in by_name.items()]
    first = next(iter(by_name))
    return (f"Skill review: {'; '.join(parts)} (see `hermes skills show {first}`; "
            f"undo with `hermes skills revert {first}`).")

