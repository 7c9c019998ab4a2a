"""Versions of a skill: before every write its folder is copied to
``skills/.history/<name>/<n>/`` (``skill/`` + ``meta.json``), so any write, a delete included, can
be undone with ``hermes skills revert NAME [N]``. A version taken before a create is "absent":
reverting to it removes the skill. Callers hold the store's lock.
"""
from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

HISTORY_DIR = ".history"
KEEP = 20  # versions kept per skill; the oldest go first


@dataclass(frozen=True)
class Version:
    number: int
    time: float
    action: str  # the write that followed this state (create, patch, edit, delete, revert, ...)
    by: str  # agent, review or cli
    folder: Optional[str]  # where the skill lived, relative to the skills root; None = absent
    path: Path  # this version's directory

    @property
    def files_dir(self) -> Path:
        return self.path / "skill"

    @property
    def absent(self) -> bool:
        return self.folder is None

    def to_dict(self) -> dict:
        return {"version": self.number, "time": self.time, "action": self.action, "by": self.by,
                "folder": self.folder}


def history_dir(root: Path, name: str) -> Path:
    return root / HISTORY_DIR / name


def versions(root: Path, name: str) -> list[Version]:
    """Saved versions, oldest first; unreadable ones are skipped."""
    base = history_dir(root, name)
    out = []
    try:
        entries = [p for p in base.iterdir() if p.name.isdigit()]
    except OSError:
        return []
    for p in entries:
        try:
            meta = json.loads((p / "meta.json").read_text(encoding="utf-8"))
            out.append(Version(int(p.name), float(meta.get("time", 0)),
                               str(meta.get("action", "?")), str(meta.get("by", "?")),
                               meta.get("folder"), p))
        except (OSError, ValueError, TypeError):
            continue
    return sorted(out, key=lambda v: v.number)


def save(root: Path, name: str, folder: Optional[Path], action: str, by: str) -> Version:
    """Keep the skill's current state (``folder`` None: it does not exist yet) before ``action``."""
    base = history_dir(root, name)
    base.mkdir(parents=True, exist_ok=True)
    existing = versions(root, name)
    number = (existing[-1].number if existing else 0) + 1
    tmp = base / f".tmp-{os.getpid()}-{number}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        rel = None
        if folder is not None:
            shutil.copytree(folder, tmp / "skill", symlinks=True)
            rel = folder.relative_to(root).as_posix()
        meta = {"time": time.time(), "action": action, "by": by, "folder": rel}
        (tmp / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
        os.rename(tmp, base / str(number))
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    for old in existing[: max(0, len(existing) + 1 - KEEP)]:
        shutil.rmtree(old.path, ignore_errors=True)
    return versions(root, name)[-1]


def find(root: Path, name: str, number: Optional[int]) -> Optional[Version]:
    """Version ``number``, or the latest when None."""
    all_versions = versions(root, name)
    if number is None:
        return all_versions[-1] if all_versions else None
    return next((v for v in all_versions if v.number == number), None)
