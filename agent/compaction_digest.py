"""The no-model compaction text (SPEC §4): an extractive digest of the middle of a conversation,
each user request and each final answer, truncated. Pure.

An earlier compaction folded into this one is carried over, never quoted: an earlier digest's
items become the first items of this one and its "Earlier summary" line stays the only one; an
earlier model-written summary becomes that line. So however many times a session is compacted
without a model, the text never nests ("Earlier summary: … Earlier summary: …").
"""
from __future__ import annotations

from typing import Optional

from hermes_core.messages import message_text
from agent.summary_messages import is_compaction_message, split_summary
from hermes_core.tokens import estimate_text_tokens

DIGEST_ITEM_CHARS = 200
HEADER = ("Automatic summary unavailable; extractive digest of {n} earlier messages "
          "(user requests and final answers, truncated).")
EARLIER = "Earlier summary: "
_WHO = {"- User: ": "User", "- Assistant: ": "Assistant"}

Item = tuple[str, str]  # (User | Assistant, text)


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: max(1, limit - 1)].rstrip() + "…"


def split_digest(text: str) -> Optional[tuple[Optional[str], list[Item], int]]:
    """(its earlier-summary line, its items, messages it covered) when ``text`` is a digest."""
    lines = text.strip().splitlines()
    head = HEADER.split("{n}")[0]
    if not lines or not lines[0].startswith(head):
        return None
    count = lines[0][len(head):].split(" ", 1)[0]
    earlier, items = None, []
    for line in lines[1:]:
        if line.startswith(EARLIER):
            earlier = line[len(EARLIER):]
        for prefix, who in _WHO.items():
            if line.startswith(prefix):
                items.append((who, line[len(prefix):]))
    return earlier, items, int(count) if count.isdigit() else len(items)


def _carried(previous: list[str]) -> tuple[list[str], list[Item], int]:
    """Earlier compactions as (texts for the one Earlier-summary line, items, messages covered)."""
    texts: list[str] = []
    items: list[Item] = []
    covered = 0
    for part in previous:
        parsed = split_digest(part)
        if parsed is None:
            texts.append(part)
            continue
        earlier, old_items, n = parsed
        if earlier:
            texts.append(earlier)
        items += old_items
        covered += n
    return texts, items, covered


def _middle_items(middle: list[dict]) -> list[Item]:
    items: list[Item] = []
    for m in middle:
        role = m.get("role")
        if is_compaction_message(m):
            rest = split_summary(m)[1]
            if rest is None:
                continue
            m = rest
        if role == "user" or (role == "assistant" and not m.get("tool_calls")):
            # normalise once, on a bounded prefix (items are clipped to <= 200 chars anyway)
            text = " ".join(message_text(m)[: DIGEST_ITEM_CHARS * 3].split())
            if text:
                items.append(("User" if role == "user" else "Assistant", text))
    return items


def digest(middle: list[dict], previous: list[str], budget: int) -> str:
    """The digest of ``middle`` (plus the compactions in ``previous``) within ``budget`` tokens."""
    max_chars = budget * 4
    texts, items, covered = _carried(previous)
    items += _middle_items(middle)
    header = HEADER.format(n=covered + len(middle))
    prev_line = EARLIER + _clip(" ".join(texts), max(200, max_chars // 3)) if texts else ""
    fixed = len(header) + (len(prev_line) + 1 if prev_line else 0)

    def size(sel: list[Item], lim: int) -> int:  # upper bound of render(sel, lim)
        return fixed + sum(5 + len(who) + min(len(text), lim) for who, text in sel)

    def render(sel: list[Item], lim: int, omitted: int = 0, at: int = 0) -> str:
        lines = [header] + ([prev_line] if prev_line else [])
        for j, (who, text) in enumerate(sel):
            if omitted and j == at:
                lines.append(f"- … ({omitted} more messages omitted)")
            if len(text) > lim:
                text = text[: lim - 1].rstrip() + "…"
            lines.append(f"- {who}: {text}")
        return "\n".join(lines)

    def bounded(out: str) -> str:  # non-Latin text counts more tokens per char
        est_tokens = estimate_text_tokens(out)
        if est_tokens > budget:
            out = out[: max(1, int(len(out) * budget / est_tokens * 0.97))]
        return out

    for lim in (DIGEST_ITEM_CHARS, 120, 60):
        if size(items, lim) <= max_chars:
            return bounded(render(items, lim))
    users = [it for it in items if it[0] == "User"]
    for lim in (DIGEST_ITEM_CHARS, 120, 60, 30):
        if size(users, lim) <= max_chars:
            return bounded(render(users, lim))
    # still too long: keep the first and the newest requests
    keep = max(2, (max_chars - fixed) // 40)
    if len(users) > keep:
        first = keep // 3
        sel = users[:first] + users[len(users) - (keep - first):]
        return bounded(render(sel, 30, omitted=len(users) - keep, at=first)[:max_chars])
    return bounded(render(users, 30)[:max_chars])
