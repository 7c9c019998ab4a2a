"""The tick (SPEC §12): reap runs whose process died, claim due occurrences, run them.

Exactly once, from any number of schedulers: a run starts only after its (job id, scheduled time)
row was inserted in the store's claim transaction (``SessionDB.claim_due_cron_runs``); whoever
loses that insert does nothing. Missed occurrences fire once on return (``plan_due``). A run whose
claimer died (same host: its pid is gone, or it is an earlier incarnation of this pid; any host: no
heartbeat for ``cron.stale_after`` seconds) becomes ``unknown`` and is never re-fired by itself.

``Scheduler.tick()`` is what ``hermes cron tick`` runs once; ``Scheduler.serve()`` is the loop
inside ``hermes gateway run``.
"""
from __future__ import annotations

import asyncio
import logging
import os
import secrets
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from pathlib import Path
from typing import Any, Optional

from cron import delivery, runner
from cron.schedule import Schedule, ScheduleError, get_zone, plan_due

log = logging.getLogger("hermes.cron")

_BOOT = secrets.token_hex(4)  # this process's incarnation: a reused pid is not the old claimer
_active: Optional["Scheduler"] = None  # the one serving in this process (the gateway's)
_local: Optional["Scheduler"] = None  # runs requested by hand where nothing serves
_local_lock = threading.Lock()


def active() -> Optional["Scheduler"]:
    """The scheduler serving in this process (the gateway's), if any."""
    return _active


def background(db: Any, cfg: Any) -> "Scheduler":
    """Where a run requested from a tool or a chat goes: the serving scheduler, else one kept for
    this process (its pool threads finish their runs before the process exits)."""
    global _local
    if _active is not None:
        return _active
    with _local_lock:
        if _local is None or _local.db is not db:
            _local = Scheduler(db, cfg)
        return _local


def run_once(db: Any, cfg: Any, job: dict[str, Any],
             cancel: Optional[threading.Event] = None) -> runner.RunOutcome:
    """Run ``job`` now in the foreground and return its outcome (``hermes cron run``, REPL)."""
    sched = Scheduler(db, cfg, max_parallel=1)
    if cancel is not None:
        sched.cancel = cancel
    _run, fut = sched.run_now(job)
    sched.wait()
    sched.shutdown()
    return fut.result()


def holder_id() -> str:
    """Who claimed a run: this host (``hermes_state.machine_id``), pid and incarnation."""
    from hermes_state import machine_id

    return f"host={machine_id()}:pid={os.getpid()}:boot={_BOOT}"


def claimer_is_dead(holder: str) -> bool:
    """Provably gone: an earlier incarnation of our own pid, or a pid gone from this host."""
    from hermes_state import holder_is_dead, machine_id

    fields = dict(p.split("=", 1) for p in (holder or "").split(":") if "=" in p)
    if fields.get("host") == machine_id() and fields.get("pid") == str(os.getpid()):
        return fields.get("boot") != _BOOT
    return holder_is_dead(holder)


def plan(job: dict[str, Any], now: float) -> dict[str, Any]:
    """``claim_due_cron_runs``'s plan: which occurrence fires, which were missed, the next run."""
    try:
        due = plan_due(Schedule.from_text(job["schedule"]), float(job["next_run_at"]), now,
                       get_zone(job.get("timezone")))
    except (ScheduleError, ValueError, TypeError, OverflowError) as exc:
        return {"error": f"the job cannot be scheduled ({exc}); it was paused: fix it with "
                         f"`hermes cron edit {job.get('id')} --schedule ...`"}
    note = None
    if due.missed_total:
        note = (f"fired once on return; {due.missed_total} earlier occurrence(s) were missed "
                "while no scheduler ran")
    return {"fire_at": due.fire_at, "missed": list(due.missed), "note": note,
            "next_run_at": due.next_run_at}


