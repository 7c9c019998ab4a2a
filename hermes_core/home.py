"""HERMES_HOME kept private: the folder 0700, secrets, the session store and logs 0600.

Everything under HERMES_HOME is personal (transcripts, keys, memories), so whoever creates a piece
of it goes through these helpers: a new folder or file is private from its first byte (no window
where a umask leaves it readable), and an existing one is tightened (one an older version made).
``loose_permissions`` lists what is still readable by others, for ``hermes doctor``.
"""
from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Optional

from hermes_core.files import atomic_write
from hermes_core.config import env_path, hermes_home

DIR_MODE, FILE_MODE = 0o700, 0o600
STORE_SUFFIXES = ("", "-wal", "-shm")


def ensure_private_dir(path: Path, tighten_existing: bool = True) -> Path:
    """Create ``path`` (and missing parents) 0700; an existing folder loses group/other access
    unless ``tighten_existing`` is False (a folder that is not ours to judge)."""
    path = Path(path)
    if not path.is_dir():
        path.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
        tighten(path)
    elif tighten_existing:
        tighten(path)
    return path


def ensure_home() -> Path:
    """HERMES_HOME, created or tightened to 0700."""
    return ensure_private_dir(hermes_home())


def tighten(path: Path) -> bool:
    """Drop the group/other permission bits of an existing file or folder; True when it changed."""
    try:
        current = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return False
    if not current & 0o077:
        return False
    try:
        os.chmod(path, current & 0o700)
    except OSError:
        return False
    return True


def create_private_file(path: Path) -> Path:
    """Make sure ``path`` exists with mode 0600 (created that way, or tightened)."""
    path = Path(path)
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
    except FileExistsError:
        tighten(path)
    return path


def tighten_store(db_path: Path) -> None:
    """The session store and its WAL/SHM companions, 0600 (SQLite gives them the file's mode)."""
    for suffix in STORE_SUFFIXES:
        tighten(Path(f"{db_path}{suffix}"))


def _quote_env(value: str) -> str:
    if re.fullmatch(r"[A-Za-z0-9_./:@+=,-]*", value):
        return value
    if "'" not in value:
        return f"'{value}'"
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def write_env_var(name: str, value: str, path: Optional[Path] = None) -> Path:
    """Set NAME=value in .env (replacing an earlier line, keeping every other line), mode 600 from
    the first byte, and in this process's environment."""
    p = Path(path or env_path())
    ensure_private_dir(p.parent)  # the folder of the secrets (HERMES_HOME) is private too
    lines = p.read_text(encoding="utf-8").splitlines() if p.is_file() else []
    line = f"{name}={_quote_env(value)}"
    pat = re.compile(rf"^\s*(export\s+)?{re.escape(name)}\s*=")
    replaced = False
    for i, old in enumerate(lines):
        if pat.match(old):
            lines[i] = line
            replaced = True
    if not replaced:
        lines.append(line)
    atomic_write(p, "\n".join(lines) + "\n", FILE_MODE)
    os.environ[name] = value
    return p


def loose_permissions(home: Optional[Path] = None) -> list[tuple[Path, int, int]]:
    """``(path, mode, wanted)`` for every private item of HERMES_HOME readable by others."""
    home = Path(home or hermes_home())
    items: list[tuple[Path, int]] = [(home, DIR_MODE), (home / ".env", FILE_MODE)]
    items += [(Path(f"{home / 'state.db'}{s}"), FILE_MODE) for s in STORE_SUFFIXES]
    logs = home / "logs"
    items.append((logs, DIR_MODE))
    if logs.is_dir():
        items += [(p, FILE_MODE) for p in sorted(logs.iterdir()) if p.is_file()]
    out = []
    for path, wanted in items:
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
        except OSError:
            continue
        if mode & 0o077:
            out.append((path, mode, wanted))
    return out
