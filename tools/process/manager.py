"""The background processes of this Hermes process, by session.

Each runs under ``guard.py`` in a process group of its own, stdin a pipe Hermes holds, stdout and
stderr appended to ``HERMES_HOME/sessions/<session id>/processes/<id>.log`` (0600): output is
never lost, and the model reads it in bounded slices from an offset (``read_output``). They
survive turns and die with this process: at exit (``stop_all``, registered with atexit) and, if
it is killed outright, through the guard, which notices the closed pipe.
"""
from __future__ import annotations

import atexit
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

GUARD = str(Path(__file__).with_name("guard.py"))
POLL_BYTES = 10_000  # one poll returns at most this much output
KILL_GRACE = 2.0
_ANSI = re.compile(rb"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


class ProcessError(Exception):
    """A request about a process that cannot be served (unknown id, limit reached, ...)."""


@dataclass
class Proc:
    id: str
    session: str
    command: str
    cwd: str
    log: Path
    popen: subprocess.Popen
    owner_fd: int  # the write end of the guard's pipe: closing it stops the process
    stop_remote: Optional[Callable[[], None]] = None
    notes: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.time)
    ended: Optional[float] = None
    read_offset: int = 0  # where the next poll without an offset starts

    @property
    def pid(self) -> int:
        return self.popen.pid

    def exit_code(self) -> Optional[int]:
        code = self.popen.poll()
        if code is not None and self.ended is None:
            self.ended = time.time()
        return code

    def running(self) -> bool:
        return self.exit_code() is None

    def view(self) -> dict:
        """What ``list`` and ``/ps`` show."""
        code = self.exit_code()
        size = _size(self.log)
        return {"id": self.id, "command": _short(self.command), "status":
                "running" if code is None else "exited", "exit_code": code, "pid": self.pid,
                "seconds": round((self.ended or time.time()) - self.started, 1),
                "output_bytes": size, "unread_bytes": max(size - self.read_offset, 0),
                "output_file": str(self.log)}


def _short(text: str, limit: int = 80) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def decode_slice(data: bytes, at_end: bool) -> tuple[str, int]:
    """(text, bytes consumed) of a slice of output: a UTF-8 sequence cut by the slice's end is
    left for the next read, ANSI codes are dropped, CRLF becomes LF (pure)."""
    used = len(data)
    if not at_end:
        for back in range(1, min(4, len(data)) + 1):
            byte = data[-back]
            if byte & 0xC0 != 0x80:  # the last lead byte: is its sequence complete?
                need = 2 if byte >= 0xC0 else 1
                need = 3 if byte >= 0xE0 else need
                need = 4 if byte >= 0xF0 else need
                if byte >= 0x80 and back < need:
                    used = len(data) - back
                break
    text = _ANSI.sub(b"", data[:used]).decode("utf-8", "replace").replace("\r\n", "\n")
    return text, used


