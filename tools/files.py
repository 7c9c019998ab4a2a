"""File tools: read_file, write_file, patch, search_files.

Paths resolve against ctx.cwd. Paths outside it are allowed (the user may ask for them), but the
result always says so, so neither the model nor the user is surprised; a gateway session
(`ctx.confine_to`) refuses them. Secrets and key files need the user's approval to be read or
written (`tools.path_policy`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from tools.path_policy import (KEY_SNIFF_BYTES, is_private_key, outside_root, secret_reason,
                               system_write_reason)
from tools.file_io import open_text as _open_text
from tools.file_io import write_text as _write_text
from tools.registry import ToolContext, ToolError, ToolSpec

MAX_LINE_CHARS = 2000
MAX_READ_LIMIT = 2000
BINARY_SNIFF_BYTES = 8192
MAX_SEARCH_FILE_BYTES = 5_000_000
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__",
                       ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox"})


# --- path helpers ----------------------------------------------------------------------------


def resolve_path(ctx: ToolContext, path: str) -> tuple[Path, str]:
    """Absolute path for `path`, plus a note ("" when inside the working directory).

    With ``ctx.confine_to`` set (gateway sessions), a path outside it is a ToolError instead.
    """
    if not isinstance(path, str) or not path.strip():
        raise ToolError("'path' is empty")
    p = Path(path).expanduser()
    base = Path(ctx.cwd).resolve()
    full = (p if p.is_absolute() else base / p).resolve()
    if ctx.confine_to is not None:
        root = Path(ctx.confine_to).resolve()
        if outside_root(full, root):
            raise ToolError(f"{full} is outside the working directory {root}; file tools in this "
                            "session only reach files inside it")
    if full == base or base in full.parents:
        return full, ""
    return full, f"(note: {full} is outside the working directory {base})"


def _head(full: Path) -> bytes:
    try:
        with open(full, "rb") as fh:
            return fh.read(max(BINARY_SNIFF_BYTES, KEY_SNIFF_BYTES))
    except OSError:
        return b""


def protected_reason(full: Path, content: str | None = None) -> str | None:
    """Why `full` (resolved) or the text about to be written into it holds secrets, or None."""
    from hermes_core.config import hermes_home

    reason = secret_reason(full, Path.home().resolve(), hermes_home().resolve())
    if reason is None and full.is_file() and is_private_key(_head(full)):
        reason = f"{full.name} holds a private key"
    if reason is None and content is not None and is_private_key(content[:KEY_SNIFF_BYTES].encode()):
        reason = "the content is a private key"
    return reason


def _guard(tool: str, full: Path, ctx: ToolContext, write: bool, content: str | None = None) -> None:
    """Secrets (read or write) and system areas (write) need the user's approval; where no one
    can be asked (the gateway, a one-shot run without a terminal) they are refused."""
    reason = protected_reason(full, content)
    if reason is None and write:
        reason = system_write_reason(full, Path.home().resolve())
    if reason is None:
        return
    from tools.approval import ask

    if not ask(f"{tool} {full}", reason, ctx):
        raise ToolError(f"{tool} {full} denied: {reason}; only the user at the terminal can allow "
                        "it. Choose another path or ask the user")


def _display(ctx: ToolContext, full: Path) -> str:
    try:
        return str(full.relative_to(Path(ctx.cwd).resolve()))
    except ValueError:
        return str(full)


def _with_note(text: str, note: str) -> str:
    return f"{note}\n{text}" if note else text


def _missing_hint(full: Path) -> str:
    import difflib

    parent = full.parent
    if not parent.is_dir():
        ancestor = parent
        while not ancestor.is_dir() and ancestor != ancestor.parent:
            ancestor = ancestor.parent
        return f"file not found: {full} (directory {parent} does not exist either; nearest existing: {ancestor})"
    try:
        names = os.listdir(parent)
    except OSError:
        names = []
    close = difflib.get_close_matches(full.name, names, n=5, cutoff=0.5)
    hint = f"; similar names in {parent}: {', '.join(close)}" if close else ""
    return f"file not found: {full}{hint}"


def _is_binary(full: Path) -> bool:
    with open(full, "rb") as fh:
        return b"\x00" in fh.read(BINARY_SNIFF_BYTES)


# --- read_file -------------------------------------------------------------------------------


def read_file(args: dict, ctx: ToolContext) -> str:
    """Numbered lines, paged, so the model can cite and patch precisely without flooding context."""
    full, note = resolve_path(ctx, args["path"])
    offset = max(int(args.get("offset") or 1), 1)
    limit = min(max(int(args.get("limit") or 500), 1), MAX_READ_LIMIT)
    if not full.exists():
        raise ToolError(_missing_hint(full))
    if full.is_dir():
        raise ToolError(f"{full} is a directory; use search_files with target='files' to list it")
    _guard("read_file", full, ctx, write=False)
    if _is_binary(full):
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
        raise ToolError(f"{full} is not UTF-8 text ({exc.reason} at byte {exc.start}); read_file only shows text") from None
    if total == 0:
        return _with_note(f"({_display(ctx, full)} is empty)", note)
    if offset > total:
        return _with_note(f"{_display(ctx, full)} has only {total} lines; offset {offset} is past the end", note)
    last = offset + len(shown) - 1
    body = "\n".join(shown)
    if last < total:
        body += (f"\n[showing lines {offset}-{last} of {total}; {total - last} more — "
                 f"call read_file with offset={last + 1} to continue]")
    return _with_note(body, note)


# --- write_file ------------------------------------------------------------------------------


def write_file(args: dict, ctx: ToolContext) -> str:
    """Whole-file write (creating parent dirs); patch is the tool for edits."""
    full, note = resolve_path(ctx, args["path"])
    content = args["content"]
    if full.is_dir():
        raise ToolError(f"{full} is a directory")
    _guard("write_file", full, ctx, write=True, content=content)
    full.parent.mkdir(parents=True, exist_ok=True)
    data = content.encode("utf-8")
    existed = full.exists()
    _write_text(ctx, full, content)
    verb = "overwrote" if existed else "created"
    return _with_note(f"{verb} {_display(ctx, full)}: wrote {len(data):,} bytes", note)


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
        raise ToolError(_missing_hint(full) if not full.exists() else f"{full} is not a regular file")
    if old == "":
        raise ToolError("old_string is empty; use write_file to create or overwrite a whole file")
    if old == new:
        raise ToolError("old_string and new_string are identical; nothing to change")
    if _is_binary(full):
        raise ToolError(f"{full} looks like a binary file; patch only edits text")
    _guard("patch", full, ctx, write=True, content=new)
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
        raise ToolError(f"old_string not found in {_display(ctx, full)}{_closest_line(text, old)}; "
                        "re-read the file and copy the text exactly (whitespace included)")
    if count > 1 and not replace_all:
        raise ToolError(f"old_string matches {count} places in {_display(ctx, full)}; add surrounding "
                        "context to make it unique, or set replace_all=true")
    updated = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    _write_text(ctx, full, updated)
    name = _display(ctx, full)
    diff = "".join(difflib.unified_diff(
        text.splitlines(keepends=True), updated.splitlines(keepends=True),
        fromfile=f"a/{name}", tofile=f"b/{name}",
    ))
    if diff and not diff.endswith("\n"):
        diff += "\n"
    summary = f"replaced {count if replace_all else 1} occurrence{'s' if replace_all and count > 1 else ''} in {name}"
    return _with_note(f"{summary}\n{diff}".rstrip("\n"), note)


# --- search_files ----------------------------------------------------------------------------


def _walk(root: Path, ctx: ToolContext):
    """Files under root, skipping VCS/dependency dirs; stops early on interrupt."""
    if root.is_file():
        yield root
        return
    for dirpath, dirnames, filenames in os.walk(root):
        if ctx.interrupt_event is not None and ctx.interrupt_event.is_set():
            return
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in sorted(filenames):
            yield Path(dirpath) / name


def _glob_match(full: Path, root: Path, glob: str) -> bool:
    import fnmatch

    if "/" in glob:
        try:
            rel = full.relative_to(root).as_posix()
        except ValueError:
            rel = full.as_posix()
        return fnmatch.fnmatch(rel, glob) or fnmatch.fnmatch(rel, glob.lstrip("*/"))
    return fnmatch.fnmatch(full.name, glob)


def _search_names(root: Path, pattern: str, max_results: int, ctx: ToolContext) -> tuple[list[str], bool]:
    if not any(c in pattern for c in "*?["):
        pattern = f"*{pattern}*"  # a bare word means "name contains"
    hits: list[str] = []
    for full in _walk(root, ctx):
        if _glob_match(full, root, pattern):
            if len(hits) >= max_results:
                return hits, True
            hits.append(_display(ctx, full))
    return hits, False


class _Protected:
    """Content search skips secrets and key files (the user approved none of them); counts them."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.skipped: set[Path] = set()
        self._seen: dict[Path, bool] = {}

    def __call__(self, full: Path) -> bool:
        if not self.enabled:
            return False
        if full not in self._seen:
            self._seen[full] = protected_reason(full.resolve()) is not None
        if self._seen[full]:
            self.skipped.add(full)
        return self._seen[full]


