"""Starting a background command (the terminal calls this after its checks) and where its
output lives: ``HERMES_HOME/sessions/<id>/processes/``."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tools.context import ToolContext, ToolError
from tools.process.manager import MANAGER, ProcessError


def session_of(ctx: ToolContext) -> str:
    return str(ctx.session_id or "none")


def folder_for(session: str) -> Path:
    """Where a session's process output files live."""
    from hermes_core.config import hermes_home

    return hermes_home() / "sessions" / session / "processes"


def start_background(command: str, ctx: ToolContext, workdir: str | None) -> str:
    """Start an approved command in the background (the terminal calls this after its checks)."""
    from tools.backends import backend_for

    spawn = backend_for(ctx).spawn(command, ctx, workdir)
    limit = int(getattr(getattr(ctx.config, "terminal", None), "max_processes", 16) or 16)
    try:
        proc = MANAGER.start(session_of(ctx), command, spawn, folder_for(session_of(ctx)), limit)
    except ProcessError as exc:
        raise ToolError(str(exc)) from None
    out: dict[str, Any] = {"id": proc.id, "pid": proc.pid, "status": "running",
                           "next": f"process(action='poll', id='{proc.id}')"}
    if proc.notes:
        out["note"] = "; ".join(proc.notes)
    return json.dumps(out, ensure_ascii=False)
