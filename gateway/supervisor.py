"""``hermes gateway run --workers N``: N gateway worker processes behind one API port.

Why processes: a turn's Python work holds the GIL, so one process tops out at one core; workers
spread turns over the machine's cores and survive each other. They share the API port with
``SO_REUSEPORT`` (the kernel spreads new connections over the workers' listening sockets) and one
PostgreSQL store, which holds everything a second worker must see; the turn lease
(``gateway.lease``) keeps two workers from running turns of one session at once, and one elected
worker polls Telegram (``gateway.election``). SQLite is one process's store, so ``--workers``
above 1 is refused with it.

The supervisor itself serves nothing: it keeps the port reserved (so a restarted worker binds the
same one), starts the workers, restarts one that dies (after a delay that doubles while it keeps
dying young), forwards SIGTERM/SIGINT so every worker drains (stops accepting, lets turns in flight
finish up to the drain timeout), prints ``READY`` once every worker is ready, and writes
``gateway.json`` with its workers for ``hermes gateway status``. A worker notices a dead supervisor
(its parent changes) and drains too, so no orphan keeps the port.
"""
from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import IO, Any, Callable, Optional

log = logging.getLogger("gateway.supervisor")

FIRST_BACKOFF, MAX_BACKOFF = 0.5, 30.0  # seconds before restarting a worker that died
HEALTHY_AFTER = 60.0  # a worker that lived this long starts its backoff from scratch when it dies
KILL_GRACE = 30.0  # after the drain timeout, before a worker still running is killed
TICK = 0.1


def restart_delay(failures: int) -> float:
    """Seconds before restarting a worker after its ``failures``-th quick death in a row."""
    return min(MAX_BACKOFF, FIRST_BACKOFF * 2 ** max(0, failures - 1))


def worker_argv(command: list[str], index: int, port: Optional[int]) -> list[str]:
    """The command line of worker ``index``: the launcher's ``command`` (``hermes gateway run``
    with the supervisor's own flags but ``--workers``/``--port``, handed over by the launcher:
    the gateway never names it), its index, and the reserved port."""
    argv = [*command, "--worker", str(index)]
    return argv + (["--port", str(port)] if port is not None else [])


def exit_reason(code: int) -> str:
    """``exit 3`` or ``killed by SIGKILL`` (Popen reports a signal as a negative code)."""
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit {code}"


