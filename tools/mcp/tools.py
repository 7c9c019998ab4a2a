"""MCP tools -> registry tools: names, schemas, results (SPEC §14).

A server's tool `t` becomes `mcp__<server>__<t>` in toolset `mcp-<server>`, its name squeezed into
the charset providers accept for function names (`[A-Za-z0-9_-]`, at most 64). Two tools whose
names meet after that are reported and the second one is skipped; a schema that is not JSON
Schema is repaired where the fix is obvious, otherwise the tool is skipped with one clear line.
Everything here but `register_server_tools` is pure and works on plain dicts.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, Callable, Optional

from tools.registry import ToolContext, ToolError, ToolSpec, get_toolset, register, unregister

MAX_NAME = 64
MAX_DESCRIPTION = 1024
_BAD_CHARS = re.compile(r"[^A-Za-z0-9_-]")


def sanitize(part: str) -> str:
    """A name part in the provider's function-name charset."""
    return _BAD_CHARS.sub("_", part.strip()) or "_"


def tool_name(server: str, tool: str) -> str:
    """`mcp__<server>__<tool>`, valid as an OpenAI function name; long names keep a hash suffix."""
    name = f"mcp__{sanitize(server)}__{sanitize(tool)}"
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha1(f"{server}\0{tool}".encode()).hexdigest()[:8]
    return f"{name[:MAX_NAME - 9]}_{digest}"


def toolset_name(server: str) -> str:
    return f"mcp-{sanitize(server)}"


def check_schema(schema: Any) -> tuple[Optional[dict], Optional[str]]:
    """(schema to offer, note). The schema is None when the tool cannot be offered; the note
    says what was wrong (and, with a schema, what was repaired)."""
    if schema is None:
        return {"type": "object", "properties": {}}, None
    if not isinstance(schema, dict):
        return None, f"its input schema is a {type(schema).__name__}, not a JSON object"
    fixed = dict(schema)
    notes = []
    if "type" not in fixed:
        fixed["type"] = "object"
        notes.append("added the missing `type: object`")
    elif fixed["type"] != "object":
        return None, (f"its input schema has type {fixed['type']!r}; "
                      "tool arguments must be an object")
    if not isinstance(fixed.get("properties", {}), dict):
        return None, "its input schema's `properties` is not a mapping"
    fixed.setdefault("properties", {})
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for

    try:
        validator_for(fixed).check_schema(fixed)
    except SchemaError as exc:
        where = ".".join(str(p) for p in exc.absolute_path) or "(root)"
        return None, f"its input schema is not valid JSON Schema (at {where}: {exc.message[:120]})"
    return fixed, ("; ".join(notes) or None)


def _part_text(part: dict) -> str:
    kind = part.get("type")
    if kind == "text":
        return str(part.get("text") or "")
    if kind in ("image", "audio"):
        size = len(part.get("data") or "") * 3 // 4
        return (f"[{kind}: {part.get('mimeType') or part.get('mime_type') or '?'}, "
                f"{size:,} bytes not shown]")
    if kind == "resource_link":
        return (f"[resource: {part.get('uri')}"
                + (f" ({part['name']})" if part.get("name") else "") + "]")
    if kind == "resource":
        res = part.get("resource") or {}
        if "text" in res:
            return str(res.get("text") or "")
        size = len(res.get("blob") or "") * 3 // 4
        return (f"[resource {res.get('uri')}: {res.get('mimeType') or '?'}, "
                f"{size:,} bytes not shown]")
    return f"[{kind} content not shown]"


def result_text(result: dict) -> str:
    """The text a model reads for a CallToolResult (as a JSON dict): text parts, then the structured
    content unless the text already is exactly that JSON (servers often send both)."""
    text = "\n".join(t for t in (_part_text(p) for p in result.get("content") or []) if t)
    structured = result.get("structuredContent", result.get("structured_content"))
    if structured is not None and not _same(text, structured):
        dumped = json.dumps(structured, ensure_ascii=False)
        text = f"{text}\n{dumped}" if text else dumped
    return text


def _same(text: str, structured: Any) -> bool:
    """The structured content says nothing the text does not (servers often send the JSON twice,
    or wrap a plain return value as {"result": value})."""
    try:
        parsed: Any = json.loads(text)
    except ValueError:
        parsed = text
    if parsed == structured:
        return True
    if isinstance(structured, dict) and len(structured) == 1:
        (only,) = structured.values()
        return only == parsed or only == text
    return False


