"""When a checkpoint is taken: before the first change of each turn to the working directory.

The file tools call ``before_file_change`` before a write or patch of a file inside the working
directory, the terminal ``before_command`` before a command that runs in it (a shell command may
change anything, so its first one of the turn counts as a change). Once per turn and directory
(``ctx.turn``), off when ``checkpoints.enabled`` is false, for a context without a config (no
agent behind it), and for directories over the size limits. A checkpoint that fails never stops
the tool: the failure is logged and the turn goes on.
"""
from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any, Optional

log = logging.getLogger("hermes.checkpoints")
_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()
_too_large: dict[str, float] = {}  # directory -> when it was found too large (not re-listed)
RECHECK_SECONDS = 600


def repo_for(workdir: Path, config: Any) -> Any:
    """The shadow repository of ``workdir`` with the configured limits."""
    from hermes_core.config import hermes_home
    from tools.checkpoints.store import ShadowRepo

    cfg = getattr(config, "checkpoints", None)
    return ShadowRepo(hermes_home(), workdir, max_files=getattr(cfg, "max_files", 10_000),
                      max_bytes=getattr(cfg, "max_bytes", 200_000_000))


def _enabled(ctx: Any) -> bool:
    cfg = getattr(getattr(ctx, "config", None), "checkpoints", None)
    return bool(cfg is not None and cfg.enabled)


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def before_file_change(ctx: Any, path: Optional[str]) -> None:
    """A file tool is about to write ``path``: checkpoint the working dir if it is inside."""
    if not _enabled(ctx) or not isinstance(path, str) or not path.strip():
        return
    root = Path(ctx.cwd).resolve()
    p = Path(path).expanduser()
    full = (p if p.is_absolute() else root / p).resolve()
    if _inside(full, root):
        shown = full.relative_to(root) if full != root else "."
        _once(ctx, root, f"before a file change ({shown})")


def before_command(ctx: Any, cwd: Path) -> None:
    """A shell command is about to run in ``cwd``: checkpoint the working dir if it is inside."""
    if not _enabled(ctx):
        return
    root = Path(ctx.cwd).resolve()
    if _inside(Path(cwd).resolve(), root):
        _once(ctx, root, "before a shell command")


def _once(ctx: Any, root: Path, why: str) -> None:
    key = f"checkpoint:{root}"
    with _lock(str(root)):  # parallel tool calls of one turn take one checkpoint
        if ctx.turn.get(key):
            return
        ctx.turn[key] = True
        from tools.checkpoints.store import CheckpointError, TooLarge

        if time.monotonic() - _too_large.get(str(root), -RECHECK_SECONDS) < RECHECK_SECONDS:
            return
        session = f" [session {ctx.session_id}]" if getattr(ctx, "session_id", None) else ""
        try:
            repo_for(root, ctx.config).snapshot(f"{why}{session}")
        except TooLarge as exc:
            _too_large[str(root)] = time.monotonic()
            log.info("%s", exc)
        except (CheckpointError, OSError) as exc:
            log.warning("checkpoint of %s failed: %s", root, exc)


def _lock(name: str) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(name, threading.Lock())
