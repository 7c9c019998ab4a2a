"""The parent's side of the embedded model's child process: start, ask, notice death, restart.

One child per (model file, window, threads) per process, started on first use and kept warm; every
agent of the process shares it, one request at a time (the model is one sequential machine
anyway). A child that exits, is killed (SIGILL, SIGSEGV, the OOM killer) or stays silent past the
timeout ends the request with ``LocalModelStopped``; the next request starts a fresh child.
Idle, the child blocks on its socket and costs no CPU.
"""
from __future__ import annotations

import atexit
import collections
import itertools
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
from typing import Iterator, Optional

from agent.providers.local_wire import PeerGone, Pipe, Silent
from agent.providers.local_worker import LOG_PREFIX

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 300.0  # seconds a request may go without a word from the child
LOAD_TIMEOUT = 180.0  # seconds to load the model and say ready
SETUP_HINT = "configure a provider with `hermes setup` to avoid it"


class LocalModelStopped(Exception):
    """The embedded model's child died or hung; the request is lost, the next one restarts it.

    ``provider_stopped`` tells the error classifier not to retry (a crash is likely to repeat) and
    to show the message as it is."""

    provider_stopped = True

    def __init__(self, reason: str) -> None:
        super().__init__(f"The embedded model stopped: {reason}; it will be restarted on the next "
                         f"message; {SETUP_HINT}.")
        self.reason = reason


class WorkerFailed(Exception):
    """The child answered a request with an error (it lives on)."""

    def __init__(self, msg: dict) -> None:
        super().__init__(msg.get("message") or msg.get("error") or "the embedded model failed")
        self.msg = msg


def exit_reason(returncode: Optional[int]) -> str:
    """How a child ended, in words: 'killed by SIGILL (illegal instruction)', 'exited with 1'."""
    if returncode is None:
        return "it stopped answering"
    if returncode < 0:
        try:
            sig = signal.Signals(-returncode)
            what = signal.strsignal(sig) or ""
            return f"killed by {sig.name}" + (f" ({what.lower()})" if what else "")
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exited with status {returncode}"


