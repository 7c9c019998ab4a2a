"""Responses API objects and their streaming events, built from what a turn reports (pure, no I/O).

Text the agent streams goes into ``message`` output items; each tool it runs is a ``function_call``
item (added when the tool starts, done when it ends, with a short ``output`` summary: Hermes ran the
tool itself, the client only watches). The stream opens with ``response.created`` and
``response.in_progress`` and ends with ``response.completed``, ``response.incomplete`` or
``response.failed`` carrying the whole response object, as ``GET /v1/responses/{id}`` returns it.
"""
from __future__ import annotations

import json
import secrets
import time
from typing import Any, Optional

Event = tuple[str, dict[str, Any]]


def _id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(12)}"


class ResponseBuilder:
    def __init__(self, *, model: str, previous: Optional[str], conversation: Optional[str],
                 instructions: Optional[str], metadata: Optional[dict[str, Any]],
                 store: bool) -> None:
        self.id = f"resp_{secrets.token_hex(16)}"
        self.base = {"id": self.id, "object": "response", "created_at": int(time.time()),
                     "model": model, "previous_response_id": previous,
                     "conversation": {"id": conversation} if conversation else None,
                     "instructions": instructions, "metadata": metadata or {}, "store": store,
                     "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
                     "text": {"format": {"type": "text"}}}
        self.output: list[dict[str, Any]] = []
        self.seq = 0
        self._message: Optional[dict[str, Any]] = None  # the message item text is streaming into
        self._calls: dict[str, int] = {}  # tool call id -> output index

    # -- events -------------------------------------------------------------------------------
    def _event(self, type_: str, **fields: Any) -> Event:
        data = {"type": type_, "sequence_number": self.seq, **fields}
        self.seq += 1
        return type_, data

    def snapshot(self, status: str, **extra: Any) -> dict[str, Any]:
        return {**self.base, "status": status, "output": json.loads(json.dumps(self.output)),
                "usage": None, "error": None, "incomplete_details": None, **extra}

    def start(self) -> list[Event]:
        return [self._event("response.created", response=self.snapshot("in_progress")),
                self._event("response.in_progress", response=self.snapshot("in_progress"))]

    def delta(self, text: str) -> list[Event]:
        events: list[Event] = []
        if self._message is None:
            item = {"type": "message", "id": _id("msg"), "status": "in_progress",
                    "role": "assistant", "content": []}
            self.output.append(item)
            self._message = item
            events.append(self._event("response.output_item.added",
                                      output_index=len(self.output) - 1,
                                      item=json.loads(json.dumps(item))))
            part = {"type": "output_text", "text": "", "annotations": []}
            item["content"].append(part)
            events.append(self._event("response.content_part.added", item_id=item["id"],
                                      output_index=len(self.output) - 1, content_index=0,
                                      part=dict(part)))
        item = self._message
        item["content"][0]["text"] += text
        events.append(self._event("response.output_text.delta", item_id=item["id"],
                                  output_index=self.output.index(item), content_index=0, delta=text,
                                  logprobs=[]))
        return events

    def _close_message(self) -> list[Event]:
        item, self._message = self._message, None
        if item is None:
            return []
        index, part = self.output.index(item), item["content"][0]
        item["status"] = "completed"
        return [self._event("response.output_text.done", item_id=item["id"], output_index=index,
                            content_index=0, text=part["text"], logprobs=[]),
                self._event("response.content_part.done", item_id=item["id"], output_index=index,
                            content_index=0, part=dict(part)),
                self._event("response.output_item.done", output_index=index,
                            item=json.loads(json.dumps(item)))]

    def tool(self, event: dict[str, Any]) -> list[Event]:
        """A ``tool_start`` / ``tool_end`` event of the agent's ``tool_progress_callback``."""
        call_id = str(event.get("id") or _id("call"))
        if event.get("type") == "tool_start":
            events = self._close_message()
            args = json.dumps(event.get("args") or {})
            item = {"type": "function_call", "id": _id("fc"), "call_id": call_id,
                    "name": str(event.get("name") or ""), "arguments": args,
                    "status": "in_progress"}
            self.output.append(item)
            index = self._calls[call_id] = len(self.output) - 1
            events.append(self._event("response.output_item.added", output_index=index,
                                      item={**item, "arguments": ""}))
            events.append(self._event("response.function_call_arguments.delta", item_id=item["id"],
                                      output_index=index, delta=args))
            events.append(self._event("response.function_call_arguments.done", item_id=item["id"],
                                      output_index=index, arguments=args))
            return events
        index = self._calls.get(call_id)
        if index is None:
            return []
        item = self.output[index]
        item.update(status="completed", output=str(event.get("summary") or ""))
        return [self._event("response.output_item.done", output_index=index, item=dict(item))]

    def finish(self, text: str, status: str, usage: dict[str, int],
               error: Optional[dict[str, Any]] = None,
               hermes: Optional[dict[str, Any]] = None) -> tuple[dict[str, Any], list[Event]]:
        """The final response object and the events that close the stream. ``text`` is the turn's
        answer: whatever of it was not streamed yet is added first."""
        events: list[Event] = []
        streamed = self._message["content"][0]["text"] if self._message else ""
        if text and not streamed.endswith(text):
            events += self.delta(("\n\n" if streamed else "") + text)
        events += self._close_message()
        extra: dict[str, Any] = {"usage": usage, "error": error}
        if status == "incomplete":
            extra["incomplete_details"] = {
                "reason": (hermes or {}).get("error_code") or "incomplete"}
        if hermes is not None:
            extra["hermes"] = hermes
        final = self.snapshot(status, **extra)
        events.append(self._event(f"response.{status}", response=final))
        return final, events
