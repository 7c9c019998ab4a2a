"""Pure helpers over OpenAI chat messages (SPEC §4: tool-call pairs are never split).

A message is a dict ``{"role", "content", "tool_calls"?, "tool_call_id"?}``. The rules used here
match what OpenAI-compatible providers accept:

- the tool results of an assistant message with ``tool_calls`` follow it directly, as a block of
  ``tool`` messages (one per call id, any order inside the block);
- a tool message whose id was not called by the assistant message right before its block is an
  orphan; a call whose id is not answered in that block has no result;
- two ``user`` or two ``assistant`` messages must not follow each other directly (a tool block
  separates: ``assistant(tool_calls) -> tool -> assistant`` is the normal flow). ``system`` /
  ``developer`` messages are neutral.

Nothing here mutates its input.
"""
from __future__ import annotations

from typing import Any, Iterable

STUB_RESULT = "[result unavailable]"
_NEUTRAL = ("system", "developer")


def tool_call_ids(msg: dict) -> list[str]:
    """Ids of the tool calls an assistant message makes (empty for anything else)."""
    if not isinstance(msg, dict) or msg.get("role") != "assistant":
        return []
    out: list[str] = []
    for call in msg.get("tool_calls") or ():
        if isinstance(call, dict) and call.get("id"):
            out.append(str(call["id"]))
    return out


def tool_call_names(messages: Iterable[dict]) -> dict[str, str]:
    """Map tool_call id -> function name over all assistant messages (one pass)."""
    names: dict[str, str] = {}
    for msg in messages:
        if msg.get("role") != "assistant" or not msg.get("tool_calls"):
            continue
        for call in msg["tool_calls"]:
            if isinstance(call, dict) and call.get("id"):
                fn = call.get("function") or {}
                names[str(call["id"])] = str(fn.get("name") or "tool")
    return names


def _scan(messages: list[dict]) -> tuple[list[int], dict[int, list[str]]]:
    """One pass: indices of orphan tool results, and per assistant index the unanswered ids."""
    orphans: list[int] = []
    missing: dict[int, list[str]] = {}
    pending: dict[str, None] = {}  # ordered set of unanswered ids of the current block
    owner = -1  # index of the assistant message whose block we are in
    for i, msg in enumerate(messages):
        role = msg.get("role")
        if role == "tool":
            cid = msg.get("tool_call_id")
            if cid is not None and str(cid) in pending:
                del pending[str(cid)]
            else:
                orphans.append(i)
            continue
        if pending:
            missing[owner] = list(pending)
        pending = {}
        owner = -1
        if role == "assistant":
            ids = tool_call_ids(msg)
            if ids:
                pending = dict.fromkeys(ids)
                owner = i
    if pending:
        missing[owner] = list(pending)
    return orphans, missing


def find_tool_pair_violations(messages: list[dict]) -> list[str]:
    """Human-readable problems: orphan tool results and tool calls without a result."""
    orphans, missing = _scan(messages)
    problems = [
        f"tool message {i} (tool_call_id {messages[i].get('tool_call_id')!r}) "
        "has no preceding assistant tool call"
        for i in orphans
    ]
    for at, ids in sorted(missing.items()):
        for cid in ids:
            problems.append(f"assistant message {at} tool call {cid!r} has no tool result")
    return problems


def sanitize_tool_pairs(messages: list[dict]) -> list[dict]:
    """A copy with orphan tool results dropped and a stub result added after the result block of
    every call left unanswered. Order is otherwise kept; message dicts are shared, not copied."""
    orphans, missing = _scan(messages)
    if not orphans and not missing:
        return list(messages)
    drop = set(orphans)
    out: list[dict] = []
    n = len(messages)
    i = 0
    while i < n:
        if i in drop:
            i += 1
            continue
        msg = messages[i]
        out.append(msg)
        if i in missing:
            j = i + 1
            while j < n and messages[j].get("role") == "tool":
                if j not in drop:
                    out.append(messages[j])
                j += 1
            for cid in missing[i]:
                out.append({"role": "tool", "tool_call_id": cid, "content": STUB_RESULT})
            i = j
            continue
        i += 1
    return out


def alternation_problems(messages: list[dict]) -> list[str]:
    """Consecutive user/user or assistant/assistant messages (a tool block separates turns;
    a tool message straight after a user message is reported too). System messages are neutral."""
    problems: list[str] = []
    last_role = None
    last_idx = -1
    for i, msg in enumerate(messages):
        role = msg.get("role")
        if role in _NEUTRAL:
            continue
        if role in ("user", "assistant") and role == last_role:
            problems.append(f"consecutive {role} messages at {last_idx} and {i}")
        elif role == "tool" and last_role == "user":
            problems.append(f"tool message {i} follows user message {last_idx}")
        last_role = role
        last_idx = i
    return problems


def is_safe_cut(messages: list[dict], i: int) -> bool:
    """True when a cut before index ``i`` (``messages[:i] | messages[i:]``) splits no tool pair."""
    return i <= 0 or i >= len(messages) or messages[i].get("role") != "tool"


def safe_cut_index(messages: list[dict], i: int, direction: str = "backward") -> int:
    """Move a cut point (before index ``i``) so that no tool result is separated from the assistant
    message that called it. ``backward`` moves the cut earlier (onto the assistant tool_calls
    message), ``forward`` moves it past the tool block. Result is clamped to ``[0, len]``."""
    n = len(messages)
    i = max(0, min(i, n))
    if direction not in ("backward", "forward"):
        raise ValueError("direction must be 'backward' or 'forward'")
    if direction == "backward":
        while 0 < i < n and messages[i].get("role") == "tool":
            i -= 1
    else:
        while i < n and messages[i].get("role") == "tool":
            i += 1
    return i


def content_text(content: Any, placeholders: bool = False) -> str:
    """Message content as plain text: text parts joined; other parts (images) omitted, or shown as
    ``[image]`` when ``placeholders``. Parts may be dicts or SDK objects."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return str(content)
    parts = []
    for part in content:
        if isinstance(part, str):
            parts.append(part)
            continue
        get = part.get if isinstance(part, dict) else (lambda k, d=None, p=part: getattr(p, k, d))
        text = get("text")
        if isinstance(text, str):
            parts.append(text)
        elif placeholders:
            kind = str(get("type") or "part")
            parts.append("[image]" if "image" in kind else f"[{kind}]")
    return "\n".join(parts)


def message_text(msg: dict) -> str:
    """The plain text of a message's content (text parts joined; images omitted)."""
    return content_text(msg.get("content"))
