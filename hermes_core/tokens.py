"""Rough token estimates (SPEC §3). Pure, no I/O, no tokenizer download.

About 4 characters per token for Latin text, about 1 token per CJK character, a flat allowance per
image part. A real ``prompt_tokens`` reading always beats these; callers keep it and estimate only
what was added since.
"""
from __future__ import annotations

import json
import re
from typing import Any, Iterable, Optional

IMAGE_TOKENS = 800
PER_MESSAGE_OVERHEAD = 4
_WIDE = re.compile(
    r"[\u1100-\u11ff\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\u3040-\u30ff]")


def estimate_text_tokens(text: str) -> int:
    if not text:
        return 0
    n = len(text)
    if n < 20000 and text.isascii():
        return (n + 3) // 4
    wide = len(_WIDE.findall(text)) if not text.isascii() else 0
    return wide + (n - wide + 3) // 4


def _content_tokens(content: Any) -> int:
    if content is None:
        return 0
    if isinstance(content, str):
        return estimate_text_tokens(content)
    if isinstance(content, list):
        total = 0
        for part in content:
            if isinstance(part, dict):
                kind = part.get("type")
                if kind in ("image_url", "image", "input_image"):
                    total += IMAGE_TOKENS
                else:
                    total += estimate_text_tokens(str(part.get("text") or ""))
            else:
                total += estimate_text_tokens(str(part))
        return total
    return estimate_text_tokens(str(content))


def estimate_message_tokens(msg: dict) -> int:
    """Tokens of one message; plain ASCII text, most of every history, without a call more:
    each request estimates every message of the history."""
    content = msg.get("content")
    if type(content) is str and len(content) < 20000 and content.isascii():
        total = PER_MESSAGE_OVERHEAD + (len(content) + 3) // 4  # as estimate_text_tokens
    else:
        total = PER_MESSAGE_OVERHEAD + _content_tokens(content)
    calls = msg.get("tool_calls")
    if calls:
        for call in calls:
            fn = call.get("function") or {}
            total += (estimate_text_tokens(fn.get("name") or "")
                      + estimate_text_tokens(fn.get("arguments") or "") + 8)
    return total


def estimate_messages_tokens_rough(messages: Iterable[dict]) -> int:
    return sum(estimate_message_tokens(m) for m in messages)


def estimate_tools_tokens(tools: Optional[list]) -> int:
    if not tools:
        return 0
    return estimate_text_tokens(json.dumps(tools, separators=(",", ":")))


def estimate_request_tokens_rough(messages: Iterable[dict], system_prompt: Optional[str] = None,
                                  tools: Optional[list] = None) -> int:
    """Whole-request estimate: history + system prompt + tool schemas."""
    total = estimate_messages_tokens_rough(messages)
    if system_prompt:
        total += PER_MESSAGE_OVERHEAD + estimate_text_tokens(system_prompt)
    return total + estimate_tools_tokens(tools)


def schema_tokens(definitions: Optional[list]) -> int:
    """The prompt budget's measure of tool schemas (SPEC §9): each definition's ``json.dumps`` / 4.

    A little above what the wire carries (compact JSON), so a budget met here is met on the wire.
    """
    total = 0
    for d in definitions or ():  # every request measures the same definitions: the hit inline
        hit = _SCHEMA_CHARS.get(id(d))
        total += hit[1] if hit is not None and hit[0] is d else _schema_chars(d)
    return total // 4


_SCHEMA_CHARS: dict[int, tuple[Any, int]] = {}  # id -> (the definition, its JSON length)


def _schema_chars(definition: Any) -> int:
    """``len(json.dumps(definition))``, remembered: the same definitions are measured every turn
    (the entry keeps the object, so its id cannot be reused while it is cached)."""
    hit = _SCHEMA_CHARS.get(id(definition))
    if hit is not None and hit[0] is definition:
        return hit[1]
    if len(_SCHEMA_CHARS) > 4096:
        _SCHEMA_CHARS.clear()
    n = len(json.dumps(definition))
    _SCHEMA_CHARS[id(definition)] = (definition, n)
    return n