class ModelProcess:
    """One child process running ``agent.providers.local_worker``."""

    def __init__(self, model_path: str, n_ctx: Optional[int], n_threads: Optional[int],
                 verbose: bool) -> None:
        self.model_path, self.n_ctx, self.n_threads, self.verbose = (model_path, n_ctx, n_threads,
                                                                     verbose)
        self.lock = threading.Lock()  # one request at a time; a live stream holds it
        self.info: dict = {}
        self._proc: Optional[subprocess.Popen] = None
        self._pipe: Optional[Pipe] = None
        self._ids = itertools.count(1)
        self._current: Optional[int] = None  # the request on the wire
        self._cancel_next = False
        self._stderr: "collections.deque[str]" = collections.deque(maxlen=20)
        self.starts = 0

    @property
    def pid(self) -> Optional[int]:
        return self._proc.pid if self._proc is not None else None

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    # -- life cycle

    def ensure_started(self) -> dict:
        """The child's ready info; starts (or restarts) it when none is running. Call with the
        lock."""
        if self.alive():
            return self.info
        self._reap()
        parent, child = socket.socketpair()
        cmd = [sys.executable, "-m", "agent.providers.local_worker", "--fd", str(child.fileno()),
               "--model", self.model_path, "--n-ctx", str(self.n_ctx or 0)]
        if self.n_threads:
            cmd += ["--threads", str(self.n_threads)]
        if self.verbose:
            cmd.append("--verbose")
        try:
            self._proc = subprocess.Popen(cmd, pass_fds=(child.fileno(),), stdin=subprocess.DEVNULL,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                          start_new_session=True, env=_child_env())
        finally:
            child.close()
        self.starts += 1
        self._pipe = Pipe(parent)
        threading.Thread(target=self._drain_stderr, args=(self._proc,), daemon=True,
                         name="local-model-stderr").start()
        msg = self._recv(LOAD_TIMEOUT, loading=True)
        if "fatal" in msg:
            self.stop()
            raise WorkerFailed({"message": str(msg["fatal"]), "error": "fatal"})
        self.info = msg
        log.info("embedded model child pid %s ready in %.2fs (window %s, CPU %s)", self.pid,
                 msg.get("load_seconds", 0), msg.get("context_length"), msg.get("system_info"))
        return msg

    def _drain_stderr(self, proc: subprocess.Popen) -> None:
        for raw in iter(proc.stderr.readline, b""):  # type: ignore[union-attr]
            line = raw.decode("utf-8", "replace").rstrip()
            if line.startswith(LOG_PREFIX):  # the child's own log records, at their level
                level, _, text = line[len(LOG_PREFIX):].partition(" ")
                log.log(logging.getLevelName(level) if level.isupper() else logging.INFO,
                        "embedded model: %s", text)
            elif line:
                self._stderr.append(line)
                log.debug("embedded model: %s", line)

    def _reap(self) -> None:
        if self._pipe is not None:
            self._pipe.close()
            self._pipe = None
        if self._proc is not None:
            try:
                self._proc.kill()
            except OSError:
                pass
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            self._proc = None

    def stop(self) -> None:
        """End the child (at exit, or after it hung)."""
        self._reap()

    def _died(self, silent_for: Optional[float] = None) -> LocalModelStopped:
        """The child is gone or hung: kill what is left, say why."""
        proc = self._proc
        if silent_for is not None:
            reason = f"no answer for {silent_for:.0f} s"
        else:
            try:
                code = proc.wait(timeout=5) if proc is not None else None
            except subprocess.TimeoutExpired:
                code = None
            reason = exit_reason(code)
        last = next((ln for ln in reversed(self._stderr) if "Error" in ln or "error" in ln), "")
        self._reap()
        if last:
            reason += f" ({last[:200]})"
        log.warning("embedded model stopped: %s", reason)
        return LocalModelStopped(reason)

    # -- requests

    def _recv(self, timeout: float, loading: bool = False) -> dict:
        assert self._pipe is not None
        try:
            return self._pipe.recv(timeout)
        except Silent:
            raise self._died(silent_for=timeout) from None
        except PeerGone:
            raise self._died() from None

    def request(self, payload: dict, timeout: float) -> Iterator[dict]:
        """The child's messages for one request until its end; call with the lock held.

        Messages of an earlier (cancelled) request that are still on the wire are skipped."""
        rid = next(self._ids)
        assert self._pipe is not None
        try:
            self._pipe.send({"op": "create", "id": rid, "request": payload})
            self._current = rid
            if self._cancel_next:  # abort() came while this request was on its way
                self.cancel()
        except PeerGone:
            raise self._died() from None
        try:
            while True:
                msg = self._recv(timeout)
                if msg.get("id") != rid:
                    continue
                if msg.get("end"):
                    return
                if "error" in msg:
                    raise WorkerFailed(msg)
                yield msg
        finally:
            self._current = None

    def acquire(self) -> None:
        """Take the child for one request (a stream keeps it until closed)."""
        self.lock.acquire()
        self._cancel_next = False

    def release(self) -> None:
        self.lock.release()

    def cancel(self) -> None:
        """Stop the request on the wire at the child's next token (any thread)."""
        pipe, rid = self._pipe, self._current
        if pipe is not None and rid is not None:
            try:
                pipe.send({"op": "cancel", "id": rid})
            except PeerGone:
                pass

    def abort(self) -> None:
        """``cancel``, and when the request being prepared is not on the wire yet (the child may
        still be loading), cancel it as soon as it is (``AIAgent.interrupt``)."""
        if self._current is None and self.lock.locked():
            self._cancel_next = True
        self.cancel()


def _child_env() -> dict:
    """The child runs this checkout's code: the parent's import path goes with it."""
    env = dict(os.environ)
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH")) if p)
    return env


_PROCESSES: dict[tuple, ModelProcess] = {}
_PROCESSES_LOCK = threading.Lock()


def process_for(model_path: str, n_ctx: Optional[int], n_threads: Optional[int],
                verbose: bool = False) -> ModelProcess:
    """The process's shared child for this model and window (not started until first use)."""
    key = (os.path.realpath(model_path), int(n_ctx or 0), n_threads)
    with _PROCESSES_LOCK:
        proc = _PROCESSES.get(key)
        if proc is None:
            proc = _PROCESSES[key] = ModelProcess(model_path, n_ctx, n_threads, verbose)
        return proc


def running_pids() -> list[int]:
    """Pids of this process's live model children (``hermes gateway status``, tests)."""
    with _PROCESSES_LOCK:
        return [p.pid for p in _PROCESSES.values() if p.alive() and p.pid is not None]


@atexit.register
def stop_all() -> None:
    with _PROCESSES_LOCK:
        procs = list(_PROCESSES.values())
    for p in procs:
        p.stop()
