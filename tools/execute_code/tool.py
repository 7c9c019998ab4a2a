"""The ``execute_code`` tool: run a Python script whose tool calls come back to this agent.

For long mechanical jobs (read twenty files and count their lines, rename a hundred files, poll
until a file appears): one model call writes the script, the script makes the tool calls, and
only what it prints (bounded) enters the context. Each call it makes is served here through
``tools.registry.dispatch`` with the agent's own ToolContext, so policy, confinement, approvals
and checkpoints are those of a direct call. The script runs in the working directory with the
terminal's environment (no secrets), under the sandbox when one applies, within
``code_execution.timeout`` seconds and ``max_tool_calls`` calls.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import socket
import sys
import threading
from pathlib import Path
from typing import Any

from tools.registry import ToolContext, ToolError, ToolSpec

log = logging.getLogger("hermes.execute_code")
CHILD = str(Path(__file__).with_name("child.py"))
EXCLUDED = ("execute_code", "delegate_task")  # no recursion, no agents started from a script
DESCRIPTION = ("Run a Python script that calls tools: `from hermes_tools import read_file, "
               "terminal` (args as in each tool; JSON results come back parsed; failures raise "
               "ToolError). Only what it prints is returned. For many mechanical steps at once.")
SCHEMA = {
    "type": "object",
    "properties": {
        "code": {"type": "string", "description": "Python 3 source."},
        "timeout": {"type": "integer", "description": "Seconds; default 300."},
    },
    "required": ["code"],
}


def allowed_tools(ctx: ToolContext) -> dict[str, list[str]]:
    """The tools a script may call: what the agent offers (minus EXCLUDED), each with its
    required parameters in order (the positional arguments of ``hermes_tools``)."""
    from tools.registry import get_tool_definitions

    offered = getattr(ctx.agent, "tools", None) if ctx.agent is not None else None
    if not isinstance(offered, list):
        offered = get_tool_definitions(enabled_toolsets=ctx.toolsets)
    out: dict[str, list[str]] = {}
    for d in offered:
        fn = d.get("function") if isinstance(d, dict) else None
        if isinstance(fn, dict) and fn.get("name") and fn["name"] not in EXCLUDED:
            out[fn["name"]] = list((fn.get("parameters") or {}).get("required") or [])
    return out


class _RPC(threading.Thread):
    """Serves the script's requests: its source once, then tool calls, one line each way."""

    def __init__(self, sock: socket.socket, code: str, ctx: ToolContext,
                 allowed: dict[str, list[str]], max_calls: int) -> None:
        super().__init__(name="execute-code-rpc", daemon=True)
        self.sock, self.code, self.ctx = sock, code, ctx
        self.allowed, self.max_calls = allowed, max_calls
        self.calls = 0
        self.refused = 0

    def run(self) -> None:
        try:
            with self.sock.makefile("rb") as reader:
                for line in reader:
                    self.sock.sendall(json.dumps(self._answer(line)).encode("utf-8") + b"\n")
        except OSError:
            pass  # the script ended (or was killed) mid-call
        except Exception:  # a bug here must not kill the turn's thread
            log.exception("execute_code RPC failed")

    def _answer(self, line: bytes) -> dict:
        try:
            req = json.loads(line)
        except ValueError:
            return {"ok": False, "error": "bad request"}
        rid = req.get("id")
        if req.get("op") == "code":
            return {"id": rid, "code": self.code}
        name, args = str(req.get("tool") or ""), req.get("args")
        if name not in self.allowed:
            return {"id": rid, "ok": False, "error": f"tool {name!r} is not available here"}
        if self.calls >= self.max_calls:
            self.refused += 1
            return {"id": rid, "ok": False, "error": f"tool call limit reached ({self.max_calls} "
                    "per script, code_execution.max_tool_calls)"}
        self.calls += 1
        from tools.registry import dispatch

        try:
            return {"id": rid, "ok": True, "result": dispatch(name, args, self.ctx)}
        except ToolError as exc:
            return {"id": rid, "ok": False, "error": str(exc)}
        except Exception as exc:  # noqa: BLE001 - the script sees it as a tool error
            return {"id": rid, "ok": False, "error": f"{name} failed: {type(exc).__name__}: {exc}"}


def _limits(ctx: ToolContext) -> Any:
    from hermes_core.exec_config import CodeExecutionConfig

    cfg = getattr(ctx.config, "code_execution", None)
    return cfg if cfg is not None else CodeExecutionConfig()


def execute_code(args: dict, ctx: ToolContext) -> str:
    """Tool handler."""
    from tools.backends.local import wrapped
    from tools.checkpoints.hook import before_command
    from tools.shell import command_env, run_argv

    code = args["code"]
    if not code.strip():
        raise ToolError("execute_code: 'code' is empty")
    cfg = _limits(ctx)
    limit = min(max(int(args.get("timeout") or cfg.timeout), 1), cfg.timeout)
    cwd = Path(ctx.cwd)
    allowed = allowed_tools(ctx)
    argv, _ = wrapped([sys.executable, CHILD], ctx, cwd)
    before_command(ctx, cwd)  # the script may write files itself
    parent, child = socket.socketpair()
    env = command_env(ctx)
    env.update({"HERMES_RPC_FD": str(child.fileno()), "HERMES_TOOLS": json.dumps(allowed),
                "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"})
    rpc = _RPC(parent, code, ctx, allowed, cfg.max_tool_calls)
    rpc.start()
    bounded = dataclasses.replace(ctx, max_output_chars=cfg.max_output_chars)
    try:
        result = run_argv(argv, bounded, cwd, limit, env, pass_fds=(child.fileno(),))
    finally:
        child.close()  # the script's end: the RPC thread now reads end-of-file
        rpc.join(timeout=5)
        parent.close()
    result["tool_calls"] = rpc.calls
    if rpc.refused:
        result["note"] = f"{rpc.refused} tool call(s) refused over the limit"
    return json.dumps(result, ensure_ascii=False)


def register(ctx: Any) -> None:
    """The plugin entry point (pyproject.toml, group hermes_agent.plugins)."""
    ctx.register_toolset("code_execution", "execute_code: Python scripts that call the tools")
    ctx.register_tool(ToolSpec("execute_code", DESCRIPTION, SCHEMA, execute_code,
                               "code_execution", mutating=True))
