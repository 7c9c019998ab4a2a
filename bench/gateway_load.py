"""Gateway load benchmark (not a test): 100 concurrent sessions through the API server.

    .venv/bin/python bench/gateway_load.py [--sessions 100] [--rounds 10] [--delay 1.0] [--streamed | --cold]
    .venv/bin/python bench/gateway_load.py --sessions 1000 --delay 5 --rounds 3 --pattern staggered --pin
                                                                  # the 1,000-session case
    .venv/bin/python bench/gateway_load.py --workers 2 [--store postgresql://…]  # SQLite/1 vs Postgres/2
    .venv/bin/python bench/gateway_load.py --platform matrix   # 100 Matrix rooms on a real Synapse

``--workers N`` runs the same load twice, SQLite with one process then ``gateway run --workers N`` on
PostgreSQL (``--store URL``, or a throwaway cluster of its own), and prints the two side by side; the
CPU and memory figures of the second run add up every worker.

Starts ``bench/async_provider.py --delay 1.0`` (answers after a fixed delay, no thread per request;
``--threaded-provider``: the tests' ``tests.fake_provider`` instead) and
``python -m hermes_cli.main gateway run --api-server`` as subprocesses in a throwaway HERMES_HOME, then drives
``--sessions`` clients (each its own ``X-Hermes-Session-Id``, so each has a cached agent) for
``--rounds`` sequential turns each. Prints completed turns/s against the ideal (sessions / delay),
the latency the gateway adds on top of the provider's fixed delay (p50, p99), and the resident
memory each additional idle session costs (RSS growth of the gateway over a second wave of new
sessions, measured after the first wave so thread stacks and allocator arenas are already warm).
Targets: >= 80% of ideal (>= 90% for 1,000 sessions behind a 5 s provider, default configuration),
added p99 <= 100 ms, <= 2 MB per idle session. The first wave also prints the RSS each in-flight turn
costs (gateway RSS at the peak of turns in flight, read from ``/health/detailed``, over the RSS before).

``--cold`` starts the gateway and sends the burst the moment it says READY (staggered over one delay,
then lockstep), once with ``gateway.warmup: false`` and once with the default warm-up: the first turns
after a restart should cost what later ones do (target: added p99 <= 100 ms, staggered, cold).

Two arrival patterns are measured: lockstep (every session sends at the same instant, the worst burst;
a fixed provider delay keeps waves aligned) and staggered (session starts spread over one delay, as
independent users would be). In lockstep the p99 is the queue a 100-request burst forms behind the
gateway's ~2.5 ms of per-turn Python CPU (one process, one GIL), about half of it the agent's own turn.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Optional

import aiohttp

REPO = Path(__file__).resolve().parents[1]
BENCH_KEY = "bench-api-key-0123456789abcdef"  # the API server always requires a key
AUTH = {"Authorization": f"Bearer {BENCH_KEY}"}


def _spawn(args: list[str], env: dict[str, str], ready_prefix: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(args, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    lines: "queue.Queue[str]" = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout], daemon=True).start()  # type: ignore[union-attr]
    while True:
        line = lines.get(timeout=120)
        if line.startswith(ready_prefix):
            return proc, line.strip()


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    if not values:  # e.g. "later turns" of a one-round run
        return float("nan")
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def cpu_seconds(pid: int, thread: Optional[int] = None) -> float:
    """CPU of process ``pid``, or of its one thread ``thread`` (the main thread, ``thread=pid``, runs
    the gateway's event loop)."""
    where = f"/proc/{pid}/task/{thread}/stat" if thread else f"/proc/{pid}/stat"
    fields = Path(where).read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def context_switches(pid: int) -> int:
    """Voluntary and involuntary switches of every live thread of ``pid``: a GIL handed between
    many waiting threads shows here before it shows in the CPU figure."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            for line in (task / "status").read_text().splitlines():
                if "ctxt_switches:" in line:
                    total += int(line.split()[1])
        except (OSError, ValueError, IndexError):
            continue  # the thread ended meanwhile
    return total


async def _drive(url: str, sessions: list[str], rounds: int, latencies: list[float], errors: list[str],
                 headers: Optional[dict[str, str]] = None, spread: float = 0.0,
                 first: Optional[list[float]] = None, stream: bool = False) -> None:
    conn = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=conn, timeout=aiohttp.ClientTimeout(total=120)) as http:
        async def client(idx: int, name: str) -> None:
            await asyncio.sleep(spread * idx / max(1, len(sessions)))
            for i in range(rounds):
                body = {"model": "fake-model", "messages": [{"role": "user", "content": f"turn {i} from {name}"}],
                        "stream": stream}
                t0 = time.perf_counter()
                try:
                    async with http.post(url, json=body, headers={"X-Hermes-Session-Id": name, **(headers or {})}) as r:
                        raw = await r.read()
                        if stream and b"event: hermes.tool.progress" not in raw:
                            errors.append("a streamed turn without tool progress events")
                        if r.status != 200:
                            errors.append(f"HTTP {r.status}")
                            continue
                except aiohttp.ClientError as exc:
                    errors.append(f"{type(exc).__name__}: {exc}")
                    continue
                latencies.append(time.perf_counter() - t0)
                if i == 0 and first is not None:
                    first.append(latencies[-1])

        await asyncio.gather(*(client(i, s) for i, s in enumerate(sessions)))


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sessions", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--delay", type=float, default=1.0)
    ap.add_argument("--idle-sessions", type=int, default=200, help="second wave used for the memory figure")
    ap.add_argument("--pattern", choices=("both", "lockstep", "staggered"), default="both",
                    help="the arrival patterns measured (staggered: session starts spread over one delay)")
    ap.add_argument("--pin", action="store_true",
                    help="the gateway on CPU 0, this load driver and the provider on CPU 1 (taskset), "
                         "so the figures are the gateway's and not the driver's")
    ap.add_argument("--streamed", action="store_true",
                    help="one tool per turn, plain vs streamed (SSE with hermes.tool.progress events)")
    ap.add_argument("--cold", action="store_true", help="the burst right after the gateway starts")
    ap.add_argument("--threaded-provider", action="store_true",
                    help="the tests' threaded fake provider instead of bench/async_provider.py")
    ap.add_argument("--platform", choices=("matrix",),
                    help="rooms on a real chat server instead of API sessions (bench/gateway_platform.py)")
    ap.add_argument("--workers", type=int, default=1,
                    help="also measure `gateway run --workers N` on PostgreSQL, next to SQLite/1 worker")
    ap.add_argument("--store", help="postgresql://… for the --workers run, or 'throwaway' (default): a "
                                    "cluster of its own (initdb + pg_ctl, as tests/postgres.py makes)")
    args = ap.parse_args(argv)
    print(f"load average before: {load_average()} ({os.cpu_count()} cores; other work on this host counts)")
    if args.platform:
        from gateway_platform import run_matrix

        return run_matrix(args)
    if args.pin:
        pin(args)
    if args.streamed:
        return run_streamed(args)
    if args.cold:
        return run_cold(args)
    if args.workers <= 1 and not args.store:
        return 0 if not run_config(args, None, 1)["errors"] else 1
    cluster = None
    url = args.store if args.store and args.store != "throwaway" else None
    try:
        if url is None:
            sys.path.insert(0, str(REPO))  # run as a script: the repo's test helpers
            from tests.postgres import Cluster, find_bindir

            bindir = find_bindir()
            if bindir is None:
                print("no PostgreSQL here (initdb/pg_ctl); pass --store postgresql://…", file=sys.stderr)
                return 2
            cluster = Cluster(bindir)
            url = cluster.new_database()
        print("\n=== SQLite, 1 worker ===")
        base = run_config(args, None, 1)
        print(f"\n=== PostgreSQL, {args.workers} worker(s) ===")
        multi = run_config(args, url, max(1, args.workers))
    finally:
        if cluster is not None:
            cluster.destroy()
    compare(base, multi, "sqlite/1 worker", f"postgresql/{args.workers} workers")
    return 0 if not (base["errors"] or multi["errors"]) else 1


GATEWAY_CPU, DRIVER_CPU = "0", "1"
PIN_PREFIX: list[str] = []  # what the gateway's command line starts with (``--pin``: taskset)


def pin(args: argparse.Namespace) -> None:
    """``--pin``: this process (the load driver) and the provider it starts on one CPU, the gateway
    on the other."""
    if (os.cpu_count() or 1) < 2 or not shutil_which("taskset"):
        print("--pin needs 2 CPUs and taskset (util-linux); running unpinned", file=sys.stderr)
        return
    os.sched_setaffinity(0, {int(DRIVER_CPU)})  # the provider subprocess inherits it
    PIN_PREFIX[:] = ["taskset", "-c", GATEWAY_CPU]
    print(f"pinned: gateway on CPU {GATEWAY_CPU}; load driver and provider on CPU {DRIVER_CPU}")


def shutil_which(name: str) -> Optional[str]:
    import shutil

    return shutil.which(name)


def waves(args: argparse.Namespace) -> list[tuple[str, float]]:
    """The arrival patterns ``--pattern`` asks for, as (label, spread in seconds)."""
    out = []
    if args.pattern in ("both", "lockstep"):
        out.append(("lockstep: all sessions send at the same instant", 0.0))
    if args.pattern in ("both", "staggered"):
        out.append(("staggered: session starts spread over one provider delay", args.delay))
    return out


def compare(a: dict, b: dict, label_a: str, label_b: str) -> None:
    """The two runs' headline figures side by side."""
    print(f"\n{'':36}{label_a:>22}{label_b:>26}")
    for wave in ("lockstep", "staggered"):
        if wave not in a or wave not in b:
            continue
        ra, rb = a[wave], b[wave]
        print(f"{wave + ' throughput vs ideal':36}{ra['rate']:>13.1f}/s {ra['share']:>5.0%}"
              f"{rb['rate']:>17.1f}/s {rb['share']:>5.0%}")
        print(f"{wave + ' added p50 / p99 (ms)':36}{ra['p50']:>13.0f} / {ra['p99']:<6.0f}"
              f"{rb['p50']:>17.0f} / {rb['p99']:<6.0f}")
        print(f"{wave + ' gateway CPU per turn (ms)':36}{ra['cpu_ms']:>22.2f}{rb['cpu_ms']:>26.2f}")
    print(f"{'errors':36}{a['errors']:>22}{b['errors']:>26}")


def worker_pids(home: str, supervisor: int) -> list[int]:
    """The pids serving turns: the workers of a supervisor (gateway.json), else the gateway itself."""
    import json

    try:
        data = json.loads(Path(home, "gateway.json").read_text())
    except (OSError, ValueError):
        return [supervisor]
    pids = [int(w["pid"]) for w in data.get("workers") or [] if w.get("pid")]
    return pids or [supervisor]


def provider_command(args: argparse.Namespace) -> list[str]:
    """The plain turns' provider: ``bench/async_provider.py`` (one event loop, no thread per
    request), or with ``--threaded-provider`` the tests' ``ThreadingHTTPServer`` fake, whose own
    lateness at 1,000 requests in flight was part of the gateway's figures before."""
    if args.threaded_provider:
        return [sys.executable, "-m", "tests.fake_provider", "--port", "0", "--delay", str(args.delay)]
    return [sys.executable, str(REPO / "bench" / "async_provider.py"), "--port", "0",
            "--delay", str(args.delay)]


def run_config(args: argparse.Namespace, store: Optional[str], workers: int) -> dict:
    """One gateway (``workers`` processes on ``store``, SQLite when None) under the 100-session load;
    prints the figures and returns them."""
    home = tempfile.mkdtemp(prefix="hermes-bench-")
    env = dict(os.environ, HERMES_HOME=home, PYTHONPATH=str(REPO))
    env.pop("HERMES_DATABASE_URL", None)
    procs: list[subprocess.Popen[str]] = []
    out: dict = {"errors": 0}
    try:
        fp, ready = _spawn(provider_command(args), env, "READY")
        procs.append(fp)
        provider = ready.split()[1]
        gw_env = dict(env, OPENAI_BASE_URL=provider, OPENAI_API_KEY="bench", HERMES_MODEL="fake-model",
                      API_SERVER_KEY=BENCH_KEY, **({"HERMES_DATABASE_URL": store} if store else {}))
        flags = ["--workers", str(workers)] if workers > 1 else []
        gw, ready = _spawn([*PIN_PREFIX, sys.executable, "-m", "hermes_cli.main", "gateway", "run", "--api-server",
                            "--port", "0", *flags], gw_env, "READY gateway")
        procs.append(gw)
        pids = worker_pids(home, gw.pid)
        url = ready.split("api=")[1] + "/v1/chat/completions"

        # provider alone, same concurrency: the floor the gateway is measured against
        base_lat: list[float] = []
        errors: list[str] = []
        asyncio.run(_drive(provider + "/chat/completions", [f"p{i}" for i in range(args.sessions)], 1, base_lat, errors))
        asyncio.run(_drive(url, ["warmup"], 1, [], errors, headers=AUTH))

        ideal = args.sessions / args.delay
        print(f"sessions={args.sessions} rounds={args.rounds} provider_delay={args.delay:.1f}s "
              f"store={'postgresql' if store else 'sqlite'} workers={workers} "
              f"(gateway and provider on this host, {os.cpu_count()} cores)")
        for n, (label, spread) in enumerate(waves(args)):
            lat: list[float] = []
            first: list[float] = []
            sampler = PeakSampler(url.rsplit("/v1/", 1)[0], gw.pid) if n == 0 and workers == 1 else None
            cpu0, t0 = sum(cpu_seconds(p) for p in pids), time.perf_counter()
            loop0 = sum(cpu_seconds(p, p) for p in pids)
            switches0 = sum(context_switches(p) for p in pids)
            asyncio.run(_drive(url, [f"{spread}-{i}" for i in range(args.sessions)], args.rounds, lat, errors,
                               headers=AUTH, spread=spread, first=first))
            if sampler is not None:
                sampler.stop()
            elapsed = time.perf_counter() - t0 - spread * (args.sessions - 1) / args.sessions
            cpu = sum(cpu_seconds(p) for p in pids) - cpu0
            loop_cpu = sum(cpu_seconds(p, p) for p in pids) - loop0
            switches = sum(context_switches(p) for p in pids) - switches0
            added = [(x - args.delay) * 1000 for x in lat]
            rate = len(lat) / elapsed
            print(f"\n[{label}] turns={len(lat)} errors={len(errors)} elapsed={elapsed:.2f}s")
            print(f"  throughput: {rate:.1f} turns/s vs ideal {ideal:.0f}/s = {rate / ideal:.0%} (target >= 80%)")
            print(f"  added latency over the provider delay: p50 {pct(added, 50):.0f} ms, p99 {pct(added, 99):.0f} ms, "
                  f"max {max(added):.0f} ms (target p99 <= 100 ms)")
            # the provider alone, driven the same way: what the load driver and provider add
            alone: list[float] = []
            asyncio.run(_drive(provider + "/chat/completions", [f"a{spread}-{i}" for i in range(args.sessions)],
                               args.rounds, alone, errors, spread=spread))
            alone_ms = [(x - args.delay) * 1000 for x in alone]
            print(f"    the provider alone, same pattern (no gateway): p50 {pct(alone_ms, 50):.0f} ms, "
                  f"p99 {pct(alone_ms, 99):.0f} ms (part of the figure above)")
            later = [(x - args.delay) * 1000 for x in lat]
            for x in first:
                later.remove((x - args.delay) * 1000)
            print(f"    a session's first turn (creates the session and its agent): p99 "
                  f"{pct([(x - args.delay) * 1000 for x in first], 99):.0f} ms; later turns: p50 {pct(later, 50):.0f} ms, "
                  f"p99 {pct(later, 99):.0f} ms")
            print(f"  gateway CPU per turn: {cpu / max(1, len(lat)) * 1000:.2f} ms"
                  + (f" (sum of {len(pids)} workers)" if len(pids) > 1 else "")
                  + f" (event loop {loop_cpu / max(1, len(lat)) * 1000:.2f} ms)"
                  + f"; {switches / max(1, len(lat)):.0f} thread switches a turn")
            if sampler is not None:
                sampler.report(args.sessions)
            out["lockstep" if spread == 0.0 else "staggered"] = {
                "rate": rate, "share": rate / ideal, "p50": pct(added, 50), "p99": pct(added, 99),
                "cpu_ms": cpu / max(1, len(lat)) * 1000}

        time.sleep(1.0)
        rss0 = sum(rss_mb(p) for p in pids)
        asyncio.run(_drive(url, [f"idle{i}" for i in range(args.idle_sessions)], 1, [], errors, headers=AUTH))
        time.sleep(1.0)
        rss1 = sum(rss_mb(p) for p in pids)

        floor = [(x - args.delay) * 1000 for x in base_lat]
        print(f"\nprovider alone, {args.sessions} at once: p50 {pct(floor, 50):.0f} ms, p99 {pct(floor, 99):.0f} ms "
              "over its delay (part of every 'added' figure above)")
        if args.idle_sessions > 0:  # 0: no idle wave, no memory figure
            print(f"memory: gateway RSS {rss0:.0f} MB -> {rss1:.0f} MB after "
                  f"{args.idle_sessions} more idle sessions = "
                  f"{(rss1 - rss0) / args.idle_sessions:.2f} MB per idle session (target <= 2 MB)"
                  + (f" (sum of {len(pids)} workers)" if len(pids) > 1 else ""))
        print(f"load average after: {load_average()}")
        if errors:
            print(f"errors ({len(errors)}): {sorted(set(errors))[:5]}")
        out["errors"] = len(errors)
        return out
    finally:
        for proc in reversed(procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    proc.kill()


# A provider that asks for one tool (read_file README.md) and answers once the result is back.
TOOL_PROVIDER = (
    "import signal, sys, threading\n"
    "from tests.fake_provider import FakeProvider, text, tool_calls\n"
    "d = float(sys.argv[1])\n"
    "def answer(body):\n"
    "    if body['messages'][-1]['role'] == 'tool':\n"
    "        return text('done', delay=d)\n"
    "    return tool_calls([('read_file', {'path': 'README.md'})], delay=d)\n"
    "fp = FakeProvider(); fp.handler = answer; fp.start(); print('READY', fp.base_url, flush=True)\n"
    "stop = threading.Event(); signal.signal(signal.SIGTERM, lambda *a: stop.set()); stop.wait()\n")


def run_streamed(args: argparse.Namespace) -> int:
    """Staggered turns with one tool each (two provider calls), plain JSON then SSE; the gateway CPU
    difference is what emitting the stream (chunks and tool events) costs."""
    home = tempfile.mkdtemp(prefix="hermes-bench-")
    env = dict(os.environ, HERMES_HOME=home, PYTHONPATH=str(REPO))
    procs: list[subprocess.Popen[str]] = []
    try:
        fp, ready = _spawn([sys.executable, "-c", TOOL_PROVIDER, str(args.delay)], env, "READY")
        procs.append(fp)
        gw_env = dict(env, OPENAI_BASE_URL=ready.split()[1], OPENAI_API_KEY="bench", HERMES_MODEL="fake-model",
                      API_SERVER_KEY=BENCH_KEY)
        gw, ready = _spawn([sys.executable, "-m", "hermes_cli.main", "gateway", "run", "--api-server", "--port", "0"], gw_env,
                           "READY gateway")
        procs.append(gw)
        url = ready.split("api=")[1] + "/v1/chat/completions"
        errors: list[str] = []
        asyncio.run(_drive(url, ["warmup"], 1, [], errors, headers=AUTH, stream=True))
        print(f"sessions={args.sessions} rounds={args.rounds} provider_delay={args.delay:.1f}s x 2 calls per turn "
              f"(one tool each), staggered over one delay")
        cpu: dict[bool, float] = {}
        for stream in (False, True):
            lat: list[float] = []
            cpu0 = cpu_seconds(gw.pid)
            asyncio.run(_drive(url, [f"{stream}-{i}" for i in range(args.sessions)], args.rounds, lat, errors,
                               headers=AUTH, spread=args.delay, stream=stream))
            cpu[stream] = (cpu_seconds(gw.pid) - cpu0) / max(1, len(lat))
            added = [(x - 2 * args.delay) * 1000 for x in lat]
            print(f"  {'streamed (SSE + tool events)' if stream else 'plain JSON                  '}: "
                  f"turns={len(lat)} added p50 {pct(added, 50):.0f} ms, p99 {pct(added, 99):.0f} ms "
                  f"(target p99 <= 100 ms); gateway CPU {cpu[stream] * 1000:.2f} ms/turn")
        share = max(0.0, cpu[True] - cpu[False]) / cpu[True] if cpu[True] else 0.0
        print(f"  emitting the stream: {(cpu[True] - cpu[False]) * 1000:.2f} ms CPU per turn = {share:.0%} of a "
              "streamed turn's gateway CPU")
        if errors:
            print(f"errors ({len(errors)}): {sorted(set(errors))[:5]}")
        return 0 if not errors else 1
    finally:
        for proc in reversed(procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


class PeakSampler:
    """Polls ``/health/detailed`` and the gateway's RSS while a wave runs; keeps the sample with the
    most turns in flight, for the RSS each in-flight turn costs."""

    def __init__(self, api: str, pid: int, interval: float = 0.2) -> None:
        self.api, self.pid, self.interval = api, pid, interval
        self.base_rss = self.after_rss = rss_mb(pid)
        self.peak = (0, self.base_rss, 0)  # (in flight, RSS MB, queued)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        import json
        import urllib.request

        req = urllib.request.Request(self.api + "/health/detailed", headers=AUTH)
        while not self._stop.wait(self.interval):
            try:
                with urllib.request.urlopen(req, timeout=10) as resp:
                    turns = json.loads(resp.read())["turns"]
            except (OSError, ValueError, KeyError):
                continue
            if turns["in_flight"] >= self.peak[0]:
                self.peak = (turns["in_flight"], rss_mb(self.pid), turns["queued"])

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(15)
        self.after_rss = rss_mb(self.pid)

    def report(self, sessions: int) -> None:
        n, rss, queued = self.peak
        if not n:
            print("  RSS per in-flight turn: no sample caught turns in flight")
            return
        print(f"  RSS per in-flight turn: {(rss - self.base_rss) / n:.2f} MB ({self.base_rss:.0f} MB before the "
              f"wave -> {rss:.0f} MB with {n} turns in flight, {queued} queued; each includes its session's new "
              f"agent); after the wave {(self.after_rss - self.base_rss) / sessions:.2f} MB per session stays "
              "(cached agents, idle threads)")


def run_cold(args: argparse.Namespace) -> int:
    """The burst the moment the gateway is READY, without and with the warm-up."""
    errors: list[str] = []
    print(f"sessions={args.sessions}, one turn each, sent as soon as the gateway is READY; "
          f"provider_delay={args.delay:.1f}s")
    for warm in (False, True):
        for label, spread in (("staggered over one delay", args.delay), ("lockstep", 0.0)):
            home = tempfile.mkdtemp(prefix="hermes-bench-")
            if not warm:
                Path(home, "config.yaml").write_text("gateway:\n  warmup: false\n", encoding="utf-8")
            env = dict(os.environ, HERMES_HOME=home, PYTHONPATH=str(REPO))
            procs: list[subprocess.Popen[str]] = []
            try:
                fp, ready = _spawn(provider_command(args), env, "READY")
                procs.append(fp)
                gw_env = dict(env, OPENAI_BASE_URL=ready.split()[1], OPENAI_API_KEY="bench",
                              HERMES_MODEL="fake-model", API_SERVER_KEY=BENCH_KEY)
                t0 = time.perf_counter()
                gw, ready = _spawn([sys.executable, "-m", "hermes_cli.main", "gateway", "run", "--api-server", "--port", "0"],
                                   gw_env, "READY gateway")
                procs.append(gw)
                start = time.perf_counter() - t0
                lat: list[float] = []
                asyncio.run(_drive(ready.split("api=")[1] + "/v1/chat/completions",
                                   [f"cold{i}" for i in range(args.sessions)], 1, lat, errors, headers=AUTH,
                                   spread=spread))
            finally:
                _stop(procs)
            added = [(x - args.delay) * 1000 for x in lat]
            print(f"  {'warm-up   ' if warm else 'no warm-up'} {label:<24}: READY after {start:.1f}s; added p50 "
                  f"{pct(added, 50):.0f} ms, p99 {pct(added, 99):.0f} ms, max {max(added):.0f} ms "
                  f"(target p99 <= 100 ms staggered)")
    print(f"load average after: {load_average()}")
    if errors:
        print(f"errors ({len(errors)}): {sorted(set(errors))[:5]}")
    return 0 if not errors else 1


def _stop(procs: list[subprocess.Popen[str]]) -> None:
    for proc in reversed(procs):
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


if __name__ == "__main__":
    sys.exit(main())
