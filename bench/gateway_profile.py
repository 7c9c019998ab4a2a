"""Where the gateway's CPU goes in a turn (not a test): cProfile over every thread of the gateway.

    .venv/bin/python bench/gateway_profile.py [--turns 60] [--top 10] [--streamed | --plain] [--no-tool]

Starts the tool-calling fake provider of ``bench/gateway_load.py`` (each turn: a tool call, then
the answer) and ``hermes gateway run --api-server`` under a profiler on every thread (the event loop
and the turn threads, timed by thread CPU time), drives ``--turns`` turns over four sessions after a
warm-up, then prints the gateway's CPU per turn (from /proc, the profiler included: compare runs
of this script with each other, not with ``gateway_load.py``) and the top functions by own time,
plain JSON and streamed.
Prints the machine's load next to every figure. Blocking waits (``SimpleQueue.get``,
``lock.acquire``, ``epoll.poll``) still show large times at the top: they are not CPU, skip them.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import pstats
import signal
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.gateway_load import (AUTH, BENCH_KEY, TOOL_PROVIDER, _drive, _spawn, _stop,  # noqa: E402
                                cpu_seconds, load_average)

# Run inside the gateway: a profiler per thread; SIGUSR2 clears them all, SIGUSR1 writes the sum.
HOOK = r"""
import cProfile, pstats, runpy, signal, sys, threading, time
profs, lock, OUT = [], threading.Lock(), sys.argv.pop(1)
def own(*_):
    sys.setprofile(None)
    p = cProfile.Profile(time.thread_time)
    with lock:
        profs.append(p)
    p.enable()
threading.setprofile(own)
main = cProfile.Profile(time.thread_time); profs.append(main); main.enable()
def clear(*_):
    with lock:
        for p in profs:
            p.clear()
def dump(*_):
  try:
    with lock:
        stats = None
        for p in profs:
            p.create_stats()
            if p.stats:
                stats = pstats.Stats(p) if stats is None else stats.add(p)
        stats.dump_stats(OUT)
        main.enable()
  except Exception:
    import traceback; traceback.print_exc(file=open(OUT + ".err", "w"))
signal.signal(signal.SIGUSR2, clear)
signal.signal(signal.SIGUSR1, dump)
sys.argv[0] = "hermes"
runpy.run_module("hermes_cli.main", run_name="__main__")
"""


def profile_run(args: argparse.Namespace, stream: bool) -> None:
    home = tempfile.mkdtemp(prefix="hermes-prof-")
    out = Path(home, "turns.prof")
    env = dict(os.environ, HERMES_HOME=home, PYTHONPATH=str(REPO))
    procs = []
    try:
        provider = ([sys.executable, "-m", "tests.fake_provider", "--port", "0"] if args.no_tool
                    else [sys.executable, "-c", TOOL_PROVIDER, "0"])
        fp, ready = _spawn(provider, env, "READY")
        procs.append(fp)
        gw_env = dict(env, OPENAI_BASE_URL=ready.split()[1], OPENAI_API_KEY="bench",
                      HERMES_MODEL="fake-model", API_SERVER_KEY=BENCH_KEY)
        gw, ready = _spawn([sys.executable, "-c", HOOK, str(out), "gateway", "run", "--api-server",
                            "--port", "0"], gw_env, "READY gateway")
        procs.append(gw)
        url = ready.split("api=")[1] + "/v1/chat/completions"
        errors: list[str] = []
        names = [f"s{i}" for i in range(4)]
        asyncio.run(_drive(url, names, 3, [], errors, headers=AUTH, stream=stream))  # warm
        if args.new_sessions:  # every measured turn is a new session's first
            names = [f"new{i}" for i in range(args.turns)]
        gw.send_signal(signal.SIGUSR2)
        time.sleep(0.5)
        cpu0 = cpu_seconds(gw.pid)
        asyncio.run(_drive(url, names, args.turns // len(names), [], errors, headers=AUTH,
                           stream=stream))
        cpu = cpu_seconds(gw.pid) - cpu0
        gw.send_signal(signal.SIGUSR1)
        for _ in range(100):
            if out.exists() and out.stat().st_size:
                break
            time.sleep(0.1)
        time.sleep(0.5)
        turns = len(names) * (args.turns // len(names))
        print(f"\n=== {'streamed' if stream else 'plain'}: {turns} turns, gateway CPU "
              f"{cpu / turns * 1000:.2f} ms/turn under the profiler (load {load_average()})"
              + (f"; errors: {sorted(set(errors))[:3]}" if errors else ""))
        stats = pstats.Stats(str(out))
        stats.sort_stats("tottime").print_stats(args.top)
        if args.cumulative:
            stats.sort_stats("cumulative").print_stats(args.cumulative, args.top)
    finally:
        _stop(procs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--turns", type=int, default=60)
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--cumulative", metavar="REGEX",
                    help="also the top functions by cumulative time whose path matches REGEX")
    ap.add_argument("--no-tool", action="store_true",
                    help="turns without a tool call (one provider call each, as gateway_load.py)")
    ap.add_argument("--new-sessions", action="store_true",
                    help="each turn a new session's first (creates the session and its agent)")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--streamed", action="store_true", help="only the streamed turns")
    mode.add_argument("--plain", action="store_true", help="only the plain turns")
    args = ap.parse_args()
    print(f"load average before: {load_average()} ({os.cpu_count()} cores)")
    for stream in (False, True):
        if (stream and args.plain) or (not stream and args.streamed):
            continue
        profile_run(args, stream)
    return 0


if __name__ == "__main__":
    sys.exit(main())
