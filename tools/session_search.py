"""The ``session_search`` tool (SPEC §11): find and read past conversations, no model call.

Four modes over the session store (the queries live on ``SessionDB``): a full-text ``query``;
``session_id`` alone (how a session began and ended); ``session_id`` + ``around_message_id`` (a
window); nothing (recent sessions). Output is plain text bounded to about 2,000 tokens and ends with
how to page further. Rows a compaction replaced are searchable and say so: that is how the agent
recovers a detail its summary dropped. A chat user (``ctx.owner``) reaches only their own
sessions; the CLI and the API key holder see every one.
"""
from __future__ import annotations

import time
from typing import Any, Optional

from tools.registry import ToolContext, ToolError, ToolSpec

MAX_CHARS = 8000  # ~2,000 tokens for the whole result
MSG_CHARS = 300  # per message shown in full text


def _when(ts: Optional[float]) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts)) if ts else "?"


def _text(content: Any) -> str:
    if isinstance(content, list):
        content = " ".join(str(p.get("text") or "") if isinstance(p, dict) else str(p)
                           for p in content)
    return " ".join(str(content or "").split())


def _state(row: dict, current: Optional[str]) -> str:
    if row.get("active"):
        return ""
    if row.get("compacted"):
        here = " of this session" if row.get("session_id") == current else ""
        return f" [compacted{here}: replaced by a summary, not in the live context]"
    return " [removed by /undo]"


def _line(row: dict, current: Optional[str], width: int = MSG_CHARS) -> str:
    body = _text(row.get("content"))
    if not body and row.get("tool_calls"):
        calls = [c for c in row["tool_calls"] if isinstance(c, dict)]
        names = ", ".join((c.get("function") or {}).get("name") or "?" for c in calls)
        body = "(called " + names + ")"
    if len(body) > width:
        body = body[: width - 1] + "…"
    who = row.get("role", "?") + (f":{row['tool_name']}" if row.get("tool_name") else "")
    return f"  [{row['id']} {who}]{_state(row, current)} {body}"


def _head(s: dict) -> str:
    title = f' "{s["title"]}"' if s.get("title") else ""
    return f"session {s.get('session_id') or s.get('id')}{title} · {s.get('source') or '?'} · " \
           f"{_when(s.get('started_at'))}"


class _Out:
    """Collects lines up to the budget; what does not fit is counted so the result can say so."""

    def __init__(self, budget: int = MAX_CHARS) -> None:
        self.lines: list[str] = []
        self.left = budget
        self.cut = False

    def add(self, line: str) -> bool:
        if len(line) + 1 > self.left:
            self.cut = True
            return False
        self.lines.append(line)
        self.left -= len(line) + 1
        return True

    def text(self, footer: str) -> str:
        return "\n".join(self.lines + ([footer] if footer else []))


def _search(db: Any, args: dict, ctx: ToolContext) -> str:
    query, limit, offset = args["query"], args["limit"], args["offset"]
    hits, more = db.search_sessions(query, limit=limit, offset=offset, sort=args["sort"],
                                    include_children=args["include_subagents"], owner=ctx.owner)
    if not hits:
        return (f"No {'more ' if offset else ''}sessions match {query!r}. "
                "Try fewer or other words, OR, or prefix*; "
                "include_subagents=true also searches subagent and cron runs.")
    out = _Out()
    out.add(f"Sessions matching {query!r} ({args['sort']} first), "
            f"{offset + 1}-{offset + len(hits)}:")
    shown = 0
    for n, hit in enumerate(hits, start=offset + 1):
        where = f"match in message {hit['message_id']}{_state(hit, ctx.session_id)}"
        if not out.add(f"{n}. {_head(hit)} · {where}"):
            break
        shown += 1
        out.add(f"  match: {' '.join((hit.get('snippet') or '').split())}")
        window = db.messages_around(hit["session_id"], hit["message_id"], before=1, after=1)
        for row in window:
            width = MSG_CHARS if row["id"] == hit["message_id"] else 160
            out.add(_line(row, ctx.session_id, width=width))
    tips = []
    if more or shown < len(hits):
        tips.append(f"more: offset={offset + shown}")
    tips.append("read one: session_id + around_message_id")
    return out.text("(" + "; ".join(tips) + ")")


def _visible(db: Any, sid: str, ctx: ToolContext) -> dict:
    """The session's row, if the caller may read it: a chat user (``ctx.owner``) only their own;
    anyone else's reads exactly like a session that does not exist."""
    meta = db.get_session(sid)
    if meta is None or (ctx.owner is not None and meta.get("owner") != ctx.owner):
        raise ToolError(f"session_search: no session {sid!r}; call with no arguments to list "
                        "recent ones")
    return meta


