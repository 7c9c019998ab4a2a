"""The memory files on disk: ``HERMES_HOME/memories/MEMORY.md`` and ``USER.md`` (SPEC §8).

Every change re-reads the files under one lock file and replaces them atomically (temp file +
rename), so two processes adding at once both keep their entry. A file that is not UTF-8 text, or
that a rewrite would not reproduce (see ``memory_format.problem``), is never overwritten: the write
is refused, the file is copied aside, and the error names the copy.
"""
from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path
from typing import Any, ContextManager, Optional

from hermes_core.files import atomic_write
from tools.memory import format as fmt
from hermes_core.locks import dir_lock

FILES = {"memory": "MEMORY.md", "user": "USER.md"}
DEFAULT_LIMITS = {"memory": 2200, "user": 1375}
LOCK_TIMEOUT = 15.0


class MemoryStoreError(Exception):
    """A memory file cannot be read or written; the message names the file and what to do."""


def memory_dir(home: Path) -> Path:
    return Path(home) / "memories"


def owner_home(home: Path, owner: Optional[str], cfg: Any = None) -> Path:
    """Where ``owner``'s memory files are (their ``memories/`` folder is inside): HERMES_HOME for
    the local owner, and for every chat user when ``gateway.shared_memory: true``; else a folder
    of that chat user's own, ``HERMES_HOME/users/<platform>-<user id>/``, so one chat user's turns
    never read or write another's notes (nor the owner's)."""
    shared = getattr(getattr(cfg, "gateway", None), "shared_memory", False) is True
    if owner is None or shared:
        return Path(home)
    return Path(home) / "users" / re.sub(r"[^A-Za-z0-9_.-]", "_", owner.replace(":", "-", 1))


def file_path(home: Path, target: str) -> Path:
    if target not in FILES:
        raise MemoryStoreError(f"unknown memory target {target!r}; use 'memory' or 'user'")
    return memory_dir(home) / FILES[target]


def limits(cfg: Any = None) -> dict[str, int]:
    """Character budgets from config (``memory.memory_char_limit``, ``memory.user_char_limit``)."""
    section = getattr(cfg, "memory", None)
    return {"memory": int(getattr(section, "memory_char_limit", DEFAULT_LIMITS["memory"])),
            "user": int(getattr(section, "user_char_limit", DEFAULT_LIMITS["user"]))}


def enabled_targets(cfg: Any = None) -> tuple[str, ...]:
    """The stores config leaves on (Hermes' ``memory_enabled`` / ``user_profile_enabled``)."""
    section = getattr(cfg, "memory", None)
    on = {"memory": getattr(section, "memory_enabled", True),
          "user": getattr(section, "user_profile_enabled", True)}
    return tuple(t for t in FILES if on[t] is not False)


def locked(home: Path, timeout: float = LOCK_TIMEOUT) -> ContextManager[None]:
    """Hold the memory directory's lock file (one writer across processes and threads)."""
    return dir_lock(memory_dir(home), timeout, MemoryStoreError)


class NotText(MemoryStoreError):
    """The file's bytes are not UTF-8 text; ``reason`` says where."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.reason = reason


def read_text(path: Path) -> Optional[str]:
    """The file's text (None when it does not exist); raises NotText unless it is UTF-8 text."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise MemoryStoreError(f"cannot read {path}: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise NotText(path, f"it is not UTF-8 text (line {line}, byte {exc.start})") from None
    trouble = fmt.problem(text)
    if trouble and "control bytes" in trouble:
        raise NotText(path, trouble)
    return text


def load(home: Path, target: str) -> list[str]:
    """One store's entries for reading (a ``§`` the parser does not split on stays in an entry)."""
    return fmt.parse(read_text(file_path(home, target)) or "")


def backup(path: Path) -> Path:
    """Copy ``path`` aside (once per distinct content) and return the copy's path."""
    data = path.read_bytes()
    for old in sorted(path.parent.glob(path.name + ".unparsed-*")):
        try:
            if old.read_bytes() == data:
                return old
        except OSError:
            continue
    dest = path.with_name(f"{path.name}.unparsed-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}")
    shutil.copy2(path, dest)
    return dest


def _load_for_write(home: Path, target: str) -> list[str]:
    path = file_path(home, target)
    try:
        text = read_text(path)
        trouble = fmt.problem(text) if text is not None else None
    except NotText as exc:
        text, trouble = None, exc.reason
    if trouble:
        copy = backup(path)
        raise MemoryStoreError(
            f"{path.name} was not changed: {trouble}. A copy is at {copy}. "
            f"Fix the file (entries are separated by a line holding only §) "
            f"with `hermes memory edit {target}`, then retry.")
    return fmt.parse(text or "")


def write(home: Path, target: str, entries: list[str]) -> None:
    """Replace one store's file atomically (call under ``locked``)."""
    path = file_path(home, target)
    data = fmt.serialise(entries)
    try:
        atomic_write(path, data + ("\n" if data else ""))
    except OSError as exc:
        raise MemoryStoreError(f"cannot write {path}: {exc.strerror}") from None


def apply_edits(home: Path, edits: list[fmt.Edit], budgets: dict[str, int]) -> list[str]:
    """Apply every edit or none (under the lock, on freshly read files); one note per edit.

    Raises MemoryEditError for a refused edit and MemoryStoreError for a file that cannot be used;
    in both cases nothing on disk changed.
    """
    with locked(home):
        before: dict[str, list[str]] = {}
        current: dict[str, list[str]] = {}
        notes = []
        for edit in edits:
            if edit.target not in current:
                before[edit.target] = current[edit.target] = _load_for_write(home, edit.target)
            current[edit.target], note = fmt.apply(current[edit.target], edit, budgets[edit.target],
                                                   FILES[edit.target])
            notes.append(note)
        for target, entries in current.items():
            if entries != before[target]:
                write(home, target, entries)
        return notes


def snapshot(home: Path, cfg: Any = None) -> tuple[str, list[str]]:
    """(the memory part of the system prompt, warnings for the user) as of now."""
    files: dict[str, list[str]] = {}
    warnings = []
    for target in enabled_targets(cfg):
        try:
            files[target] = load(home, target)
        except MemoryStoreError as exc:
            warnings.append(f"{exc}; it was left out of this session's prompt "
                            f"(`hermes memory edit {target}` to fix it).")
    return fmt.render_snapshot(files, limits(cfg)), warnings
