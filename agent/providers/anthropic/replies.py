"""Anthropic Messages API answers -> OpenAI chat-completion shapes. Pure.

A whole message becomes one ``chat.completion`` dict; a stream of events becomes
``chat.completion.chunk`` dicts, so ``agent.providers.openai_compat.parse_completion`` and
``consume_stream`` read both providers alike. Extended thinking becomes ``reasoning_content``
(as other providers send their reasoning); usage counts the prompt like OpenAI does (cached
tokens included in ``prompt_tokens``, ``prompt_tokens_details.cached_tokens`` the cache reads) and
keeps Anthropic's ``cache_read_input_tokens``/``cache_creation_input_tokens``.
"""
from __future__ import annotations

import json
from typing import Any, Optional

FINISH = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls",
          "max_tokens": "length", "pause_turn": "stop", "refusal": "content_filter"}
THINKING_KINDS = ("thinking", "redacted_thinking")


def attr(obj: Any, name: str, default: Any = None) -> Any:
    """A field of an SDK object or of a dict."""
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def plain(obj: Any) -> Any:
    """An SDK model as plain data (dicts stay as they are)."""
    if isinstance(obj, (dict, list, str, int, float, bool)) or obj is None:
        return obj
    dump = getattr(obj, "model_dump", None)
    return dump(exclude_none=True) if callable(dump) else dict(vars(obj))


def usage_of(usage: Any) -> dict:
    """Anthropic usage -> OpenAI usage (plus Anthropic's own cache fields)."""
    fresh = int(attr(usage, "input_tokens", 0) or 0)
    read = int(attr(usage, "cache_read_input_tokens", 0) or 0)
    written = int(attr(usage, "cache_creation_input_tokens", 0) or 0)
    out = int(attr(usage, "output_tokens", 0) or 0)
    prompt = fresh + read + written
    return {"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out,
            "prompt_tokens_details": {"cached_tokens": read},
            "cache_read_input_tokens": read, "cache_creation_input_tokens": written}


def thinking_blocks(blocks: list[Any]) -> list[dict]:
    """The thinking blocks of an answer, as they must be sent back (signature included)."""
    return [plain(b) for b in blocks if attr(b, "type") in THINKING_KINDS]


def completion(message: Any) -> dict:
    """A Messages API message -> an OpenAI ``chat.completion``."""
    texts, thoughts, calls = [], [], []
    for block in attr(message, "content") or []:
        kind = attr(block, "type")
        if kind == "text":
            texts.append(attr(block, "text") or "")
        elif kind == "thinking":
            thoughts.append(attr(block, "thinking") or "")
        elif kind == "tool_use":
            calls.append({"id": attr(block, "id"), "type": "function",
                          "function": {"name": attr(block, "name") or "",
                                       "arguments": json.dumps(plain(attr(block, "input")) or {})}})
    msg: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts else None}
    if thoughts:
        msg["reasoning_content"] = "".join(thoughts)
    if calls:
        msg["tool_calls"] = calls
    stop = attr(message, "stop_reason")
    return {"id": attr(message, "id"), "object": "chat.completion", "model": attr(message, "model"),
            "choices": [{"index": 0, "message": msg, "finish_reason": FINISH.get(stop, "stop")}],
            "usage": usage_of(attr(message, "usage"))}


class StreamTranslator:
    """Feed Messages API stream events in order; each ``feed`` returns the OpenAI chunks for it.
    ``thinking`` and ``tool_ids`` are what the answer's thinking blocks need to be sent back."""

    def __init__(self) -> None:
        self.model: Optional[str] = None
        self.usage: dict[str, Any] = {}
        self.stop: Optional[str] = None
        self.tool_ids: list[str] = []
        self.thinking: list[dict] = []
        self._kinds: dict[int, str] = {}
        self._calls: dict[int, int] = {}  # block index -> tool call index

    def _chunk(self, delta: dict, finish: Optional[str] = None) -> dict:
        return {"object": "chat.completion.chunk", "model": self.model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    def _merge_usage(self, usage: Any) -> None:
        for key in ("input_tokens", "output_tokens", "cache_read_input_tokens",
                    "cache_creation_input_tokens"):
            value = attr(usage, key)
            if isinstance(value, int):
                self.usage[key] = value

    def _start(self, index: int, block: Any) -> list[dict]:
        kind = attr(block, "type")
        self._kinds[index] = kind
        if kind in THINKING_KINDS:
            self.thinking.append(plain(block))
        if kind != "tool_use":
            text = attr(block, "text") if kind == "text" else None
            return [self._chunk({"content": text})] if text else []
        slot = self._calls[index] = len(self._calls)
        self.tool_ids.append(attr(block, "id"))
        return [self._chunk({"tool_calls": [{"index": slot, "id": attr(block, "id"),
                                             "type": "function",
                                             "function": {"name": attr(block, "name") or "",
                                                          "arguments": ""}}]})]

    def _delta(self, index: int, delta: Any) -> list[dict]:
        kind = attr(delta, "type")
        if kind == "text_delta":
            return [self._chunk({"content": attr(delta, "text") or ""})]
        if kind == "input_json_delta" and index in self._calls:
            piece = attr(delta, "partial_json") or ""
            return [self._chunk({"tool_calls": [{"index": self._calls[index],
                                                 "function": {"arguments": piece}}]})]
        if kind in ("thinking_delta", "signature_delta") and self.thinking:
            block = self.thinking[-1]
            field = "thinking" if kind == "thinking_delta" else "signature"
            block[field] = (block.get(field) or "") + (attr(delta, field) or "")
            if kind == "thinking_delta":
                return [self._chunk({"reasoning_content": attr(delta, "thinking") or ""})]
        return []

    def feed(self, event: Any) -> list[dict]:
        kind = attr(event, "type")
        if kind == "message_start":
            message = attr(event, "message")
            self.model = attr(message, "model")
            self._merge_usage(attr(message, "usage"))
            return [self._chunk({"role": "assistant"})]
        if kind == "content_block_start":
            return self._start(int(attr(event, "index", 0) or 0), attr(event, "content_block"))
        if kind == "content_block_delta":
            return self._delta(int(attr(event, "index", 0) or 0), attr(event, "delta"))
        if kind == "message_delta":
            self.stop = attr(attr(event, "delta"), "stop_reason") or self.stop
            self._merge_usage(attr(event, "usage"))
            return []
        if kind == "message_stop":
            return [self._chunk({}, FINISH.get(self.stop or "", "stop")),
                    {"object": "chat.completion.chunk", "model": self.model, "choices": [],
                     "usage": usage_of(self.usage)}]
        return []  # ping, content_block_stop
