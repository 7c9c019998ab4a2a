"""The `terminal` tool: run a shell command, safely bounded in time, output and blast radius.

The shell inherits the environment minus secrets (`agent.redact`, by name and by value shape): a
command the model runs has no use for OPENAI_API_KEY, and a printed environment would hand it over.
A command naming a file the file tools protect (`tools.shell_paths`) asks like they do.
"""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path
from typing import Any

from hermes_core.redact import config_secrets, shell_environment
from tools.registry import ToolContext, ToolError, ToolSpec

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
_POLL_SECONDS = 0.1
_KILL_GRACE_SECONDS = 2.0
_MAX_TIMEOUT = 3600

SCHEMA = {
    "type": "object",
    "properties": {
        "command": {"type": "string", "description": "Shell command, run with `bash -c`."},
        "timeout": {
            "type": "integer",
            "description": "Seconds before the command (and everything it started) is killed. Default 180.",
        },
        "workdir": {
            "type": "string",
            "description": "Directory to run in (relative to the working directory). Default: the working directory.",
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


class _Collector:
    """Reads a pipe into a bounded head + rolling tail so `yes`-style floods can't eat memory."""

    def __init__(self, fd: int, cap: int) -> None:
        self.fd = fd
        self.cap = max(cap, 1024)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.dropped = 0
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, name="terminal-reader", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            while True:
                chunk = os.read(self.fd, 65536)
                if not chunk:
                    break
                with self.lock:
                    self.total += len(chunk)
                    room = self.cap - len(self.head)
                    if room > 0:
                        self.head += chunk[:room]
                        chunk = chunk[room:]
                    self.tail += chunk
                    if len(self.tail) > 2 * self.cap:
                        cut = len(self.tail) - self.cap
                        del self.tail[:cut]
                        self.dropped += cut
        except OSError:
            pass
        finally:
            try:
                os.close(self.fd)
            except OSError:
                pass

    def text(self, max_chars: int) -> str:
        with self.lock:
            head, tail, dropped = bytes(self.head), bytes(self.tail), self.dropped
        if not dropped:
            return cap_output(_clean((head + tail).decode("utf-8", "replace")), max_chars)
        head_s = _clean(head.decode("utf-8", "replace"))
        tail_s = _clean(tail.decode("utf-8", "replace")).lstrip("\ufffd")
        keep_head, keep_tail = _split_budget(max_chars)
        cut = max(len(head_s) - keep_head, 0) + dropped + max(len(tail_s) - keep_tail, 0)
        return _join(head_s[:keep_head], tail_s[-keep_tail:] if keep_tail else "", cut)


def _clean(text: str) -> str:
    return _ANSI.sub("", text).replace("\r\n", "\n")


def _split_budget(max_chars: int) -> tuple[int, int]:
    # The tail usually holds the error or the summary, so it gets the larger share.
    head = int(max_chars * 0.4)
    return head, max_chars - head


def _join(head: str, tail: str, cut: int) -> str:
    return f"{head}\n\n[... {cut:,} characters cut from the middle ...]\n\n{tail}"


def cap_output(text: str, max_chars: int) -> str:
    """Keep head and tail of `text` within `max_chars`, saying how much was cut."""
    if len(text) <= max_chars:
        return text
    keep_head, keep_tail = _split_budget(max_chars)
    cut = len(text) - keep_head - keep_tail
    return _join(text[:keep_head], text[len(text) - keep_tail:] if keep_tail else "", cut)


def _kill_group(proc, pgid: int) -> None:
    """TERM the whole process group, then KILL whatever is still there."""
    import signal
    import subprocess

    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            proc.wait(timeout=_KILL_GRACE_SECONDS)
            if sig == signal.SIGTERM:
                # the leader is gone; make sure no child lingers in the group
                try:
                    os.killpg(pgid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            return
        except subprocess.TimeoutExpired:
            continue


def resolve_workdir(ctx: ToolContext, workdir: str | None) -> Path:
    """The local directory a command runs in (ToolError when it does not exist)."""
    base = Path(ctx.cwd)
    if not workdir:
        path = base
    else:
        path = Path(workdir).expanduser()
        if not path.is_absolute():
            path = base / path
    if not path.is_dir():
        raise ToolError(f"working directory does not exist or is not a directory: {path}")
    return path


def run_command(command: str, ctx: ToolContext, timeout: int | None = None, workdir: str | None = None) -> dict:
    """Run `command` where this session's commands run (`terminal.backend`) and return
    {exit_code, output, ...}; no approval checks here."""
    from tools.backends import backend_for

    return backend_for(ctx).run(command, ctx, timeout, workdir)


def command_limit(ctx: ToolContext, timeout: int | None) -> int:
    """Seconds a command may run: the call's timeout, else the context's, within 1..3600."""
    limit = int(timeout if timeout is not None else ctx.timeout)
    return min(max(limit, 1), _MAX_TIMEOUT)


def command_env(ctx: ToolContext) -> dict[str, str]:
    """The environment commands run with: the process's minus every secret, pagers off."""
    env = shell_environment(os.environ, config_secrets(ctx.config))  # a shell needs no API keys
    env.update({"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"})
    return env


def run_argv(argv: list[str], ctx: ToolContext, cwd: Path | None, limit: int,
             env: dict[str, str], on_kill: Any = None, pass_fds: tuple[int, ...] = ()) -> dict:
    """Run a local command line with the terminal's bounds (time, output, interrupt, the whole
    process group killed); ``on_kill()`` also runs when it is killed (a remote backend stops the
    remote side); ``pass_fds`` reach the child (execute_code's RPC). Returns {exit_code, output}."""
    import subprocess
    import time

    read_fd, write_fd = os.pipe()
    try:
        proc = subprocess.Popen(
            argv,
            cwd=str(cwd) if cwd is not None else None,
            stdin=subprocess.DEVNULL,
            stdout=write_fd,
            stderr=write_fd,
            env=env,
            pass_fds=pass_fds,
            start_new_session=True,  # own process group, so a kill reaches every child
        )
    except OSError as exc:
        os.close(read_fd)
        os.close(write_fd)
        raise ToolError(f"could not start {argv[0]}: {exc}") from exc
    os.close(write_fd)
    pgid = proc.pid
    collector = _Collector(read_fd, ctx.max_output_chars)
    deadline = time.monotonic() + limit
    timed_out = interrupted = False
    while True:
        try:
            proc.wait(timeout=_POLL_SECONDS)
            break
        except subprocess.TimeoutExpired:
            pass
        if ctx.interrupt_event is not None and ctx.interrupt_event.is_set():
            interrupted = True
        elif time.monotonic() >= deadline:
            timed_out = True
        if interrupted or timed_out:
            if on_kill is not None:
                on_kill()
            _kill_group(proc, pgid)
            break
    # Background children may keep the pipe open; don't wait for them forever.
    collector.thread.join(timeout=_KILL_GRACE_SECONDS if not (interrupted or timed_out) else 1.0)
    result: dict = {"exit_code": proc.returncode, "output": collector.text(ctx.max_output_chars)}
    if timed_out:
        result["exit_code"] = None
        result["status"] = f"timed out after {limit} s; the command and its children were killed"
    elif interrupted:
        result["exit_code"] = None
        result["status"] = "interrupted by the user; the command and its children were killed"
    elif collector.thread.is_alive():
        result["note"] = "background processes still hold the output; their later output is not shown"
    return result


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
        return json.dumps({"exit_code": None, "output": "", "status": "not run: the turn was interrupted"})
    if local:  # issue 27: the working dir is checkpointed before the turn's first command
        from tools.checkpoints.hook import before_command

        before_command(ctx, base)
    if args.get("background"):  # issue 27: the process tool owns it from here
        from tools.process.tool import start_background

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
    ctx.register_tool(ToolSpec("terminal", DESCRIPTION, SCHEMA, terminal, "terminal", _check, mutating=True))