def _window(db: Any, args: dict, ctx: ToolContext) -> str:
    sid, mid = args["session_id"], args["around_message_id"]
    _visible(db, sid, ctx)
    rows = db.messages_around(sid, mid, before=4, after=5)
    if not any(r["id"] == mid for r in rows):
        raise ToolError(f"session_search: session {sid} has no message {mid}; "
                        "search first to get ids")
    out = _Out()
    out.add(f"session {sid}, messages around {mid}:")
    last = mid
    for row in rows:
        if not out.add(_line(row, ctx.session_id, width=1200 if row["id"] == mid else 600)):
            break
        last = row["id"]
    return out.text(f"(earlier: around_message_id={rows[0]['id']}; "
                    f"later: around_message_id={last})")


def _session(db: Any, args: dict, ctx: ToolContext) -> str:
    sid = args["session_id"]
    meta = _visible(db, sid, ctx)
    first, last, total = db.session_head_tail(sid, head=4, tail=4)
    out = _Out()
    out.add(f"{_head(dict(meta, session_id=sid))} · {total} messages")
    for row in first:
        out.add(_line(row, ctx.session_id))
    if last:
        if last[0]["id"] > first[-1]["id"] + 1:
            out.add(f"  … {total - len(first) - len(last)} messages …")
        for row in last:
            out.add(_line(row, ctx.session_id))
    return out.text("(read more: around_message_id=<id> with this session_id)")


def _recent(db: Any, args: dict, ctx: ToolContext) -> str:
    rows, more = db.recent_sessions(limit=args["limit"], offset=args["offset"],
                                    include_children=args["include_subagents"], owner=ctx.owner)
    if not rows:
        return "No sessions yet." if not args["offset"] else "No more sessions."
    out = _Out()
    out.add("Recent sessions (newest first):")
    for r in rows:
        mark = " (this session)" if r["id"] == ctx.session_id else ""
        preview = _text(r.get("preview"))[:100]
        out.add(f"- {_head(r)} · {r.get('message_count') or 0} msgs{mark}: {preview}")
    return out.text(f"(more: offset={args['offset'] + len(rows)})" if more else "")


def session_search(args: dict, ctx: ToolContext) -> str:
    db = ctx.session_db
    if db is None:
        raise ToolError("session_search: the session store is unavailable (see `hermes doctor`)")
    query = (args.get("query") or "").strip()
    sid = (args.get("session_id") or "").strip()
    mid = args.get("around_message_id")
    limit = args.get("limit")
    limit = (3 if query else 5) if limit is None else limit
    if not 1 <= limit <= 10:
        raise ToolError("session_search: limit must be 1-10")
    if args.get("offset", 0) < 0:
        raise ToolError("session_search: offset must be 0 or more")
    norm = {"query": query, "limit": limit, "offset": args.get("offset", 0),
            "sort": args.get("sort", "newest"),
            "include_subagents": bool(args.get("include_subagents")),
            "session_id": sid, "around_message_id": mid}
    if mid is not None and not sid:
        raise ToolError("session_search: around_message_id needs the session_id it belongs to")
    if query:
        return _search(db, norm, ctx)
    if sid and mid is not None:
        return _window(db, norm, ctx)
    if sid:
        return _session(db, norm, ctx)
    return _recent(db, norm, ctx)


def register(ctx: Any) -> None:
    """The plugin entry point (pyproject.toml, group hermes_agent.plugins)."""
    ctx.register_tool(ToolSpec(
        "session_search",
        "Search and read past conversations (full text; no model call). "
        "query: words (all must match), OR, \"a phrase\", prefix*. "
        "session_id alone: how it began and ended; "
        "with around_message_id: the messages around it. "
        "No arguments: recent sessions. Finds messages a context summary replaced.",
        {"type": "object", "properties": {
            "query": {"type": "string"},
            "session_id": {"type": "string"},
            "around_message_id": {"type": "integer"},
            "limit": {"type": "integer", "description": "Sessions to return, 1-10 (default 3)."},
            "offset": {"type": "integer", "description": "Skip this many (paging)."},
            "sort": {"type": "string", "enum": ["newest", "oldest", "relevance"]},
            "include_subagents": {"type": "boolean",
                                  "description": "Also subagent and cron sessions."},
        }},
        session_search, "session_search",
    ))
