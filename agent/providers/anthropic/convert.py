"""OpenAI-shaped chat requests -> Anthropic Messages API requests. Pure.

The agent keeps one transcript shape (OpenAI's: ``tool_calls`` on assistant messages, ``tool``
messages for results, ``image_url`` parts), so a session can move between providers; this module
is the only place that knows the Messages API's shape: system text apart, strictly alternating
user/assistant turns, ``tool_use``/``tool_result`` blocks, images as ``image`` blocks.

Prompt caching: ``cache_control`` breakpoints go on the byte-stable prefix: the system prompt
(which also covers the tools, sent before it), the end of the compacted head (the last compaction
summary: stable until the next compaction) and the last message (the next request of the
conversation reads everything up to here from the cache). Three of the four breakpoints allowed.
"""
from __future__ import annotations

import json
import re
from typing import Any, Callable, Optional

from agent.summary_messages import last_compaction_index
from hermes_core.messages import content_text

CACHE = {"type": "ephemeral"}
CONTINUE_PLACEHOLDER = "(continuing the conversation)"
EMPTY_PLACEHOLDER = "(empty)"
_ID_JUNK = re.compile(r"[^a-zA-Z0-9_-]")
_DATA_URL = re.compile(r"^data:([\w/+.-]+);base64,(.*)$", re.S)
_CHOICES = {"auto": {"type": "auto"}, "required": {"type": "any"}, "none": {"type": "none"}}

ThinkingLookup = Callable[[list[str]], Optional[list[dict]]]


def tool_id(raw: Any) -> str:
    """A tool call id the Messages API accepts (letters, digits, _ and -), the same every time."""
    text = _ID_JUNK.sub("_", str(raw or "")) or "call"
    return text[:64]


def convert_tool(tool: dict) -> dict:
    fn = tool.get("function") if isinstance(tool.get("function"), dict) else tool
    schema = fn.get("parameters") or fn.get("input_schema") or {"type": "object",
                                                                   "properties": {}}
    out = {"name": fn.get("name") or "", "input_schema": schema}
    if fn.get("description"):
        out["description"] = fn["description"]
    return out


def convert_tool_choice(choice: Any) -> Optional[dict]:
    if isinstance(choice, str):
        return _CHOICES.get(choice)
    if isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name") or choice.get("name")
        return {"type": "tool", "name": name} if name else None
    return None


def image_block(url: str) -> dict:
    match = _DATA_URL.match(url or "")
    if match:
        return {"type": "image", "source": {"type": "base64", "media_type": match.group(1),
                                            "data": match.group(2)}}
    return {"type": "image", "source": {"type": "url", "url": url}}


def content_blocks(content: Any) -> list[dict]:
    """Message content (a string or OpenAI parts) as text and image blocks; empty text is left
    out (the API refuses empty text blocks)."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks: list[dict] = []
    for part in content if isinstance(content, list) else [content]:
        if isinstance(part, str):
            blocks += [{"type": "text", "text": part}] if part else []
        elif not isinstance(part, dict):
            continue
        elif part.get("type") in ("image_url", "input_image"):
            ref = part.get("image_url")
            url = ref.get("url") if isinstance(ref, dict) else ref
            blocks.append(image_block(str(url or "")))
        elif part.get("type") == "image" and isinstance(part.get("source"), dict):
            blocks.append({"type": "image", "source": part["source"]})
        elif isinstance(part.get("text"), str) and part["text"]:
            blocks.append({"type": "text", "text": part["text"]})
    return blocks


def _arguments(raw: Any) -> dict:
    if isinstance(raw, dict):
        return raw
    try:
        parsed = json.loads(raw) if isinstance(raw, str) and raw.strip() else {}
    except ValueError:
        return {"raw_arguments": raw}
    return parsed if isinstance(parsed, dict) else {"value": parsed}


def assistant_blocks(msg: dict, thinking: Optional[ThinkingLookup]) -> list[dict]:
    calls = [c for c in msg.get("tool_calls") or [] if isinstance(c, dict)]
    blocks: list[dict] = []
    if calls and thinking is not None:
        blocks += thinking([str(c.get("id") or "") for c in calls]) or []
    blocks += content_blocks(msg.get("content"))
    for call in calls:
        fn = call.get("function") or {}
        blocks.append({"type": "tool_use", "id": tool_id(call.get("id")),
                       "name": fn.get("name") or "", "input": _arguments(fn.get("arguments"))})
    return blocks


def tool_result_block(msg: dict) -> dict:
    content = msg.get("content")
    inner: Any = content_blocks(content) if isinstance(content, list) else content_text(content)
    return {"type": "tool_result", "tool_use_id": tool_id(msg.get("tool_call_id")),
            "content": inner or EMPTY_PLACEHOLDER}


def split_system(messages: list[dict]) -> tuple[str, list[dict]]:
    """The system text (every system/developer message, joined) and the other messages."""
    system = [content_text(m.get("content")) for m in messages
              if m.get("role") in ("system", "developer")]
    rest = [m for m in messages if m.get("role") not in ("system", "developer")]
    return "\n\n".join(s for s in system if s), rest


Where = list[Optional[tuple[int, int]]]
Converter = Callable[[list[dict], Optional[ThinkingLookup]], tuple[list[dict], Where]]


def convert_messages(messages: list[dict], thinking: Optional[ThinkingLookup] = None
                     ) -> tuple[list[dict], Where]:
    """Alternating Messages API turns, and for each source message where its last block went
    (``(turn, block)``; None when it produced none), so breakpoints can follow the source."""
    turns: list[dict] = []
    where: Where = []
    extend_turns(turns, where, messages, thinking)
    return finish_turns(turns, where)


def extend_turns(turns: list[dict], where: Where, messages: list[dict],
                 thinking: Optional[ThinkingLookup] = None) -> None:
    """Convert ``messages`` onto the end of ``turns``/``where`` (a converted history's tail is
    converted alone: ``history_cache``). It may append to ``turns[-1]["content"]``, so a caller
    that keeps the turns copies the last one first."""
    for msg in messages:
        role, content = msg.get("role"), msg.get("content")
        if type(content) is str and role != "tool" and not msg.get("tool_calls"):
            # the common message, plain text: every request converts the whole history, so it
            # skips the general path's calls and lists (fewer objects, less garbage collection)
            side = "assistant" if role == "assistant" else "user"
            if not content:
                where.append(None)
                continue
            block = {"type": "text", "text": content}
            if turns and turns[-1]["role"] == side:
                turns[-1]["content"].append(block)
            else:
                turns.append({"role": side, "content": [block]})
            where.append((len(turns) - 1, len(turns[-1]["content"]) - 1))
            continue
        if role == "assistant":
            side, blocks = "assistant", assistant_blocks(msg, thinking)
        elif role == "tool":
            side, blocks = "user", [tool_result_block(msg)]
        else:
            side, blocks = "user", content_blocks(msg.get("content"))
        if not blocks:
            where.append(None)
            continue
        if turns and turns[-1]["role"] == side:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": side, "content": blocks})
        where.append((len(turns) - 1, len(turns[-1]["content"]) - 1))


def finish_turns(turns: list[dict], where: Where) -> tuple[list[dict], Where]:
    """The turns as the API takes them: starting with a user turn, never empty. New lists when
    something is added: the given ones may be a cache's."""
    if turns and turns[0]["role"] != "user":
        lead = {"role": "user", "content": [{"type": "text", "text": CONTINUE_PLACEHOLDER}]}
        return [lead, *turns], [(w[0] + 1, w[1]) if w else None for w in where]
    if not turns:
        return [{"role": "user", "content": [{"type": "text", "text": EMPTY_PLACEHOLDER}]}], where
    return turns, where


