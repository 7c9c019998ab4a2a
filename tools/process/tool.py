"""The ``process`` tool: background commands of this session (start, list, poll, wait, write, kill).

``start`` goes through the terminal's checks (blocked, dangerous and protected-path commands ask
or are refused the same way) and its backend and sandbox; ``terminal(background=true)`` is the
same call. Output is read in bounded slices from an offset, so a chatty server never floods the
context.
"""
from __future__ import annotations

import functools
import json
import shutil
from typing import Any

from tools.process.manager import MANAGER, POLL_BYTES, ProcessError
from tools.process.start import folder_for, session_of, start_background  # noqa: F401
from tools.registry import ToolContext, ToolError, ToolSpec

MAX_WAIT = 600
DESCRIPTION = ("Background processes of this session. start(command, workdir?) -> id; list; "
               "poll(id, offset?): output since the last poll; wait(id, timeout=30); "
               "write(id, data): to stdin; kill(id).")
SCHEMA = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["start", "list", "poll", "wait", "write", "kill"]},
        "id": {"type": "string"},
        "command": {"type": "string"},
        "workdir": {"type": "string"},
        "data": {"type": "string"},
        "offset": {"type": "integer"},
        "timeout": {"type": "integer"},
    },
    "required": ["action"],
}


def process(args: dict, ctx: ToolContext) -> str:
    """Tool handler."""
    action = args["action"]
    try:
        if action == "start":
            return _start(args, ctx)
        if action == "list":
            views = [p.view() for p in MANAGER.list(session_of(ctx))]
            return json.dumps({"processes": views} if views else
                              {"processes": [], "note": "no background processes in this session"})
        proc = MANAGER.get(session_of(ctx), args.get("id") or "")
        if action == "poll":
            return json.dumps(MANAGER.read_output(proc, args.get("offset")), ensure_ascii=False)
        if action == "wait":
            limit = min(max(int(args.get("timeout") or 30), 0), MAX_WAIT)
            ended = MANAGER.wait(proc, limit, ctx.interrupt_event)
            out = MANAGER.read_output(proc)
            if not ended:
                out["note"] = f"still running after {limit} s"
            return json.dumps(out, ensure_ascii=False)
        if action == "write":
            n = MANAGER.write(proc, str(args.get("data") or ""))
            return json.dumps({"id": proc.id, "written_bytes": n})
        if action == "kill":
            MANAGER.kill(proc)
            return json.dumps({"id": proc.id, "status": "killed", "exit_code": proc.exit_code()})
    except ProcessError as exc:
        raise ToolError(str(exc)) from None
    raise ToolError(f"process: unknown action {action!r}")


def _start(args: dict, ctx: ToolContext) -> str:
    command = args.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ToolError("process start needs 'command'")
    from tools.terminal import terminal

    return terminal({"command": command, "workdir": args.get("workdir"), "background": True}, ctx)


def _mutating(args: dict) -> bool:
    return args.get("action") in ("start", "write", "kill")


@functools.lru_cache(maxsize=1)
def _check() -> str | None:
    return None if shutil.which("bash") else "bash is not installed"


def register(ctx: Any) -> None:
    """The plugin entry point (pyproject.toml, group hermes_agent.plugins)."""
    ctx.register_tool(ToolSpec("process", DESCRIPTION, SCHEMA, process, "terminal", _check,
                               mutating=_mutating))


__all__ = ["POLL_BYTES", "folder_for", "process", "register", "start_background"]
