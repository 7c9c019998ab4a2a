"""Scheduler benchmark (SPEC §12): what a tick costs, and whether concurrent schedulers ever fire twice.

    .venv/bin/python bench/cron.py [--jobs 10000] [--due 100] [--rounds 5] [--occurrences 1000] [--procs 4]

1. Tick cost: a store holding ``--jobs`` jobs of which ``--due`` are due; the time of the claim
   transaction (``SessionDB.claim_due_cron_runs`` with ``cron.scheduler.plan``) and of a whole
   ``Scheduler.claim()`` (reap dead runs + claim + next due job); the due jobs are half cron
   expressions, half intervals. Target: claim <= 50 ms.
2. Duplicate fires: ``--procs`` processes, each its own Scheduler on the same store, claim the same
   due occurrences in lock-step rounds (a barrier releases them together) until ``--occurrences``
   occurrences have come due. Counts occurrences claimed twice. Target: 0.

Runs are claimed, not executed (no model is called): the claim is what decides exactly-once.
"""
from __future__ import annotations

import argparse
import logging
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hermes_core.config import HermesConfig  # noqa: E402
from cron.scheduler import Scheduler, plan  # noqa: E402
from hermes_state import SessionDB  # noqa: E402

CFG = HermesConfig.model_validate({"timezone": "Europe/Paris"})
T0 = float(int(time.time() // 3600 * 3600))  # on the hour


def _job(i: int, next_run_at: float, schedule: str) -> dict:
    return {"id": f"j{i:06d}", "name": f"job {i}", "prompt": "benchmark", "schedule": schedule,
            "timezone": "Europe/Paris", "deliver": "local", "state": "scheduled",
            "next_run_at": next_run_at, "created_at": T0 - 86400}


def fill(db: SessionDB, n: int) -> None:
    """``n`` jobs due an hour from now (half cron expressions, half intervals)."""
    for i in range(n):
        db.add_cron_job(_job(i, T0 + 3600 + i, "*/5 * * * *" if i % 2 else "every 10m"))


def tick_cost(n: int, due: int, rounds: int) -> None:
    claim_ms, whole_ms = [], []
    with tempfile.TemporaryDirectory() as tmp, SessionDB(Path(tmp) / "state.db") as db:
        started = time.perf_counter()
        fill(db, n)
        print(f"(store filled with {n:,} jobs in {time.perf_counter() - started:.1f} s)")
        sched = Scheduler(db, CFG)
        for r in range(-2, 2 * rounds):  # two untimed warm-up rounds (imports, caches)
            now = T0 - 86400 * (2 * rounds - r)  # a different past day each round: fresh occurrences
            for i in range(due):  # the same jobs (half of each kind) each round
                db.update_cron_job(f"j{i:06d}", next_run_at=now - 1)
            started, cpu = time.perf_counter(), time.process_time()
            got = db.claim_due_cron_runs(now, "bench", plan) if r % 2 == 0 else sched.claim(now)
            if r >= 0:
                (claim_ms if r % 2 == 0 else whole_ms).append(
                    ((time.perf_counter() - started) * 1000, (time.process_time() - cpu) * 1000))
            assert len(got) == due and sched.last_error is None, (len(got), sched.last_error)
            for run in got:  # untimed: those runs finish and their jobs wait for tomorrow
                db.finish_cron_run(run["run_id"], "ok")
                db.update_cron_job(run["id"], next_run_at=T0 + 3600)
    print(f"tick cost, {n:,} jobs of which {due} due ({rounds} rounds each; wall clock, and this "
          "process's CPU time, which other load on the machine does not inflate):")
    for label, samples in (("claim transaction", claim_ms), ("whole tick (reap + claim + next due)", whole_ms)):
        wall, cpu = [w for w, _ in samples], [c for _, c in samples]
        print(f"  {label}: wall median {statistics.median(wall):.1f} ms (min {min(wall):.1f}, max "
              f"{max(wall):.1f}); CPU median {statistics.median(cpu):.1f} ms   (target <= 50 ms)")


def _racer(path: str, rounds: int, barrier, out) -> None:
    with SessionDB(path) as db:
        sched = Scheduler(db, CFG)
        mine = []
        for r in range(rounds):
            barrier.wait()
            for run in sched.claim(T0 + r * 60 + 1):
                mine.append((run["id"], run["scheduled_at"]))
            assert sched.last_error is None, sched.last_error
        out.put(mine)


def due_total(jobs: int, rounds: int) -> int:
    return jobs * rounds


def duplicates(occurrences: int, procs: int) -> None:
    jobs = 100
    rounds = max(1, occurrences // jobs)
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "state.db")
        with SessionDB(path) as db:
            for i in range(jobs):
                db.add_cron_job(_job(i, T0, "every 1m"))
        ctx = mp.get_context("fork")
        barrier, out = ctx.Barrier(procs), ctx.Queue()
        workers = [ctx.Process(target=_racer, args=(path, rounds, barrier, out)) for _ in range(procs)]
        start = time.perf_counter()
        for w in workers:
            w.start()
        claims = [c for _ in workers for c in out.get(timeout=600)]
        for w in workers:
            w.join()
        elapsed = time.perf_counter() - start
        with SessionDB(path) as db:
            rows = len(db.list_cron_runs(limit=10 * due_total(jobs, rounds)))
    due = jobs * rounds
    dup = len(claims) - len(set(claims))
    print(f"duplicate fires, {procs} schedulers (processes) racing over {due:,} occurrences "
          f"({jobs} jobs x {rounds} rounds, {elapsed:.1f} s):")
    print(f"  claimed {len(claims):,}, distinct {len(set(claims)):,}, run rows {rows:,}, "
          f"missed by all {due - len(set(claims))}, duplicates {dup}   (target 0)")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--jobs", type=int, default=10_000)
    p.add_argument("--due", type=int, default=100)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--occurrences", type=int, default=1000)
    p.add_argument("--procs", type=int, default=4)
    a = p.parse_args()
    logging.disable(logging.WARNING)  # racing schedulers reap each other's runs (simulated clocks)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    tick_cost(a.jobs, a.due, a.rounds)
    duplicates(a.occurrences, a.procs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
