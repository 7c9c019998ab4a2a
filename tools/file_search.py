"""``search_files``: contents by regex (ripgrep when installed, else Python) or names by glob,
skipping VCS and dependency folders, binaries and huge files; bounded results."""
from __future__ import annotations

import os
import re
from pathlib import Path

from tools.context import ToolContext, ToolError
from tools.file_access import (display, guard, is_binary, missing_hint, protected_reason,
                               resolve_path, with_note)

MAX_SEARCH_FILE_BYTES = 5_000_000
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__",
                       ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox"})


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


def _search_names(root: Path, pattern: str, max_results: int,
                  ctx: ToolContext) -> tuple[list[str], bool]:
    if not any(c in pattern for c in "*?["):
        pattern = f"*{pattern}*"  # a bare word means "name contains"
    hits: list[str] = []
    for full in _walk(root, ctx):
        if _glob_match(full, root, pattern):
            if len(hits) >= max_results:
                return hits, True
            hits.append(display(ctx, full))
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
            if full.is_symlink() or full.stat().st_size > MAX_SEARCH_FILE_BYTES or is_binary(full):
                continue
            with open(full, encoding="utf-8", errors="strict") as fh:
                lines = fh.read().splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        shown = display(ctx, full)
        for no, line in enumerate(lines, start=1):
            if rx.search(line):
                if len(hits) >= max_results:
                    return hits, True
                hits.append(f"{shown}:{no}: {line.strip()[:300]}")
    return hits, False


def _search_content_rg(rg: str, root: Path, pattern: str, glob: str | None, max_results: int,
                       ignore_case: bool, ctx: ToolContext,
                       hidden: _Protected) -> tuple[list[str], bool] | None:
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
        proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                              timeout=ctx.timeout)
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
        hits.append(f"{display(ctx, Path(m.group(1)))}:{m.group(2)}: {m.group(3).strip()}")
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
        raise ToolError(missing_hint(root))
    if target == "files":
        hits, more = _search_names(root, pattern, max_results, ctx)
        what = "files"
    else:
        try:
            rx = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
        except re.error as exc:
            raise ToolError(f"invalid regex {pattern!r}: {exc}") from None
        guard("search_files", root, ctx, write=False)  # searching inside ~/.ssh asks first
        hidden = _Protected(enabled=protected_reason(root) is None)
        rg = shutil.which("rg")
        found = (_search_content_rg(rg, root, pattern, glob, max_results, ignore_case, ctx, hidden)
                 if rg else None)
        if found is None:
            found = _search_content_python(root, rx, glob, max_results, ctx, hidden)
        hits, more = found
        what = "matches"
        if hidden.skipped:
            skipped = (f"(skipped {len(hidden.skipped)} file(s) holding secrets or private keys; "
                       "read_file asks the user for those)")
            note = "\n".join(n for n in (note, skipped) if n)
    if not hits:
        return with_note(f"no {what} for {pattern!r} in {display(ctx, root) or '.'}", note)
    body = "\n".join(hits)
    if more:
        body += (f"\n[stopped at {max_results} {what}; "
                 "narrow the pattern, path or glob to see the rest]")
    return with_note(body, note)


# --- registration ----------------------------------------------------------------------------
