"""File tools: read_file, write_file, patch (here) and search_files (``tools.file_search``); path
rules and approvals in ``tools.file_access``."""
from __future__ import annotations

from typing import Any

from tools.context import ToolContext, ToolError
from tools.file_access import (display, guard, is_binary, missing_hint, resolve_path,
                               with_note)
from tools.file_io import open_text as _open_text
from tools.file_io import write_text as _write_text
from tools.file_search import search_files
from tools.registry import ToolSpec

MAX_LINE_CHARS = 2000
MAX_READ_LIMIT = 2000


# --- read_file -------------------------------------------------------------------------------


def read_file(args: dict, ctx: ToolContext) -> str:
    """Numbered lines, paged, so the model can cite and patch precisely without flooding context."""
    full, note = resolve_path(ctx, args["path"])
    offset = max(int(args.get("offset") or 1), 1)
    limit = min(max(int(args.get("limit") or 500), 1), MAX_READ_LIMIT)
    if not full.exists():
        raise ToolError(missing_hint(full))
    if full.is_dir():
        raise ToolError(f"{full} is a directory; use search_files with target='files' to list it")
    guard("read_file", full, ctx, write=False)
    if is_binary(full):
        raise ToolError(f"{full} looks like a binary file (NUL bytes); read_file only shows text")
    shown: list[str] = []
    budget = ctx.max_output_chars
    total = 0
    stopped_for_size = False
    try:
        with _open_text(ctx, full, None) as fh:
            for total, line in enumerate(fh, start=1):
                if total < offset or len(shown) >= limit or stopped_for_size:
                    continue
                line = line.rstrip("\n")
                if len(line) > MAX_LINE_CHARS:
                    line = f"{line[:MAX_LINE_CHARS]}... [line truncated, {len(line):,} chars]"
                entry = f"{total:>5}|{line}"
                budget -= len(entry) + 1
                if budget < 0 and shown:
                    stopped_for_size = True
                    continue
                shown.append(entry)
    except UnicodeDecodeError as exc:
        raise ToolError(f"{full} is not UTF-8 text ({exc.reason} at byte {exc.start}); "
                        "read_file only shows text") from None
    if total == 0:
        return with_note(f"({display(ctx, full)} is empty)", note)
    if offset > total:
        return with_note(f"{display(ctx, full)} has only {total} lines; "
                         f"offset {offset} is past the end", note)
    last = offset + len(shown) - 1
    body = "\n".join(shown)
    if last < total:
        body += (f"\n[showing lines {offset}-{last} of {total}; {total - last} more — "
                 f"call read_file with offset={last + 1} to continue]")
    return with_note(body, note)


# --- write_file ------------------------------------------------------------------------------


def write_file(args: dict, ctx: ToolContext) -> str:
    """Whole-file write (creating parent dirs); patch is the tool for edits."""
    full, note = resolve_path(ctx, args["path"])
    content = args["content"]
    if full.is_dir():
        raise ToolError(f"{full} is a directory")
    guard("write_file", full, ctx, write=True, content=content)
    full.parent.mkdir(parents=True, exist_ok=True)
    data = content.encode("utf-8")
    existed = full.exists()
    _write_text(ctx, full, content)
    verb = "overwrote" if existed else "created"
    return with_note(f"{verb} {display(ctx, full)}: wrote {len(data):,} bytes", note)


# --- patch -----------------------------------------------------------------------------------


def _closest_line(text: str, old: str) -> str:
    import difflib

    first = next((ln.strip() for ln in old.splitlines() if ln.strip()), "")
    if not first:
        return ""
    lines = text.splitlines()
    stripped = [ln.strip() for ln in lines]
    best = difflib.get_close_matches(first, stripped, n=1, cutoff=0.6)
    if not best:
        return ""
    idx = stripped.index(best[0])
    return f"; closest match is line {idx + 1}: {lines[idx].strip()[:200]!r}"


