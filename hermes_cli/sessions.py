"""`hermes sessions list|show|search|export|rename|delete|prune` over the session store.

Plain text on stdout (no rich) so the output pipes cleanly into grep, less or a file. Sessions are
named by id, unambiguous id prefix or title (SessionDB.resolve_session).
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional, TextIO


from hermes_core.messages import content_text as _content_text
from hermes_cli.agent_factory import CommandError, UsageError, open_db
from hermes_cli.confirm import check_can_ask as _check_can_ask
from hermes_cli.confirm import confirm as _confirm
from hermes_cli.parsing import positive_int


def fmt_time(ts: Optional[float]) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts)) if ts else "-"


def resolve(db: Any, ref: str) -> str:
    sid = db.resolve_session(ref)
    if not sid:
        raise CommandError(f"no session matches {ref!r}; "
                           "`hermes sessions list` shows ids and titles")
    return sid


def content_text(content: Any) -> str:
    """Message content as plain text; non-text parts show as placeholders."""
    return _content_text(content, placeholders=True)


def tool_calls_text(calls: Any) -> list[str]:
    out = []
    for tc in calls or []:
        fn = (tc or {}).get("function") or {} if isinstance(tc, dict) else {}
        out.append(f"{fn.get('name', '?')}({fn.get('arguments', '')})")
    return out


# what `sessions list --json` gives per session (the API's session objects carry the same fields);
# times are Unix seconds, as stored
LIST_FIELDS = ("id", "title", "source", "model", "parent_session_id", "started_at", "updated_at",
               "ended_at", "end_reason", "message_count", "prompt_tokens", "completion_tokens",
               "compactions", "preview")


def session_list_json(rows: list[dict]) -> str:
    """`sessions list --json`: a JSON array of session objects, newest first."""
    return json.dumps([{k: r.get(k) for k in LIST_FIELDS} for r in rows], indent=1,
                      ensure_ascii=False)


def session_list_lines(rows: list[dict]) -> list[str]:
    if not rows:
        return ["No sessions yet. Start one with `hermes`."]
    lines = [f"{'ID':<22} {'UPDATED':<16} {'SOURCE':<8} {'MSGS':>4}  TITLE / FIRST MESSAGE"]
    for r in rows:
        label = r.get("title") or r.get("preview") or ""
        lines.append(f"{r['id']:<22} {fmt_time(r.get('updated_at') or r.get('started_at')):<16} "
                     f"{(r.get('source') or '-'):<8} {r.get('message_count', 0):>4}  {label}")
    return lines


def children_lines(rows: list[dict]) -> list[str]:
    """The subagents a session delegated to, in task order (`sessions show ID --children`)."""
    if not rows:
        return ["No subagents: this session never delegated a task."]
    lines = [f"{'#':>2}  {'STATUS':<11} {'TIME':>7} {'CALLS':>5} {'TOKENS':>7}  "
             f"{'SESSION':<22}  GOAL"]
    for r in rows:
        dur = r.get("duration")
        tokens = (r.get("prompt_tokens") or 0) + (r.get("completion_tokens") or 0)
        goal = " ".join(str(r.get("goal") or "-").split())
        lines.append(f"{r.get('task_index') or '-':>2}  {r.get('status') or 'unfinished':<11} "
                     f"{f'{dur:.1f}s' if dur is not None else '-':>7} {r.get('api_calls') or 0:>5} "
                     f"{tokens:>7}  {r['session_id']:<22}  {goal[:60]}")
        if r.get("error") and r.get("status") != "completed":
            lines.append(f"{'':>4}{' '.join(str(r['error']).split())[:110]}")
    return lines


def to_markdown(session: dict, messages: list[dict]) -> str:
    title = session.get("title") or f"Session {session['id']}"
    out = [f"# {title}", "",
           f"- id: `{session['id']}`", f"- source: {session.get('source') or '-'}",
           f"- model: {session.get('model') or '-'}",
           f"- started: {fmt_time(session.get('started_at'))}", ""]
    for m in messages:
        role = m.get("role", "?")
        head = f"## {role}" + (f" ({m['tool_name']})" if m.get("tool_name") else "")
        if not m.get("active", 1):
            head += " — compacted"
        out.append(head)
        out.append("")
        text = content_text(m.get("content"))
        if text:
            out.append(text)
            out.append("")
        for call in tool_calls_text(m.get("tool_calls")):
            out.append(f"→ `{call}`")
            out.append("")
    return "\n".join(out).rstrip() + "\n"


MESSAGE_FIELDS = ("id", "role", "content", "tool_calls", "tool_call_id", "tool_name", "created_at",
                  "active", "compacted")


def message_record(session: dict, m: dict) -> dict:
    rec = {k: m.get(k) for k in MESSAGE_FIELDS if m.get(k) is not None}
    rec["session_id"] = session["id"]
    return rec


def to_jsonl(session: dict, messages: list[dict]) -> str:
    lines = [json.dumps(message_record(session, m), ensure_ascii=False) for m in messages]
    return "\n".join(lines) + ("\n" if lines else "")


def to_json(session: dict, messages: list[dict]) -> str:
    """One JSON object: the session (as `sessions list --json` gives it) and its messages."""
    return json.dumps({"session": {k: session.get(k) for k in LIST_FIELDS if k in session},
                       "messages": [message_record(session, m) for m in messages]},
                      indent=1, ensure_ascii=False) + "\n"


EXPORT_FORMATS = {"markdown": to_markdown, "jsonl": to_jsonl, "json": to_json}
_BY_SUFFIX = {".json": "json", ".jsonl": "jsonl", ".ndjson": "jsonl", ".md": "markdown",
              ".markdown": "markdown"}


def export_format(fmt: Optional[str], output: Optional[str]) -> str:
    """--format when given, else what the file name says (x.json, x.jsonl, x.md), else markdown."""
    if fmt:
        return fmt
    suffix = Path(output).suffix.lower() if output and output != "-" else ""
    return _BY_SUFFIX.get(suffix, "markdown")


# prune never takes a session used in the last hour (--force does)
PRUNE_KEEPS_ACTIVE_SECONDS = 3600


def removal_lines(rows: list[dict]) -> list[str]:
    """What a delete or prune will remove, one session a line."""
    return [f"  {r['id']:<22} last active {fmt_time(r.get('updated_at') or r.get('started_at'))}  "
            f"{(r.get('source') or '-'):<8} {r.get('message_count', 0):>4} msgs  "
            f"{r.get('title') or ''}".rstrip()
            for r in rows]


def _on_store(action: Callable[[Any, Any, TextIO], int]) -> Callable[..., int]:
    """A ``hermes sessions`` action as an argparse handler: the store is open around it."""
    def handler(args: Any, out: TextIO = sys.stdout) -> int:
        db = open_db()
        try:
            return action(db, args, out)
        finally:
            db.close()
    return handler


def _list(db: Any, args: Any, out: TextIO) -> int:
    rows = db.list_sessions(limit=getattr(args, "limit", 30), source=getattr(args, "source", None))
    if getattr(args, "json", False):
        out.write(session_list_json(rows) + "\n")
    else:
        out.write("\n".join(session_list_lines(rows)) + "\n")
    return 0


def _show(db: Any, args: Any, out: TextIO) -> int:
    sid = resolve(db, args.session)
    s = db.get_session(sid) or {"id": sid}
    if getattr(args, "json", False):
        if args.children:
            out.write(json.dumps(db.list_children(sid), indent=1, default=str) + "\n")
        else:
            out.write(to_json(s, db.get_messages(sid, include_inactive=args.all)))
        return 0
    out.write(f"{s.get('title') or '(untitled)'}  [{sid}]  {s.get('source') or '-'}  "
              f"model {s.get('model') or '-'}  started {fmt_time(s.get('started_at'))}\n\n")
    if getattr(args, "children", False):
        out.write("\n".join(children_lines(db.list_children(sid))) + "\n")
        return 0
    for m in db.get_messages(sid, include_inactive=args.all):
        tag = "" if m.get("active", 1) else " (compacted)"
        text = content_text(m.get("content")).strip()
        name = f"[{m['tool_name']}]" if m.get("tool_name") else ""
        out.write(f"{m.get('role')}{name}{tag}: {text}\n")
        for call in tool_calls_text(m.get("tool_calls")):
            out.write(f"    → {call}\n")
    return 0


def _search(db: Any, args: Any, out: TextIO) -> int:
    if not args.query.strip():
        raise UsageError("the search query is empty; give words to look for, e.g. "
                         "hermes sessions search 'deploy script'")
    hits = db.search_messages(args.query, limit=args.limit)
    if getattr(args, "json", False):
        out.write(json.dumps(hits, indent=1, ensure_ascii=False, default=str) + "\n")
        return 0
    if not hits:
        out.write(f"No messages match {args.query!r}.\n")
    for h in hits:
        label = h.get("session_title") or ""
        gone = "" if h.get("active", 1) else " (compacted)"
        out.write(f"{h['session_id']}  {label}  {h.get('role')}{gone}: "
                  f"{' '.join(str(h.get('snippet') or '').split())}\n")
    return 0


def _export(db: Any, args: Any, out: TextIO) -> int:
    sid = resolve(db, args.session)
    s = db.get_session(sid) or {"id": sid}
    msgs = db.get_messages(sid, include_inactive=True)
    fmt = export_format(args.format, args.output)
    text = EXPORT_FORMATS[fmt](s, msgs)
    if args.output and args.output != "-":
        Path(args.output).write_text(text, encoding="utf-8")
        sys.stderr.write(f"exported {len(msgs)} messages of {sid} to {args.output} ({fmt})\n")
    else:
        out.write(text)
    return 0


def _rename(db: Any, args: Any, out: TextIO) -> int:
    sid = resolve(db, args.session)
    try:
        db.set_session_title(sid, args.title)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    out.write(f"{sid} is now titled {args.title!r}\n")
    return 0


def _delete(db: Any, args: Any, out: TextIO) -> int:
    sid = resolve(db, args.session)
    _check_can_ask(args.yes, f"not deleting {sid}")
    if not args.yes:
        out.write("This deletes, with all its messages:\n")
        out.write("\n".join(removal_lines([db.get_session(sid) or {"id": sid}])) + "\n")
        if not _confirm("Delete it?", out):
            out.write("Nothing deleted.\n")
            return 0
    db.delete_session(sid)
    out.write(f"deleted {sid}\n")
    return 0


def _prune(db: Any, args: Any, out: TextIO) -> int:
    if args.older_than < 0:
        raise UsageError("--older-than takes a number of days (0 or more)")
    keep = 0.0 if args.force else PRUNE_KEEPS_ACTIVE_SECONDS
    idle = f"idle for more than {args.older_than:g} days"
    rows = db.prune_candidates(args.older_than, keep_active_within=keep)
    if not rows:
        kept = ("" if args.force
                else " (sessions active in the last hour are kept; --force includes them)")
        out.write(f"Nothing to prune: no session {idle}{kept}.\n")
        return 0
    plural = "s" if len(rows) != 1 else ""
    _check_can_ask(args.yes, f"not pruning {len(rows)} session{plural} {idle}")
    if not args.yes:
        out.write(f"This deletes {len(rows)} session{plural} {idle}, with all their messages:\n")
        out.write("\n".join(removal_lines(rows)) + "\n")
        if not _confirm(f"Delete {'them' if len(rows) > 1 else 'it'}?", out):
            out.write("Nothing deleted.\n")
            return 0
    n = db.prune_sessions(args.older_than, keep_active_within=keep, only=[r["id"] for r in rows])
    out.write(f"pruned {n} session{'s' if n != 1 else ''} {idle}\n")
    return 0


def add_parser(sub: Any) -> None:
    """`hermes sessions ...` subcommands."""
    p = sub.add_parser("sessions",
                       help="list, show, search, export, rename, delete or prune sessions")
    ss = p.add_subparsers(dest="sessions_action", metavar="ACTION")
    pl = ss.add_parser("list", help="recent sessions, newest first")
    pl.add_argument("--limit", type=positive_int, default=30, metavar="N")
    pl.add_argument("--source", help="only sessions from this surface (cli, telegram, api, ...)")
    pl.add_argument("--json", action="store_true", help="a JSON array of session objects")
    pl.set_defaults(func=_on_store(_list))
    ps = ss.add_parser("show", help="print a session's messages")
    ps.add_argument("session", metavar="ID", help="id, id prefix or title")
    ps.add_argument("--all", action="store_true", help="include compacted messages")
    ps.add_argument("--children", action="store_true",
                    help="list the subagents it delegated to instead of its messages")
    ps.add_argument("--json", action="store_true",
                    help="one JSON object: the session and its messages (--children: an array)")
    ps.set_defaults(func=_on_store(_show))
    pq = ss.add_parser("search", help="full-text search over every message")
    pq.add_argument("query", metavar="QUERY")
    pq.add_argument("--limit", type=positive_int, default=20, metavar="N")
    pq.add_argument("--json", action="store_true", help="a JSON array of matching messages")
    pq.set_defaults(func=_on_store(_search))
    pe = ss.add_parser("export", help="write a session as markdown or jsonl")
    pe.add_argument("session", metavar="ID")
    pe.add_argument("--format", choices=tuple(EXPORT_FORMATS),
                    help="markdown, jsonl or json (default: from the -o file name, else markdown)")
    pe.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    pe.set_defaults(func=_on_store(_export))
    pr = ss.add_parser("rename", help="set a session's title")
    pr.add_argument("session", metavar="ID")
    pr.add_argument("title", metavar="TITLE")
    pr.set_defaults(func=_on_store(_rename))
    pd = ss.add_parser("delete", help="delete a session and its messages")
    pd.add_argument("session", metavar="ID")
    pd.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    pd.set_defaults(func=_on_store(_delete))
    pp = ss.add_parser("prune", help="delete sessions idle for more than DAYS (asks first)")
    pp.add_argument("--older-than", type=float, required=True, metavar="DAYS")
    pp.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    pp.add_argument("--force", action="store_true", help="include sessions active in the last hour")
    pp.set_defaults(func=_on_store(_prune))
    p.set_defaults(sessions_action=None, func=_on_store(_list))  # bare `hermes sessions` lists
