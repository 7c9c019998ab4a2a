"""What Hermes' events look like in the Agent Client Protocol, and back (pure, no I/O).

- A prompt's content blocks -> the user message: text as is, a resource link as a line naming
  it (the agent reads it with its tools), an embedded text resource inlined with its URI, an
  image as an OpenAI ``image_url`` part (so the message becomes a list of parts).
- A tool event -> a tool call update: ``kind`` from the tool (read, edit, search, execute, ...),
  a title naming what it acts on, ``locations`` for the files it touches.
- The ``todo`` tool's list -> a plan; a turn's result -> the stop reason.
- A permission answer (the option the editor picked) -> Hermes' once / always / deny.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional, Union

from acp import schema

KINDS = {"read_file": "read", "write_file": "edit", "patch": "edit", "search_files": "search",
         "session_search": "search", "terminal": "execute", "todo": "think",
         "skills_list": "read", "skill_view": "read", "web_search": "search",
         "web_extract": "fetch", "browser_navigate": "fetch"}
TITLE_ARGS = ("command", "path", "query", "name", "url", "goal")
OPTIONS = (("allow_once", "Allow once", "allow_once"),
           ("allow_always", "Allow for this session", "allow_always"),
           ("reject_once", "Deny", "reject_once"))
CHOICE_OF = {"allow_once": "once", "allow_always": "always", "reject_once": "deny"}
PLAN_STATUS = {"pending": "pending", "in_progress": "in_progress", "completed": "completed"}

Message = Union[str, list[dict[str, Any]]]


def prompt_message(blocks: list[Any]) -> Message:
    """The user message for a ``session/prompt`` (a string unless an image is attached)."""
    texts: list[str] = []
    images: list[dict[str, Any]] = []
    for block in blocks:
        kind = getattr(block, "type", None)
        if kind == "text":
            texts.append(block.text)
        elif kind == "resource_link":
            label = block.title or block.name
            texts.append(f"[{label}]({block.uri})")
        elif kind == "resource":
            res = block.resource
            body = getattr(res, "text", None)
            if body is None:
                texts.append(f"[attached binary resource {res.uri}]")
            else:
                texts.append(f'<resource uri="{res.uri}">\n{body}\n</resource>')
        elif kind == "image":
            url = block.uri if block.uri and not block.data else \
                f"data:{block.mime_type};base64,{block.data}"
            images.append({"type": "image_url", "image_url": {"url": url}})
        elif kind == "audio":
            texts.append("[an audio clip was attached; this agent cannot hear it]")
    text = "\n\n".join(t for t in texts if t)
    if not images:
        return text
    return ([{"type": "text", "text": text}] if text else []) + images


def message_text(content: Any) -> str:
    """Stored message content (text, or a list of parts) as text for a replayed update."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def _text(value: str) -> schema.TextContentBlock:
    return schema.TextContentBlock(type="text", text=value)


def message_chunk(value: str) -> schema.AgentMessageChunk:
    return schema.AgentMessageChunk(session_update="agent_message_chunk", content=_text(value))


def thought_chunk(value: str) -> schema.AgentThoughtChunk:
    return schema.AgentThoughtChunk(session_update="agent_thought_chunk", content=_text(value))


def user_chunk(value: str) -> schema.UserMessageChunk:
    return schema.UserMessageChunk(session_update="user_message_chunk", content=_text(value))


def tool_kind(name: str) -> str:
    if name.startswith("mcp__"):
        return "other"
    return KINDS.get(name, "other")


def tool_title(name: str, args: Any) -> str:
    if isinstance(args, dict):
        for key in TITLE_ARGS:
            value = args.get(key)
            if isinstance(value, str) and value.strip():
                one = " ".join(value.split())
                return f"{name}: {one[:117] + '…' if len(one) > 120 else one}"
    return name


def tool_locations(args: Any, cwd: Path) -> Optional[list[schema.ToolCallLocation]]:
    if not isinstance(args, dict) or not isinstance(args.get("path"), str) or not args["path"]:
        return None
    path = Path(args["path"]).expanduser()
    return [schema.ToolCallLocation(path=str(path if path.is_absolute() else cwd / path))]


def parse_args(raw: Any) -> Any:
    """Tool arguments as stored (a JSON string in tool_calls) -> a value."""
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def tool_start(call_id: str, name: str, args: Any, cwd: Path,
               status: str = "in_progress") -> schema.ToolCallStart:
    return schema.ToolCallStart(session_update="tool_call", tool_call_id=call_id,
                                title=tool_title(name, args), kind=tool_kind(name), status=status,
                                locations=tool_locations(args, cwd), raw_input=args)


def tool_end(call_id: str, ok: bool, summary: str) -> schema.ToolCallProgress:
    content = [schema.ContentToolCallContent(type="content", content=schema.TextContentBlock(
        type="text", text=summary))] if summary else None
    return schema.ToolCallProgress(session_update="tool_call_update", tool_call_id=call_id,
                                   status="completed" if ok else "failed", content=content)


def plan(todos: list[dict[str, Any]]) -> schema.AgentPlanUpdate:
    entries = [schema.PlanEntry(content=str(t.get("content") or ""), priority="medium",
                                status=PLAN_STATUS[t["status"]])  # type: ignore[arg-type]
               for t in todos if t.get("status") in PLAN_STATUS and t.get("content")]
    return schema.AgentPlanUpdate(session_update="plan", entries=entries)


def permission_options() -> list[schema.PermissionOption]:
    return [schema.PermissionOption(option_id=oid, name=label, kind=kind)  # type: ignore[arg-type]
            for oid, label, kind in OPTIONS]


def choice_of(response: Any) -> str:
    """The editor's answer -> once / always / deny (a cancelled request is a deny)."""
    outcome = getattr(response, "outcome", None)
    if getattr(outcome, "outcome", None) != "selected":
        return "deny"
    return CHOICE_OF.get(getattr(outcome, "option_id", ""), "deny")


def stop_reason(result: dict[str, Any], cancelled: bool) -> str:
    if cancelled or result.get("interrupted"):
        return "cancelled"
    if result.get("completed") is False and not result.get("failed") and not result.get("partial"):
        return "max_turn_requests"
    return "end_turn"
