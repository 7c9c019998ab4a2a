"""Where a session's commands and file tools act (``terminal.backend``): this machine, a host
over SSH, or a Docker container.

A ``Backend`` is small on purpose: run a command, start one in the background, read and write a
file, say where it stands. The terminal, the process tool and the file tools ask
``backend_for(ctx)`` and do the rest themselves (approval, confinement, formatting), so policy
lives in one place whatever the backend. One remote backend per session (one SSH connection,
one container), created on first use and closed when the process exits (``close_all``, also
at exit) or the session is released (``release``).
"""
from __future__ import annotations

import atexit
import logging
import threading
from pathlib import Path
from typing import Any, Optional

from tools.backends.base import Backend, Spawn

__all__ = ["Backend", "Spawn", "backend_for", "configured", "active", "release", "close_all"]

log = logging.getLogger("hermes.backends")


_lock = threading.Lock()
_sessions: dict[tuple[str, str], Backend] = {}
_local: Optional[Backend] = None


def configured(ctx: Any) -> str:
    """The backend this context asks for: ``terminal.backend`` (default local)."""
    term = getattr(getattr(ctx, "config", None), "terminal", None)
    return str(getattr(term, "backend", None) or "local")


def backend_for(ctx: Any) -> Backend:
    """This session's backend (created on first use; the local one is shared)."""
    global _local
    kind = configured(ctx)
    if kind == "local":
        if _local is None:
            from tools.backends.local import LocalBackend

            _local = LocalBackend()
        return _local
    key = (kind, str(getattr(ctx, "session_id", None) or "-"))
    with _lock:
        found = _sessions.get(key)
        if found is None:
            found = _sessions[key] = _create(kind, ctx)
        return found


def _create(kind: str, ctx: Any) -> Backend:
    term = ctx.config.terminal
    if kind == "ssh":
        from tools.backends.ssh import SSHBackend

        return SSHBackend(term.ssh)
    if kind == "docker":
        from tools.backends.docker import DockerBackend

        return DockerBackend(term, workspace=Path(ctx.cwd), session_id=ctx.session_id)
    from tools.registry import ToolError

    raise ToolError(f"unknown terminal.backend {kind!r}; use local, ssh or docker")


def active() -> list[tuple[str, str, Backend]]:
    """(kind, session id, backend) of the remote backends open in this process."""
    with _lock:
        return [(k, s, b) for (k, s), b in _sessions.items()]


def release(session_id: str) -> None:
    """Close the remote backends of one session (its connection, its container)."""
    with _lock:
        keys = [k for k in _sessions if k[1] == session_id]
        gone = [_sessions.pop(k) for k in keys]
    for backend in gone:
        _close(backend)


def close_all() -> None:
    """Close every remote backend (at exit: containers removed, SSH masters stopped)."""
    with _lock:
        gone = list(_sessions.values())
        _sessions.clear()
    for backend in gone:
        _close(backend)


def _close(backend: Backend) -> None:
    try:
        backend.close()
    except Exception as exc:  # an exit path must not raise
        log.warning("closing the %s backend failed: %s", backend.name, exc)


atexit.register(close_all)