def patch(args: dict, ctx: ToolContext) -> str:
    """Exact find-and-replace: unambiguous edits, with a diff so the change is reviewable."""
    import difflib

    full, note = resolve_path(ctx, args["path"])
    old, new = args["old_string"], args["new_string"]
    replace_all = bool(args.get("replace_all", False))
    if not full.is_file():
        raise ToolError(missing_hint(full) if not full.exists()
                        else f"{full} is not a regular file")
    if old == "":
        raise ToolError("old_string is empty; use write_file to create or overwrite a whole file")
    if old == new:
        raise ToolError("old_string and new_string are identical; nothing to change")
    if is_binary(full):
        raise ToolError(f"{full} looks like a binary file; patch only edits text")
    guard("patch", full, ctx, write=True, content=new)
    try:
        with _open_text(ctx, full, "") as fh:
            text = fh.read()
    except UnicodeDecodeError:
        raise ToolError(f"{full} is not UTF-8 text; patch only edits text") from None
    count = text.count(old)
    if count == 0 and "\r\n" in text and "\n" in old and "\r\n" not in old:
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")  # CRLF file, LF edit
        count = text.count(old)
    if count == 0:
        raise ToolError(f"old_string not found in {display(ctx, full)}{_closest_line(text, old)}; "
                        "re-read the file and copy the text exactly (whitespace included)")
    if count > 1 and not replace_all:
        raise ToolError(f"old_string matches {count} places in {display(ctx, full)}; "
                        "add surrounding context to make it unique, or set replace_all=true")
    updated = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    _write_text(ctx, full, updated)
    name = display(ctx, full)
    diff = "".join(difflib.unified_diff(
        text.splitlines(keepends=True), updated.splitlines(keepends=True),
        fromfile=f"a/{name}", tofile=f"b/{name}",
    ))
    if diff and not diff.endswith("\n"):
        diff += "\n"
    summary = (f"replaced {count if replace_all else 1} "
               f"occurrence{'s' if replace_all and count > 1 else ''} in {name}")
    return with_note(f"{summary}\n{diff}".rstrip("\n"), note)


_PATH = {"type": "string",
         "description": "File path, absolute or relative to the working directory."}


def register(ctx: Any) -> None:
    """The plugin entry point (pyproject.toml, group hermes_agent.plugins)."""
    from tools.backends.files_route import routed  # terminal.backend; checkpoints before writes

    ctx.register_tool(ToolSpec(
        "read_file",
        "Read a text file as numbered lines ('   12|text'). "
        "Pages with offset/limit; refuses binaries.",
        {"type": "object", "properties": {
            "path": _PATH,
            "offset": {"type": "integer", "description": "First line to show, 1-based. Default 1."},
            "limit": {"type": "integer",
                      "description": f"Max lines to show. Default 500, max {MAX_READ_LIMIT}."},
        }, "required": ["path"]},
        routed("read_file", read_file), "file",
    ))
    ctx.register_tool(ToolSpec(
        "write_file",
        "Create or overwrite a whole file with the given content (parent directories are created). "
        "Prefer patch for edits to existing files.",
        {"type": "object", "properties": {
            "path": _PATH,
            "content": {"type": "string", "description": "The complete new file content."},
        }, "required": ["path", "content"]},
        routed("write_file", write_file), "file", mutating=True,
    ))
    ctx.register_tool(ToolSpec(
        "patch",
        "Edit a file by replacing old_string with new_string. old_string must match exactly once "
        "(include surrounding lines to make it unique) unless replace_all is true. Returns a diff.",
        {"type": "object", "properties": {
            "path": _PATH,
            "old_string": {"type": "string",
                           "description": "Exact text to replace, whitespace included."},
            "new_string": {"type": "string", "description": "Replacement text."},
            "replace_all": {"type": "boolean",
                            "description": "Replace every occurrence. Default false."},
        }, "required": ["path", "old_string", "new_string"]},
        routed("patch", patch), "file", mutating=True,
    ))
    ctx.register_tool(ToolSpec(
        "search_files",
        "Search file contents with a regex (results as 'file:line: text'), or with target='files' "
        "find files whose names match a glob. Skips .git, node_modules, .venv and binary files.",
        {"type": "object", "properties": {
            "pattern": {"type": "string", "description": "Regex for content search; "
                                                         "glob (or substring) for target='files'."},
            "path": {"type": "string",
                     "description": "Directory or file to search. Default: the working directory."},
            "target": {"type": "string", "enum": ["content", "files"],
                       "description": "What to search. Default 'content'."},
            "glob": {"type": "string",
                     "description": "Only search files matching this glob, e.g. '*.py'."},
            "max_results": {"type": "integer",
                            "description": "Stop after this many results. Default 100."},
            "ignore_case": {"type": "boolean",
                            "description": "Case-insensitive content search. Default false."},
        }, "required": ["pattern"]},
        routed("search_files", search_files), "file",
    ))
