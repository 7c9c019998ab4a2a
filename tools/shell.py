"""How a command runs on this machine, bounded: time (the whole process group killed), output (a
head and a rolling tail, so a flood cannot eat memory), the user's interrupt, and an environment
without secrets (``hermes_core.redact``: by name and by value shape). The terminal tool, the local
and remote backends and execute_code all run through ``run_argv``."""
from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from typing import Any

from hermes_core.redact import config_secrets, shell_environment
from tools.context import ToolContext, ToolError

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
_POLL_SECONDS = 0.1
_KILL_GRACE_SECONDS = 2.0
MAX_TIMEOUT = 3600


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


def command_limit(ctx: ToolContext, timeout: int | None) -> int:
    """Seconds a command may run: the call's timeout, else the context's, within 1..3600."""
    limit = int(timeout if timeout is not None else ctx.timeout)
    return min(max(limit, 1), MAX_TIMEOUT)


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
        result["note"] = ("background processes still hold the output; "
                          "their later output is not shown")
    return result
