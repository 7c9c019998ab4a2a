"""The local backend: commands run here, under the OS sandbox when one applies (``tools.sandbox``).

A command that fails on a sandbox wall (no network, a read-only path) may run again without the
sandbox, but only when the user approves that exact command; where no one can be asked (a chat)
the sandboxed result stands, with a line saying which wall it hit.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional

from tools import sandbox
from tools.backends.base import Spawn
from tools.registry import ToolError

UNSANDBOXED_SUFFIX = "   # again, without the sandbox"


def wrapped(argv: list[str], ctx: Any, cwd: Path) -> tuple[list[str], Optional[sandbox.Policy]]:
    """``argv`` under this context's sandbox; a sandbox that cannot be enforced is a ToolError."""
    try:
        return sandbox.wrap_for(argv, ctx, cwd)
    except sandbox.SandboxUnavailable as exc:
        raise ToolError(str(exc)) from None


class LocalBackend:
    name = "local"

    def describe(self) -> str:
        return "this machine"

    def cwd(self, ctx: Any) -> str:
        return str(ctx.cwd)

    def run(self, command: str, ctx: Any, timeout: Optional[int], workdir: Optional[str]) -> dict:
        from tools.shell import command_env, command_limit, resolve_workdir, run_argv

        cwd = resolve_workdir(ctx, workdir)
        limit, env = command_limit(ctx, timeout), command_env(ctx)
        argv, policy = wrapped(["bash", "-c", command], ctx, cwd)
        result = run_argv(argv, ctx, cwd, limit, env)
        if policy is None:
            return result
        why = sandbox.blame(str(result.get("output") or ""), result.get("exit_code"), policy)
        if why is None:
            return result
        from tools.approval import ask

        if not ask(command + UNSANDBOXED_SUFFIX, f"it failed inside the sandbox: {why}", ctx):
            result["sandbox"] = f"{why}; running it without the sandbox was not approved"
            return result
        again = run_argv(["bash", "-c", command], ctx, cwd, limit, env)
        again["sandbox"] = f"{why}; ran again without the sandbox (the user approved)"
        return again

    def spawn(self, command: str, ctx: Any, workdir: Optional[str]) -> Spawn:
        from tools.shell import command_env, resolve_workdir

        cwd = resolve_workdir(ctx, workdir)
        argv, policy = wrapped(["bash", "-c", command], ctx, cwd)
        notes = [sandbox.environment_note(policy)] if policy is not None else []
        return Spawn(argv, cwd, command_env(ctx), None, notes)

    def stat(self, path: str) -> Optional[str]:
        p = Path(path)
        return "dir" if p.is_dir() else "file" if p.exists() else None

    def read_bytes(self, path: str, limit: int) -> bytes:
        with open(path, "rb") as fh:
            return fh.read(limit)

    def write_bytes(self, path: str, data: bytes) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(data)

    def home(self) -> str:
        return os.path.expanduser("~")

    def close(self) -> None:
        """Nothing to release: local commands are the terminal's own processes."""