class Scheduler:
    """Claims and runs due jobs for this process; thread-safe, one per process is enough."""

    def __init__(self, db: Any, cfg: Any, *, sender: Optional[delivery.Sender] = None,
                 home: Optional[Path] = None, max_parallel: Optional[int] = None) -> None:
        from hermes_core.config import hermes_home

        self.db = db
        self.cfg = cfg
        self.home = home or hermes_home()
        self.sender = sender or delivery.registered_sender(cfg)
        self.holder = holder_id()
        c = cfg.cron
        self.timeout = float(c.run_timeout)
        self.stale_after = float(c.stale_after)
        self.tick_interval = float(c.tick_interval)
        self._pool = ThreadPoolExecutor(max_workers=max_parallel or c.max_parallel,
                                        thread_name_prefix="cron")
        self.beat_interval = min(self.tick_interval, self.stale_after / 4)
        self._running: dict[int, Future[runner.RunOutcome]] = {}
        self._lock = threading.Lock()
        self._beating: Optional[threading.Thread] = None
        self.cancel = threading.Event()
        self.last_tick_at: Optional[float] = None
        self.next_due: Optional[dict[str, Any]] = None
        self.last_error: Optional[str] = None

    # -- one tick ---------------------------------------------------------------------------
    def tick(self, now: Optional[float] = None
             ) -> list[tuple[dict[str, Any], Future[runner.RunOutcome]]]:
        """Reap, claim, and start every due run in the pool; returns (run, future) pairs."""
        return [(run, self.start(run)) for run in self.claim(now)]

    def claim(self, now: Optional[float] = None) -> list[dict[str, Any]]:
        """Reap dead runs and claim the due occurrences (not started). A failing store is logged
        and kept in ``last_error``, never raised: the next tick tries again."""
        now = time.time() if now is None else now
        claimed: list[dict[str, Any]] = []
        try:
            self.reap(now)
            claimed = self.db.claim_due_cron_runs(now, self.holder, plan)
            self.next_due = self.db.next_cron_job()
            self.last_error = None
        except Exception as exc:  # noqa: BLE001 - the scheduler keeps ticking
            self.last_error = f"{type(exc).__name__}: {exc}"
            log.exception("cron tick failed")
        self.last_tick_at = now
        return claimed

    def reap(self, now: float) -> int:
        """Mark ``unknown`` the runs whose claimer is gone (never ours)."""
        dead = []
        for run in self.db.running_cron_runs():
            if run["claimed_by"] == self.holder:
                continue
            beat = run.get("heartbeat_at") or run.get("started_at") or 0
            if claimer_is_dead(run["claimed_by"] or "") or beat < now - self.stale_after:
                dead.append(run["id"])
        if dead:
            n = self.db.mark_cron_runs_unknown(
                dead, "the process running it stopped before it finished; not re-run automatically")
            log.warning("cron: %d run(s) left by a dead process marked unknown", n)
        return len(dead)

    def start(self, run: dict[str, Any]) -> Future[runner.RunOutcome]:
        fut = self._pool.submit(runner.execute, run, db=self.db, cfg=self.cfg, sender=self.sender,
                                home=self.home, timeout=self.timeout, cancel=self.cancel)
        with self._lock:
            self._running[run["run_id"]] = fut
            if self._beating is None:
                self._beating = threading.Thread(target=self._beat, name="cron-heartbeat",
                                                 daemon=True)
                self._beating.start()
        fut.add_done_callback(lambda _f, rid=run["run_id"]: self._forget(rid))
        return fut

    def _forget(self, run_id: int) -> None:
        with self._lock:
            self._running.pop(run_id, None)

    def _beat(self) -> None:
        """While this process has runs, tell the store it is alive (other hosts cannot see our
        pid; a run without a heartbeat for ``cron.stale_after`` seconds becomes ``unknown``)."""
        while True:
            with self._lock:
                if not self._running:
                    self._beating = None
                    return
            try:
                self.db.heartbeat_cron_runs(self.holder)
            except Exception as exc:  # noqa: BLE001 - try again at the next beat
                log.warning("cron heartbeat failed: %s", exc)
            time.sleep(self.beat_interval)

    def run_now(self, job: dict[str, Any], now: Optional[float] = None
                ) -> tuple[dict[str, Any], Future[runner.RunOutcome]]:
        """A manual run of ``job`` (it neither moves the schedule nor counts toward repeat)."""
        run = self.db.claim_manual_cron_run(job["id"], time.time() if now is None else now,
                                            self.holder)
        if run is None:
            raise LookupError(f"job {job['id']} no longer exists")
        return run, self.start(run)

    @property
    def running(self) -> int:
        with self._lock:
            return len(self._running)

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Block until every started run has finished; False on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._lock:
                futures = [f for f in self._running.values() if not f.done()]
            if not futures:
                return True
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            step = self.tick_interval if left is None else min(self.tick_interval, left)
            wait_futures(futures, timeout=step, return_when=FIRST_COMPLETED)

    def shutdown(self, drain_timeout: float = 0.0) -> None:
        """Let running runs finish for ``drain_timeout`` seconds, then interrupt them; claimed
        runs still queued for a worker are recorded ``interrupted`` (they are not re-run)."""
        with self._lock:
            queued = dict(self._running)
        self._pool.shutdown(wait=False, cancel_futures=True)
        for run_id, fut in queued.items():
            if fut.cancelled():
                self.db.finish_cron_run(run_id, "interrupted",
                                        error="the process stopped before this run started")
        if not self.wait(drain_timeout):
            self.cancel.set()
            self.wait(runner.INTERRUPT_GRACE + 5)

    # -- the gateway's loop -----------------------------------------------------------------
    async def serve(self, stop: asyncio.Event) -> None:
        """Tick now and then every ``cron.tick_interval`` seconds until ``stop`` is set."""
        global _active
        _active = self
        try:
            while not stop.is_set():
                await asyncio.to_thread(self.tick)
                try:
                    await asyncio.wait_for(stop.wait(), timeout=self.tick_interval)
                except asyncio.TimeoutError:
                    pass
        finally:
            if _active is self:
                _active = None

    def status(self) -> dict[str, Any]:
        """For ``hermes gateway status``: the last tick and the next due job."""
        nxt = self.next_due
        return {"last_tick": self.last_tick_at, "running": self.running, "error": self.last_error,
                "next": None if not nxt else {"id": nxt["id"], "name": nxt.get("name"),
                                              "at": nxt.get("next_run_at")}}