def is_error(result: dict) -> bool:
    return bool(result.get("isError", result.get("is_error")))


@dataclass
class Registration:
    """What registering one server's tools did: names registered, lines for the user."""

    names: dict[str, str]  # registry name -> the server's own tool name
    problems: list[str]


def plan_tools(server: str, tools: list[dict], include: tuple[str, ...], exclude: tuple[str, ...],
               taken: Callable[[str], bool]) -> tuple[list[tuple[str, dict]], list[str]]:
    """Which of a server's listed tools (`{name, description, inputSchema}` dicts) to register,
    under which name: [(registry name, tool with its checked schema)], and one line per tool
    left out. `taken(name)` says a registry name already belongs to someone else."""
    from tools.mcp.config import tool_selected

    chosen: list[tuple[str, dict]] = []
    problems: list[str] = []
    by_name: dict[str, str] = {}
    # a tool already spelled in the safe charset keeps its name when another one collides with it
    ordered = sorted(tools, key=lambda t: sanitize(str(t.get("name"))) != str(t.get("name")))
    for tool in ordered:
        raw = str(tool.get("name") or "")
        if not raw or not tool_selected(raw, include, exclude):
            continue
        name = tool_name(server, raw)
        if name in by_name:
            problems.append(f"MCP server {server}: tools {by_name[name]!r} and {raw!r} both become "
                            f"{name}; {raw!r} is left out (rename one on the server)")
            continue
        if taken(name):
            problems.append(f"MCP server {server}: tool {raw!r} would be {name}, which another "
                            "server's tool already uses; "
                            "it is left out (rename a server in config.yaml)")
            continue
        schema, note = check_schema(tool.get("inputSchema", tool.get("input_schema")))
        if schema is None:
            problems.append(f"MCP server {server}: tool {raw!r} is left out: {note}")
            continue
        if note:
            problems.append(f"MCP server {server}: tool {raw!r}: {note}")
        by_name[name] = raw
        desc = " ".join(str(tool.get("description") or tool.get("title") or raw).split())
        if len(desc) > MAX_DESCRIPTION:
            desc = desc[:MAX_DESCRIPTION - 1] + "…"
        read_only = isinstance(tool.get("annotations"), dict) and \
            tool["annotations"].get("readOnlyHint") is True
        chosen.append((name, {"name": raw, "description": desc, "inputSchema": schema,
                              "readOnly": read_only}))
    order = {str(t.get("name")): i for i, t in enumerate(tools)}
    chosen.sort(key=lambda c: order.get(c[1]["name"], 0))  # the server's own order
    return chosen, problems


Caller = Callable[[str, dict, ToolContext], dict]  # (server's tool name, args, ctx) -> result dict


def register_server_tools(server: str, tools: list[dict], include: tuple[str, ...],
                          exclude: tuple[str, ...], call: Caller, previous: dict[str, str],
                          redact: Callable[[str], str] = str) -> Registration:
    """Register a server's tools in the registry, replacing what it had registered before
    (`previous`); `call` runs a tool on the server and returns the result as a dict."""
    toolset = toolset_name(server)

    def taken(name: str) -> bool:
        owner = get_toolset(name)
        return owner is not None and owner != toolset

    chosen, problems = plan_tools(server, tools, include, exclude, taken)
    names: dict[str, str] = {}
    for name, tool in chosen:
        register(ToolSpec(name=name, description=tool["description"],
                          parameters=tool["inputSchema"],
                          handler=_handler(tool["name"], call, redact), toolset=toolset,
                          mutating=not tool["readOnly"]))  # acts outside Hermes unless it says not
        names[name] = tool["name"]
    for gone in set(previous) - set(names):
        unregister(gone)
    return Registration(names, problems)


def _handler(raw: str, call: Caller,
             redact: Callable[[str], str]) -> Callable[[dict, ToolContext], str]:
    def run(args: dict, ctx: ToolContext) -> str:
        result = call(raw, args, ctx)
        text = redact(result_text(result))
        if is_error(result):
            raise ToolError(text or "the tool reported an error without a message")
        return text or "(no output)"

    return run