def reserve_port(host: str, port: int) -> socket.socket:
    """Bind (without listening) ``host:port`` with SO_REUSEPORT, so workers can share it and nobody
    else takes it while one restarts; port 0 picks a free one (``getsockname()`` says which)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


@dataclass
class Worker:
    index: int
    proc: Optional["subprocess.Popen[str]"] = None
    ready: threading.Event = field(default_factory=threading.Event)
    started_at: float = 0.0
    restarts: int = 0
    failures: int = 0  # quick deaths in a row
    restart_at: Optional[float] = None  # monotonic time of the pending restart
    last_exit: Optional[str] = None
    ready_line: str = ""

    def view(self) -> dict[str, Any]:
        alive = self.proc is not None and self.proc.poll() is None
        state = ("running" if self.ready.is_set() else "starting") if alive else (
            "restarting" if self.restart_at is not None else "stopped")
        return {"index": self.index, "pid": self.proc.pid if self.proc else None, "state": state,
                "restarts": self.restarts, "last_exit": self.last_exit,
                "started_at": self.started_at or None}


class Supervisor:
    """Starts, watches and drains the workers; ``run()`` returns the process exit code."""

    def __init__(self, count: int, command: list[str], port: Optional[int], drain_timeout: float,
                 write_status: Callable[..., None], out: IO[str] = sys.stdout) -> None:
        self.workers = [Worker(i) for i in range(count)]
        self.command, self.port, self.drain = command, port, drain_timeout
        self.write_status, self.out = write_status, out
        self.stop = threading.Event()
        self.started = time.time()
        self.platforms: list[str] = []
        self.api: Optional[str] = None

    # -- workers ---------------------------------------------------------------------------------
    def _start(self, w: Worker) -> None:
        w.ready.clear()
        w.ready_line = ""
        w.restart_at = None
        w.started_at = time.time()
        w.proc = subprocess.Popen(worker_argv(self.command, w.index, self.port),
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
        threading.Thread(target=self._read_stdout, args=(w, w.proc), name=f"worker{w.index}-out",
                         daemon=True).start()
        log.info("worker %d started (pid %d)", w.index, w.proc.pid)

    def _read_stdout(self, w: Worker, proc: "subprocess.Popen[str]") -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("READY") and proc is w.proc and not w.ready.is_set():
                w.ready_line = line.strip()
                w.ready.set()
            else:
                self.out.write(line)
                self.out.flush()

    def _on_death(self, w: Worker, code: int) -> None:
        w.last_exit = exit_reason(code)
        lived = time.time() - w.started_at
        w.failures = 1 if lived >= HEALTHY_AFTER else w.failures + 1
        delay = restart_delay(w.failures)
        w.restart_at = time.monotonic() + delay
        w.restarts += 1
        w.proc = None
        log.warning("worker %d died (%s) after %.0f s; restarting in %.1f s", w.index, w.last_exit,
                    lived, delay)

    # -- the loop ----------------------------------------------------------------------------------
    def run(self) -> int:
        for w in self.workers:
            self._start(w)
        announced = False
        last_status = 0.0
        while not self.stop.is_set():
            for w in self.workers:
                code = w.proc.poll() if w.proc is not None else None
                if code is not None:
                    if not announced:  # a worker that cannot start: its stderr said why
                        log.error("worker %d failed to start (%s)", w.index, exit_reason(code))
                        self._shutdown(self.workers)
                        self.write_status(state="stopped",
                                          error=f"worker {w.index} failed to start")
                        return code if code > 0 else 1
                    self._on_death(w, code)
                if w.proc is None and w.restart_at is not None and time.monotonic() >= w.restart_at:
                    self._start(w)
            if not announced and all(w.ready.is_set() for w in self.workers):
                announced = True
                self._announce()
            if announced and time.monotonic() - last_status >= 1.0:
                self._status("running")
                last_status = time.monotonic()
            self.stop.wait(TICK)
        log.info("signal received: draining %d worker(s)", len(self.workers))
        self._status("draining")
        self._shutdown(self.workers)
        self._status("stopped")
        log.info("gateway stopped")
        return 0

    def _announce(self) -> None:
        first = self.workers[0].ready_line
        fields = dict(part.split("=", 1) for part in first.split()[2:] if "=" in part)
        self.platforms = [p for p in fields.get("platforms", "").split(",") if p]
        self.api = fields.get("api")
        self._status("running")
        line = (f"READY gateway pid={os.getpid()} workers={len(self.workers)} "
                f"platforms={','.join(self.platforms)}")
        print(line + (f" api={self.api}" if self.api else ""), file=self.out, flush=True)
        log.info("gateway running: %d workers (pids %s)", len(self.workers),
                 ", ".join(str(w.proc.pid) for w in self.workers if w.proc))

    def _status(self, state: str) -> None:
        self.write_status(state=state, started_at=self.started, platforms=self.platforms,
                          api_server=self.api, workers=[w.view() for w in self.workers])

    def _shutdown(self, workers: list[Worker]) -> None:
        """SIGTERM every live worker (each drains), wait for the drain, kill what is left."""
        live = [w for w in workers if w.proc is not None and w.proc.poll() is None]
        for w in workers:
            w.restart_at = None
        for w in live:
            assert w.proc is not None
            w.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + self.drain + KILL_GRACE
        for w in live:
            assert w.proc is not None
            try:
                w.proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.error("worker %d (pid %d) still running after the drain; killing it", w.index,
                          w.proc.pid)
                w.proc.kill()
                w.proc.wait()
            w.last_exit = exit_reason(w.proc.returncode)
