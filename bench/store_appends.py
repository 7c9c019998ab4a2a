"""What one SQLite append costs a turn, tail included (not a test).

    .venv/bin/python bench/store_appends.py [--appends 3000] [--gap-ms 1.0] [--sessions 300]

Appends one answer-sized message at a time to a fresh store under a temp directory, rotating
over ``--sessions`` sessions, with ``--gap-ms`` of busy work between two appends (the rest of a
turn). Prints the append's wall time (median, mean, p99, max), the process's CPU per append
(the checkpoint thread included), the WAL file's size at the end and the machine's load.
The tail is what a checkpoint inside a commit costs: every turn behind that commit waits.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hermes_state import SessionDB  # noqa: E402

ANSWER = {"role": "assistant", "content": "Answer: here is a detailed reply text " * 6}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--appends", type=int, default=3000)
    ap.add_argument("--gap-ms", type=float, default=1.0)
    ap.add_argument("--sessions", type=int, default=300)
    args = ap.parse_args()
    load = os.getloadavg()
    path = Path(tempfile.mkdtemp(prefix="hermes-appends-")) / "state.db"
    db = SessionDB(path)
    took: list[float] = []
    mine = 0.0  # this thread's CPU inside the appends
    process, thread = time.process_time(), time.thread_time()
    for n in range(args.appends):
        t, c = time.perf_counter(), time.thread_time()
        db.append_messages(f"s{n % args.sessions}", [ANSWER])
        took.append(time.perf_counter() - t)
        mine += time.thread_time() - c
        until = time.perf_counter() + args.gap_ms / 1000
        while time.perf_counter() < until:
            pass
    others = (time.process_time() - process) - (time.thread_time() - thread)
    cpu = (mine + others) / args.appends
    wal = path.with_name("state.db-wal").stat().st_size
    db.close()
    took.sort()
    us = [round(x * 1e6) for x in (statistics.median(took), statistics.mean(took),
                                   took[int(len(took) * 0.99)], took[-1])]
    print(f"{args.appends} appends, {args.gap_ms} ms apart, {args.sessions} sessions (SQLite)")
    print(f"append wall time (us): median {us[0]:,}, mean {us[1]:,}, p99 {us[2]:,}, max {us[3]:,}")
    print(f"CPU per append        : {cpu * 1e6:,.0f} us (this thread's, plus every other "
          "thread's: the checkpoints)")
    print(f"WAL file at the end   : {wal / 2**20:.1f} MB")
    print(f"machine load before {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, after "
          f"{os.getloadavg()[0]:.2f} (cores: {os.cpu_count()})")


if __name__ == "__main__":
    main()
