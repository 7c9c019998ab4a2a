"""What a fenced append costs on PostgreSQL (not a test): the median wall time of one
``append_messages`` with and without a lease fence, while 1, 100 and 1,000 other advisory locks
are held by this process (a gateway worker holds one per turn in flight).

    .venv/bin/python bench/store_fence.py [--store postgresql://…] [--runs 300]

Without ``--store`` it starts a throwaway cluster (initdb + pg_ctl, as ``tests/postgres.py``).
Run it as ``taskset -c 0 …`` for steadier figures (client and server on one core).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def median_us(fn, runs: int) -> float:
    for _ in range(20):
        fn()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e6


def measure(url: str, runs: int) -> None:
    from hermes_state import SessionDB

    db = SessionDB(url=url)
    msg = [{"role": "user", "content": "tell me more about the topic " * 6}]
    sid = db.create_session()
    with ExitStack() as held:
        count = 0
        for want in (1, 100, 1000):
            while count < want:
                held.enter_context(db.advisory_lock(f"turn:other-{count}", wait=0))
                count += 1
            with db.advisory_lock(f"turn:{sid}", wait=0):
                fence = db.lock_fence(f"turn:{sid}")
                plain = median_us(lambda: db.append_messages(sid, msg), runs)
                fenced = median_us(lambda: db.append_messages(sid, msg, fence=fence), runs)
            print(f"{want:>5} other locks held: append {plain:6.0f} us, fenced {fenced:6.0f} us "
                  f"(+{fenced - plain:.0f}); load {os.getloadavg()[0]:.2f}", flush=True)
    db.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--store", help="postgresql://… (default: a throwaway cluster)")
    ap.add_argument("--runs", type=int, default=300)
    args = ap.parse_args()
    os.environ["HERMES_HOME"] = tempfile.mkdtemp(prefix="hermes-bench-")
    if args.store:
        return measure(args.store, args.runs)
    from tests.postgres import Cluster, find_bindir

    bindir = find_bindir()
    if bindir is None:
        raise SystemExit("no PostgreSQL here (initdb/pg_ctl); pass --store postgresql://…")
    cluster = Cluster(bindir)
    try:
        measure(cluster.new_database(), args.runs)
    finally:
        cluster.destroy()


if __name__ == "__main__":
    main()
