"""Context files (SPEC §9): the persona (SOUL.md), the global AGENTS.md, and one kind of project
file.

Project context, first kind found wins: ``.hermes.md``/``HERMES.md`` (from the working directory up
to the git root), then ``AGENTS.md``, then ``CLAUDE.md``, then ``.cursorrules`` +
``.cursor/rules/*.mdc``. Each file is capped (head and tail kept, a marker naming the file to read
for the rest) and scanned line by line: only offending lines are held back, each replaced by a
marker, and the caller tells the user once which file and line.
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from hermes_core.injection import scan_lines

HEAD_SHARE = 0.75  # of the cap kept from the start of a long file; the rest from its end
_CHUNK = 1 << 20


@dataclass
class ContextFile:
    path: Path
    label: str  # how the prompt names it
    text: str  # capped, offending lines replaced
    held_back: list[tuple[int, str]] = field(default_factory=list)  # (line, reason)
    truncated: bool = False


def _parents(path: str) -> list[str]:
    """``path`` and each directory above it, nearest first (strings: a gateway builds a prompt
    for every new session, and pathlib's objects cost more than the stat calls)."""
    out = [path.rstrip(os.sep) or os.sep]
    while (up := os.path.dirname(out[-1])) not in (out[-1], ""):
        out.append(up)
    return out


def git_root(start: Path) -> Optional[Path]:
    """The nearest directory at or above ``start`` holding ``.git``, or None."""
    for d in _parents(os.fspath(start)):
        if os.path.exists(os.path.join(d, ".git")):
            return Path(d)
    return None


def project_files(cwd: Path) -> list[Path]:
    """The project's context files, first kind found wins (see module docstring)."""
    here = os.fspath(cwd)
    root = git_root(cwd)
    dirs = [here]
    if root is not None:
        above = _parents(here)[1:]
        top = os.fspath(root)
        if top in above:
            dirs += above[:above.index(top) + 1]
    for names in ([os.path.join(d, n) for d in dirs for n in (".hermes.md", "HERMES.md")],
                  [os.path.join(here, n) for n in ("AGENTS.md", "CLAUDE.md")]):
        for name in names:
            if os.path.isfile(name):
                return [Path(name)]
    cursor = [cwd / ".cursorrules"] if os.path.isfile(os.path.join(here, ".cursorrules")) else []
    rules = cwd / ".cursor" / "rules"
    if rules.is_dir():
        cursor += sorted(p for p in rules.glob("*.mdc") if p.is_file())
    return cursor


def quarantine(text: str, first_line: int = 1) -> tuple[str, list[tuple[int, str]]]:
    """``text`` with each offending line replaced by a marker; (line number, reason) of each."""
    found = [(n + first_line - 1, why) for n, why in scan_lines(text)]
    if not found:
        return text, []
    lines = text.split("\n")
    for n, why in found:
        lines[n - first_line] = f"[line {n} held back by Hermes: it looks like {why}]"
    return "\n".join(lines), found


def _count_newlines(path: Path, upto: int) -> int:
    n = 0
    with path.open("rb") as fh:
        while upto > 0:
            chunk = fh.read(min(_CHUNK, upto))
            if not chunk:
                break
            n += chunk.count(b"\n")
            upto -= len(chunk)
    return n


def load_file(path: Path, max_chars: int, label: str) -> Optional[ContextFile]:
    """One context file, capped and screened; None when missing, unreadable or empty.

    A huge file is never read whole: only the bytes of its head and tail are (a 5 MB AGENTS.md
    costs two small reads and a newline count).
    """
    head_n = int(max_chars * HEAD_SHARE)
    tail_n = max_chars - head_n
    try:
        size = path.stat().st_size
        if size <= max_chars * 4:
            text = path.read_text(encoding="utf-8", errors="replace")
            if not text.strip():
                return None
            if len(text) <= max_chars:
                body, held = quarantine(text)
                return ContextFile(path, label, body.strip(), held)
            head_text, tail_text = text[:head_n], text[-tail_n:]
            tail_first = text.count("\n", 0, len(text) - tail_n) + 1
        else:
            with path.open("rb") as fh:
                head_text = fh.read(head_n * 4).decode("utf-8", errors="ignore")[:head_n]
                fh.seek(max(0, size - tail_n * 4))
                tail_text = fh.read().decode("utf-8", errors="ignore")[-tail_n:]
            tail_first = _count_newlines(path, size - len(tail_text.encode("utf-8"))) + 1
    except OSError:
        return None
    head_text, held_head = quarantine(head_text)
    tail_text, held_tail = quarantine(tail_text, first_line=tail_first)
    marker = (f"\n\n[… middle of this {size:,}-byte file omitted; "
              f"read {path} for the rest …]\n\n")
    return ContextFile(path, label, (head_text + marker + tail_text).strip(), held_head + held_tail,
                       truncated=True)


def _label(path: Path, cwd: Path) -> str:
    try:
        return os.path.relpath(path, cwd) if cwd in path.parents else str(path)
    except ValueError:
        return str(path)


def load_context_files(cwd: Path, home: Path, max_chars: int) -> list[ContextFile]:
    """The global ``HERMES_HOME/AGENTS.md`` (if any), then the project's files."""
    out = []
    glob = load_file(home / "AGENTS.md", max_chars, "global instructions, HERMES_HOME/AGENTS.md")
    if glob:
        out.append(glob)
    for path in project_files(cwd):
        f = load_file(path, max_chars, _label(path, cwd))
        if f:
            out.append(f)
    return out


def load_soul(home: Path, max_chars: int) -> Optional[ContextFile]:
    return load_file(home / "SOUL.md", max_chars, "SOUL.md")


_told: set[tuple[str, int, str]] = set()
_told_lock = threading.Lock()


def held_back_notices(files: list[ContextFile]) -> list[str]:
    """One line per held-back line this process has not told the user about yet."""
    out = []
    with _told_lock:
        for f in files:
            for line, why in f.held_back:
                key = (str(f.path), line, why)
                if key not in _told:
                    _told.add(key)
                    out.append(f"{f.path} line {line} was held back from the prompt: it looks "
                               f"like {why}. Check that file if you did not write it.")
    return out