class ProcessManager:
    def __init__(self) -> None:
        self._procs: dict[str, Proc] = {}
        self._lock = threading.Lock()
        self._counter = 0

    def start(self, session: str, command: str, spawn: Any, folder: Path, limit: int) -> Proc:
        """Start ``spawn`` (a ``tools.backends.Spawn``) for ``session``; ``folder`` receives its
        output file. At most ``limit`` running processes per session."""
        from hermes_core.home import create_private_file, ensure_private_dir

        with self._lock:
            running = [p for p in self._procs.values() if p.session == session and p.running()]
            if len(running) >= limit:
                raise ProcessError(f"this session already runs {len(running)} background "
                                   f"processes (terminal.max_processes); kill one first")
            for part in (folder.parent.parent, folder.parent, folder):
                ensure_private_dir(part)
            pid_id, log = self._next_id(folder)
            create_private_file(log)
            read_end, write_end = os.pipe()
            try:
                with open(log, "ab") as out:
                    popen = subprocess.Popen(
                        [sys.executable, "-S", "-E", GUARD, str(read_end), "--", *spawn.argv],
                        cwd=str(spawn.cwd) if spawn.cwd is not None else None, env=spawn.env,
                        stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT,
                        pass_fds=(read_end,), start_new_session=True)
            except OSError as exc:
                os.close(write_end)
                raise ProcessError(f"could not start the process: {exc}") from None
            finally:
                os.close(read_end)
            proc = Proc(pid_id, session, command, str(spawn.cwd or ""), log, popen, write_end,
                        spawn.stop, list(spawn.notes))
            self._procs[pid_id] = proc
            return proc

    def _next_id(self, folder: Path) -> tuple[str, Path]:
        while True:
            self._counter += 1
            name = f"p{self._counter}"
            if name not in self._procs and not (folder / f"{name}.log").exists():
                return name, folder / f"{name}.log"

    def get(self, session: str, pid_id: str) -> Proc:
        proc = self._procs.get(str(pid_id or "").strip())
        if proc is None or proc.session != session:
            mine = [p.id for p in self.list(session)]
            known = f"; this session's processes: {', '.join(mine)}" if mine else \
                "; this session has no background processes"
            raise ProcessError(f"no background process {pid_id!r}{known}")
        return proc

    def list(self, session: Optional[str] = None) -> list[Proc]:
        with self._lock:
            return [p for p in self._procs.values() if session is None or p.session == session]

    def read_output(self, proc: Proc, offset: Optional[int] = None,
                    max_bytes: int = POLL_BYTES) -> dict:
        """New output from ``offset`` (default: where the last read stopped), bounded."""
        done = not proc.running()  # before reading: a process that ended has written everything
        start = proc.read_offset if offset is None else max(int(offset), 0)
        size = _size(proc.log)
        with open(proc.log, "rb") as fh:
            fh.seek(min(start, size))
            data = fh.read(max_bytes)
        at_end = start + len(data) >= size
        text, used = decode_slice(data, at_end)
        proc.read_offset = min(start, size) + used
        out = {"id": proc.id, "status": "exited" if done else "running",
               "exit_code": proc.exit_code(), "output": text, "offset": proc.read_offset}
        if size > proc.read_offset:
            out["more_bytes"] = size - proc.read_offset
        return out

    def wait(self, proc: Proc, timeout: float, interrupt: Optional[threading.Event] = None) -> bool:
        """Wait up to ``timeout`` seconds for the process to end (or the turn to be interrupted)."""
        deadline = time.monotonic() + max(timeout, 0)
        while proc.running():
            if interrupt is not None and interrupt.is_set():
                return False
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            try:
                proc.popen.wait(timeout=min(left, 0.2))
            except subprocess.TimeoutExpired:
                pass
        return True

    def write(self, proc: Proc, data: str) -> int:
        if not proc.running():
            raise ProcessError(f"process {proc.id} has exited; nothing reads its stdin")
        stdin = proc.popen.stdin
        if stdin is None or stdin.closed:
            raise ProcessError(f"the stdin of process {proc.id} is closed")
        raw = data.encode("utf-8")
        try:
            stdin.write(raw)
            stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise ProcessError(f"cannot write to process {proc.id}: {exc}") from None
        return len(raw)

    def kill(self, proc: Proc) -> None:
        """TERM the process group, KILL what is left after a grace period (remote side too)."""
        if proc.stop_remote is not None and proc.running():
            proc.stop_remote()
        _signal_group(proc, signal.SIGTERM)
        try:
            proc.popen.wait(timeout=KILL_GRACE)
        except subprocess.TimeoutExpired:
            pass
        _signal_group(proc, signal.SIGKILL)  # also whatever the command left in its group
        try:
            proc.popen.wait(timeout=KILL_GRACE)
        except subprocess.TimeoutExpired:
            pass
        _close(proc)

    def stop_all(self) -> None:
        """Stop every process (at exit): TERM all groups at once, then KILL the rest."""
        procs = self.list()
        for proc in procs:
            if proc.stop_remote is not None and proc.running():
                try:
                    proc.stop_remote()
                except Exception:  # exit path: never raise
                    pass
            _signal_group(proc, signal.SIGTERM)
        deadline = time.monotonic() + KILL_GRACE
        while any(p.running() for p in procs) and time.monotonic() < deadline:
            time.sleep(0.05)
        for proc in procs:
            _signal_group(proc, signal.SIGKILL)
            _close(proc)


def _signal_group(proc: Proc, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _close(proc: Proc) -> None:
    for close in (lambda: os.close(proc.owner_fd),
                  lambda: proc.popen.stdin.close() if proc.popen.stdin else None):
        try:
            close()
        except OSError:
            pass
    proc.owner_fd = -1


MANAGER = ProcessManager()
atexit.register(MANAGER.stop_all)