def _search_content_python(root: Path, rx: re.Pattern[str], glob: str | None, max_results: int,
                           ctx: ToolContext, hidden: _Protected) -> tuple[list[str], bool]:
    hits: list[str] = []
    for full in _walk(root, ctx):
        if glob and not _glob_match(full, root, glob):
            continue
        if hidden(full):
            continue
        try:
            if full.is_symlink() or full.stat().st_size > MAX_SEARCH_FILE_BYTES or _is_binary(full):
                continue
            with open(full, encoding="utf-8", errors="strict") as fh:
                lines = fh.read().splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        shown = _display(ctx, full)
        for no, line in enumerate(lines, start=1):
            if rx.search(line):
                if len(hits) >= max_results:
                    return hits, True
                hits.append(f"{shown}:{no}: {line.strip()[:300]}")
    return hits, False


def _search_content_rg(rg: str, root: Path, pattern: str, glob: str | None, max_results: int,
                       ignore_case: bool, ctx: ToolContext, hidden: _Protected) -> tuple[list[str], bool] | None:
    """ripgrep, when installed; None means "fall back to Python" (e.g. a regex rg rejects)."""
    import subprocess

    cmd = [rg, "--line-number", "--no-heading", "--with-filename", "--color=never", "--hidden",
           "--max-columns=300", "--max-columns-preview", "--max-filesize=5M"]
    for d in SKIP_DIRS:
        cmd += ["-g", f"!{d}"]
    if glob:
        cmd += ["-g", glob]
    if ignore_case:
        cmd.append("-i")
    cmd += ["-e", pattern, "--", str(root)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=ctx.timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode not in (0, 1):
        return None
    hits: list[str] = []
    for raw in proc.stdout.splitlines():
        m = re.match(r"(.*?):(\d+):(.*)", raw)
        if not m or hidden(Path(m.group(1))):
            continue
        if len(hits) >= max_results:
            return hits, True
        hits.append(f"{_display(ctx, Path(m.group(1)))}:{m.group(2)}: {m.group(3).strip()}")
    return hits, False


def search_files(args: dict, ctx: ToolContext) -> str:
    """Find code by content (regex) or files by name, without dumping whole trees."""
    import shutil

    root, note = resolve_path(ctx, args.get("path") or ".")
    pattern: str = args["pattern"]
    target = args.get("target") or "content"
    glob = args.get("glob")
    max_results = max(int(args.get("max_results") or 100), 1)
    ignore_case = bool(args.get("ignore_case", False))
    if not root.exists():
        raise ToolError(_missing_hint(root))
    if target == "files":
        hits, more = _search_names(root, pattern, max_results, ctx)
        what = "files"
    else:
        try:
            rx = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
        except re.error as exc:
            raise ToolError(f"invalid regex {pattern!r}: {exc}") from None
        _guard("search_files", root, ctx, write=False)  # searching inside ~/.ssh asks first
        hidden = _Protected(enabled=protected_reason(root) is None)
        rg = shutil.which("rg")
        found = _search_content_rg(rg, root, pattern, glob, max_results, ignore_case, ctx, hidden) if rg else None
        if found is None:
            found = _search_content_python(root, rx, glob, max_results, ctx, hidden)
        hits, more = found
        what = "matches"
        if hidden.skipped:
            note = "\n".join(n for n in (note, f"(skipped {len(hidden.skipped)} file(s) holding secrets or "
                                                 "private keys; read_file asks the user for those)") if n)
    if not hits:
        return _with_note(f"no {what} for {pattern!r} in {_display(ctx, root) or '.'}", note)
    body = "\n".join(hits)
    if more:
        body += f"\n[stopped at {max_results} {what}; narrow the pattern, path or glob to see the rest]"
    return _with_note(body, note)


# --- registration ----------------------------------------------------------------------------

_PATH = {"type": "string", "description": "File path, absolute or relative to the working directory."}


def register(ctx: Any) -> None:
    """The plugin entry point (pyproject.toml, group hermes_agent.plugins)."""
    ctx.register_tool(ToolSpec(
        "read_file",
        "Read a text file as numbered lines ('   12|text'). Pages with offset/limit; refuses binaries.",
        {"type": "object", "properties": {
            "path": _PATH,
            "offset": {"type": "integer", "description": "First line to show, 1-based. Default 1."},
            "limit": {"type": "integer", "description": f"Max lines to show. Default 500, max {MAX_READ_LIMIT}."},
        }, "required": ["path"]},
        read_file, "file",
    ))
    ctx.register_tool(ToolSpec(
        "write_file",
        "Create or overwrite a whole file with the given content (parent directories are created). "
        "Prefer patch for edits to existing files.",
        {"type": "object", "properties": {
            "path": _PATH,
            "content": {"type": "string", "description": "The complete new file content."},
        }, "required": ["path", "content"]},
        write_file, "file", mutating=True,
    ))
    ctx.register_tool(ToolSpec(
        "patch",
        "Edit a file by replacing old_string with new_string. old_string must match exactly once "
        "(include surrounding lines to make it unique) unless replace_all is true. Returns a diff.",
        {"type": "object", "properties": {
            "path": _PATH,
            "old_string": {"type": "string", "description": "Exact text to replace, whitespace included."},
            "new_string": {"type": "string", "description": "Replacement text."},
            "replace_all": {"type": "boolean", "description": "Replace every occurrence. Default false."},
        }, "required": ["path", "old_string", "new_string"]},
        patch, "file", mutating=True,
    ))
    ctx.register_tool(ToolSpec(
        "search_files",
        "Search file contents with a regex (results as 'file:line: text'), or with target='files' "
        "find files whose names match a glob. Skips .git, node_modules, .venv and binary files.",
        {"type": "object", "properties": {
            "pattern": {"type": "string", "description": "Regex for content search; glob (or substring) for target='files'."},
            "path": {"type": "string", "description": "Directory or file to search. Default: the working directory."},
            "target": {"type": "string", "enum": ["content", "files"], "description": "What to search. Default 'content'."},
            "glob": {"type": "string", "description": "Only search files matching this glob, e.g. '*.py'."},
            "max_results": {"type": "integer", "description": "Stop after this many results. Default 100."},
            "ignore_case": {"type": "boolean", "description": "Case-insensitive content search. Default false."},
        }, "required": ["pattern"]},
        search_files, "file",
    ))
