"""The `terminal` tool: run a shell command, safely bounded in time, output and blast radius.

The shell inherits the environment minus secrets (`agent.redact`, by name and by value shape): a
command the model runs has no use for OPENAI_API_KEY, and a printed environment would hand it over.
A command naming a file the file tools protect (`tools.shell_paths`) asks like they do.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tools.registry import ToolContext, ToolError, ToolSpec
from tools.shell import resolve_workdir


SCHEMA = {
    "type": "object",
    "properties": {
        "command": {"type": "string", "description": "Shell command, run with `bash -c`."},
        "timeout": {
            "type": "integer",
            "description": "Seconds before the command (and everything it started) is killed. "
                           "Default 180.",
        },
        "workdir": {
            "type": "string",
            "description": "Directory to run in (relative to the working directory). "
                           "Default: the working directory.",
        },
        "background": {"type": "boolean",
                       "description": "Start it in the background (see process)."},
    },
    "required": ["command"],
}

DESCRIPTION = (
    "Run a shell command (bash) in the working directory and return its exit code and combined "
    "stdout/stderr. Non-interactive: stdin is closed, so pass flags like -y. Long output is cut "
    "in the middle. Destructive commands need the user's approval."
)


def run_command(command: str, ctx: ToolContext, timeout: int | None = None,
                workdir: str | None = None) -> dict:
    """Run `command` where this session's commands run (`terminal.backend`) and return
    {exit_code, output, ...}; no approval checks here."""
    from tools.backends import backend_for

    return backend_for(ctx).run(command, ctx, timeout, workdir)


def terminal(args: dict, ctx: ToolContext) -> str:
    """Tool handler: block, ask, then run."""
    from tools.approval import detect_blocked, detect_dangerous, request_approval  # lazy: regexes

    command = args["command"]
    if not command.strip():
        raise ToolError("terminal: 'command' is empty")
    blocked = detect_blocked(command)
    if blocked:
        raise ToolError(f"command blocked: {blocked}. This is never run, not even with approval.")
    from tools.backends import backend_for
    from tools.shell_paths import protected_paths_reason

    local = backend_for(ctx).name == "local"  # a remote workdir is not a local directory
    base = resolve_workdir(ctx, args.get("workdir")) if local else Path(ctx.cwd)
    touched = protected_paths_reason(command, base)
    reason = "; ".join(r for r in (detect_dangerous(command), touched) if r)
    if reason and not request_approval(command, reason, ctx):
        advice = ("only the user at the terminal can allow it" if touched
                  else "ask the user to approve it or choose a safer command")
        raise ToolError(f"command denied: {reason}; {advice}")
    if ctx.interrupt_event is not None and ctx.interrupt_event.is_set():
        return json.dumps({"exit_code": None, "output": "",
                           "status": "not run: the turn was interrupted"})
    if local:  # issue 27: the working dir is checkpointed before the turn's first command
        from tools.checkpoints.hook import before_command

        before_command(ctx, base)
    if args.get("background"):  # issue 27: the process tool owns it from here
        from tools.process.start import start_background

        return start_background(command, ctx, args.get("workdir"))
    result = run_command(command, ctx, timeout=args.get("timeout"), workdir=args.get("workdir"))
    return json.dumps(result, ensure_ascii=False)


_bash_missing: list[str | None] = []


def _check() -> str | None:
    if not _bash_missing:  # computed once: PATH lookups on every definitions call add up
        found = any(os.access(os.path.join(d, "bash"), os.X_OK) for d in os.get_exec_path())
        _bash_missing.append(None if found else "bash is not installed")
    return _bash_missing[0]


def register(ctx: Any) -> None:
    """The plugin entry point (pyproject.toml, group hermes_agent.plugins)."""
    ctx.register_tool(ToolSpec("terminal", DESCRIPTION, SCHEMA, terminal, "terminal", _check,
                               mutating=True))