def _mark(turns: list[dict], spot: Optional[tuple[int, int]]) -> None:
    if spot is None:
        return
    index = spot[1]
    blocks = turns[spot[0]]["content"]
    while index >= 0 and blocks[index].get("type") in ("thinking", "redacted_thinking"):
        index -= 1  # thinking blocks cannot carry a breakpoint
    if index >= 0:
        # the turn, its block list and the block are copied: the turns may be a cache's
        blocks = list(blocks)
        blocks[index] = {**blocks[index], "cache_control": CACHE}
        turns[spot[0]] = {**turns[spot[0]], "content": blocks}


def place_breakpoints(turns: list[dict], where: Where, source: list[dict]) -> None:
    """The compacted head's end and the last message (see the module docstring)."""
    head = last_compaction_index(source)
    if head >= 0:
        _mark(turns, next((w for w in reversed(where[:head + 1]) if w), None))
    _mark(turns, next((w for w in reversed(where) if w), None))


def ends_mid_tool_loop_without_thinking(turns: list[dict]) -> bool:
    """The last assistant turn called tools but carries no thinking block: with thinking on, the
    API would refuse it (the blocks of an earlier process are gone), so that request goes
    without."""
    last = next((t for t in reversed(turns) if t["role"] == "assistant"), None)
    if last is None:
        return False
    kinds = [b.get("type") for b in last["content"]]
    return "tool_use" in kinds and kinds[0] not in ("thinking", "redacted_thinking")


def build_request(messages: list[dict], *, model: str, max_tokens: int,
                  tools: Optional[list[dict]] = None, tool_choice: Any = None,
                  thinking_budget: Optional[int] = None, temperature: Optional[float] = None,
                  thinking: Optional[ThinkingLookup] = None, cache: bool = True,
                  converter: Optional[Converter] = None) -> dict:
    """The whole Messages API body for one OpenAI-shaped request. ``converter``: what turns the
    history into turns (default ``convert_messages``; the client passes ``history_cache``'s,
    which converts only what changed since the previous request)."""
    system, rest = split_system(messages)
    turns, where = (converter or convert_messages)(rest, thinking if thinking_budget else None)
    turns = list(turns)  # breakpoints replace a few of its turns; the cache's list stays as is
    if cache:
        place_breakpoints(turns, where, rest)
    body: dict[str, Any] = {"model": model, "max_tokens": int(max_tokens), "messages": turns}
    if system:
        block: dict[str, Any] = {"type": "text", "text": system}
        body["system"] = [{**block, "cache_control": CACHE} if cache else block]
    if tools:
        body["tools"] = [convert_tool(t) for t in tools]
        if cache and not system:
            body["tools"][-1] = {**body["tools"][-1], "cache_control": CACHE}
        choice = convert_tool_choice(tool_choice)
        if choice:
            body["tool_choice"] = choice
    forced = body.get("tool_choice", {}).get("type") in ("any", "tool")
    if thinking_budget and not forced and not ends_mid_tool_loop_without_thinking(turns):
        body["thinking"] = {"type": "enabled", "budget_tokens": int(thinking_budget)}
        body["max_tokens"] = max(body["max_tokens"], int(thinking_budget) + 1024)
    elif temperature is not None:
        body["temperature"] = temperature
    return body
