"""What the runtime costs next to the wire: one plain turn over a 400-message history.

Prints the median ``run_conversation`` time, the median raw HTTP POST of the same request body to
the same loopback server, their ratio, the time the turn spent in the session store (its share of
the turn), ``import run_agent`` time and ``AIAgent()`` construction time.
Targets (issue 2): ratio <= 2.0, import <= 150 ms, construction <= 20 ms.

    .venv/bin/python bench/turn_overhead.py [--runs 100] [--store postgresql://user:pw@host/db]
                                            [--provider anthropic]

``--store`` runs the agent on that PostgreSQL database (default: SQLite under a temp HERMES_HOME).
``--provider anthropic`` measures the same turn on the native Anthropic path too (the loopback
Messages API fake; its raw POST sends the body converted once beforehand, so conversion
counts as the runtime's overhead), in the same rounds as the OpenAI path with
the order alternating (A B, B A, ...): each run's runtime overhead is its turn minus its own raw
POST, and the report gives both paths' medians and quartiles, the ratio of the median overheads
(issue 25 target: within 10%) and the machine load.
"""
from __future__ import annotations

import argparse
import http.client
import inspect
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def start_provider(module: str = "tests.fake_provider") -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", module, "--port", "0", "--reply", "Sure."],
                            cwd=ROOT, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip()
    if not line.startswith("READY "):
        raise SystemExit(f"fake provider did not start: {line!r}")
    return proc, line.split(" ", 1)[1]


def history() -> list[dict]:
    msgs = []
    for i in range(200):
        msgs.append({"role": "user", "content": f"Question {i}: " + "tell me more about the topic " * 6})
        msgs.append({"role": "assistant", "content": f"Answer {i}: " + "here is a detailed reply text " * 6})
    return msgs


def measure_startup() -> tuple[float, float, float]:
    code = ("import time; t0=time.perf_counter(); import run_agent; t1=time.perf_counter();"
            "a=run_agent.AIAgent(base_url='http://127.0.0.1:9/v1', api_key='k', model='m', quiet_mode=True);"
            "t2=time.perf_counter(); b=run_agent.AIAgent(base_url='http://127.0.0.1:9/v1', api_key='k', model='m',"
            " quiet_mode=True); t3=time.perf_counter(); print(t1-t0, t2-t1, t3-t2)")
    # what a user's Python does: byte code written once and then read (with
    # PYTHONDONTWRITEBYTECODE set, every run compiles the project's modules again: +40-60 ms)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    rows = []
    for _ in range(8):  # the first run writes the byte code; it is not counted
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                             env=env)
        rows.append([float(x) for x in out.stdout.split()])
    return tuple(statistics.median(r[i] for r in rows[1:]) for i in range(3))  # type: ignore[return-value]


class StoreTimer:
    """Times every public SessionDB method the agent calls (wrapped on the instance). ``spent``:
    all of them, on any thread (the store's work); ``waited``: what the turn's own thread spent
    in them or waiting for a write it submitted (``SessionDB.submit``, which on PostgreSQL runs
    while the model request is out): what the store adds to the turn."""

    def __init__(self, db) -> None:
        self.spent, self.waited, self.calls = 0.0, 0.0, 0
        self.by_name: dict[str, float] = {}  # waited, per method (all runs): where it goes
        self.turn_thread = threading.get_ident()
        self.depth = 0  # calls open on the turn's thread (a nested one is not counted twice)
        for name in dir(type(db)):
            if not name.startswith("_") and inspect.isfunction(getattr(type(db), name)):
                setattr(db, name, self._timed(getattr(db, name), name))

    def _timed(self, fn, name: str):
        submit = name == "submit"

        def call(*a, **kw):
            mine = threading.get_ident() == self.turn_thread
            self.depth += mine
            t = time.perf_counter()
            try:
                out = fn(*a, **kw)
                if submit:
                    out.result = self._waiting(out.result, getattr(a[0], "__name__", "submit"))
                return out
            finally:
                took = time.perf_counter() - t
                self.depth -= mine
                self.spent += 0 if submit else took
                counted = took if mine and self.depth == 0 and not submit else 0
                self.waited += counted
                self.by_name[name] = self.by_name.get(name, 0.0) + counted
                self.calls += 0 if submit else 1
        return call

    def _waiting(self, result, name: str):
        def wait(*a, **kw):
            t = time.perf_counter()
            try:
                return result(*a, **kw)
            finally:
                took = time.perf_counter() - t
                self.waited += took
                key = f"submit({name}) wait"
                self.by_name[key] = self.by_name.get(key, 0.0) + took
        return wait


class Path_:
    """One provider path: an agent on its loopback fake and a raw POST of the same request. Each
    run is timed on the wall clock and in CPU time of this process (``process_time``: the work
    of the runtime itself, which neither the fake server's speed nor waiting for a core on a
    loaded machine changes)."""

    def __init__(self, name: str, agent, raw_post) -> None:
        self.name, self.agent, self.raw_post = name, agent, raw_post
        self.turn: list[float] = []
        self.raw: list[float] = []
        self.turn_cpu: list[float] = []
        self.raw_cpu: list[float] = []

    def once(self, hist: list[dict]) -> None:
        t, c = time.perf_counter(), time.process_time()
        res = self.agent.run_conversation("One more question?", conversation_history=list(hist))
        self.turn.append(time.perf_counter() - t)
        self.turn_cpu.append(time.process_time() - c)
        assert res["completed"], res
        t, c = time.perf_counter(), time.process_time()
        self.raw_post()
        self.raw.append(time.perf_counter() - t)
        self.raw_cpu.append(time.process_time() - c)

    def overheads(self, cpu: bool = False) -> list[float]:
        """Each run's turn minus its own raw POST (ms): paired, so a slow moment cancels out."""
        turn, raw = (self.turn_cpu, self.raw_cpu) if cpu else (self.turn, self.raw)
        return [(a - b) * 1000 for a, b in zip(turn, raw)]


def anthropic_path(hist: list[dict]) -> tuple[Path_, subprocess.Popen]:
    """The same turn on the native Anthropic path: the Messages API fake, the converted body."""
    from agent.providers.anthropic.convert import build_request
    from run_agent import AIAgent

    proc, base_url = start_provider("tests.fake_anthropic")
    agent = AIAgent(provider="anthropic", base_url=base_url, api_key="bench",
                    model="claude-fake-1", quiet_mode=True, skip_context_files=True,
                    skip_memory=True)
    agent.run_conversation("warm up", conversation_history=list(hist))
    msgs = [{"role": "system", "content": agent._cached_system_prompt}, *hist,
            {"role": "user", "content": "One more question?"}]
    u = urlparse(base_url)
    conn = http.client.HTTPConnection(u.hostname, u.port)

    # converted once, outside the timing: turning OpenAI shapes into the Messages API's is work
    # of the runtime, so it counts in the turn's overhead, as the OpenAI path has none
    body = build_request(msgs, model="claude-fake-1", max_tokens=8192, tools=agent.tools)

    def raw_post() -> None:  # serialising is part of any client's POST, so it is timed
        conn.request("POST", "/v1/messages", body=json.dumps(body).encode(),
                     headers={"Content-Type": "application/json", "x-api-key": "bench"})
        json.loads(conn.getresponse().read())

    raw_post()
    return Path_("anthropic", agent, raw_post), proc


def interleaved(paths: list[Path_], hist: list[dict], runs: int, on_run=None) -> None:
    """``runs`` rounds, every path once a round, the order alternating (A B, B A, ...), so drift
    in the machine's load hits every path alike."""
    for i in range(runs):
        for path in (paths if i % 2 == 0 else paths[::-1]):
            if on_run is not None:
                on_run(path)
            path.once(hist)


def compare(a: Path_, b: Path_) -> None:
    """Both paths' medians and the ratio of their runtime overheads (wall clock, then CPU time),
    with the load."""
    for cpu, clock in ((False, "wall"), (True, "cpu")):
        turns = (a.turn_cpu, b.turn_cpu) if cpu else (a.turn, b.turn)
        raws = (a.raw_cpu, b.raw_cpu) if cpu else (a.raw, b.raw)
        over = []
        for p, turn, raw in ((a, turns[0], raws[0]), (b, turns[1], raws[1])):
            o = statistics.median(p.overheads(cpu))
            over.append(o)
            q = statistics.quantiles(p.overheads(cpu), n=4)
            print(f"{clock} {p.name:<10} turn / raw / overhead medians: "
                  f"{statistics.median(turn) * 1000:7.2f} / {statistics.median(raw) * 1000:.2f}"
                  f" / {o:.2f} ms (overhead quartiles {q[0]:.2f}..{q[2]:.2f})")
        print(f"{clock} overhead ratio {b.name}/{a.name}: {over[1] / over[0]:.3f} "
              f"({over[1] / over[0] - 1:+.1%}; target within 10%); load {os.getloadavg()}")


def openai_path(base_url: str, hist: list[dict]) -> tuple[Path_, int]:
    """The OpenAI-compatible path; (the path, its request body's size)."""
    from run_agent import AIAgent

    agent = AIAgent(base_url=base_url, api_key="bench", model="fake-model", quiet_mode=True,
                    skip_context_files=True, skip_memory=True)
    agent.run_conversation("warm up", conversation_history=list(hist))
    payload = {"model": "fake-model",
               "messages": [{"role": "system", "content": agent._cached_system_prompt}, *hist,
                            {"role": "user", "content": "One more question?"}],
               "tools": agent.tools}
    u = urlparse(base_url)
    conn = http.client.HTTPConnection(u.hostname, u.port)

    def raw_post() -> None:
        # serialising the body is part of any client's POST, so it is inside the timed region
        conn.request("POST", u.path + "/chat/completions", body=json.dumps(payload).encode(),
                     headers={"Content-Type": "application/json"})
        json.loads(conn.getresponse().read())

    raw_post()
    return Path_("openai", agent, raw_post), len(json.dumps(payload).encode())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--store", metavar="URL", help="a postgresql:// URL (default: SQLite)")
    ap.add_argument("--provider", choices=("openai", "anthropic"), default="openai")
    args = ap.parse_args()
    load_before = os.getloadavg()
    os.environ["HERMES_HOME"] = tempfile.mkdtemp(prefix="hermes-bench-")
    if args.store:
        os.environ["HERMES_DATABASE_URL"] = args.store
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENROUTER_API_KEY"):
        os.environ.pop(var, None)
    procs = []
    try:
        proc, base_url = start_provider()
        procs.append(proc)
        hist = history()
        oa, size = openai_path(base_url, hist)
        db = oa.agent.session_db
        store_name, timer = f"{db.backend} {db.label}", StoreTimer(db)
        paths = [oa]
        if args.provider == "anthropic":
            an, proc = anthropic_path(hist)
            procs.append(proc)
            paths.append(an)
        store, waited, calls = [], [], []

        def on_run(path: Path_) -> None:
            if path is oa:
                if oa.turn:
                    store.append(timer.spent)
                    waited.append(timer.waited)
                    calls.append(timer.calls)
                timer.spent, timer.waited, timer.calls = 0.0, 0.0, 0

        interleaved(paths, hist, args.runs, on_run)
        on_run(oa)
        imp, first, second = measure_startup()
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait()
    report(oa, size, store_name, (store, waited), calls, (imp, first, second), args.runs)
    waits = sorted(timer.by_name.items(), key=lambda kv: -kv[1])
    print("the turn waited on      : " + ", ".join(
        f"{name} {total / (args.runs + 1) * 1e6:.0f} µs" for name, total in waits[:5] if total))
    if args.provider == "anthropic":
        compare(oa, paths[1])
    print(f"machine load (1/5/15 m) : before {load_before[0]:.2f} {load_before[1]:.2f} "
          f"{load_before[2]:.2f}, after {os.getloadavg()[0]:.2f} (cores: {os.cpu_count()})")


def report(oa: Path_, size: int, store_name: str, store: tuple[list[float], list[float]],
           calls: list[int], startup: tuple[float, float, float], runs: int) -> None:
    t_med, r_med = statistics.median(oa.turn), statistics.median(oa.raw)
    s_med, w_med = statistics.median(store[0]), statistics.median(store[1])
    imp, first, second = startup
    print(f"history: 400 messages, request body {size:,} bytes, {runs} runs")
    print(f"store                   : {store_name}")
    print(f"run_conversation median : {t_med * 1000:8.2f} ms")
    print(f"store calls per turn    : {s_med * 1000:8.2f} ms median over "
          f"{statistics.median(calls):.0f} calls ({s_med / t_med:.1%} of the turn)")
    print(f"the turn waited on store: {w_med * 1000:8.2f} ms median ({w_med / t_med:.1%} of the "
          "turn; the rest overlapped the model request)")
    print(f"run_conversation CPU    : {statistics.median(oa.turn_cpu) * 1000:8.2f} ms median "
          "(this process: the runtime and its store calls, threads included)")
    print(f"raw HTTP POST median    : {r_med * 1000:8.2f} ms")
    print(f"ratio                   : {t_med / r_med:8.2f}   (target <= 2.0)")
    print(f"import run_agent        : {imp * 1000:8.1f} ms (target <= 150)")
    print(f"AIAgent() first / next  : {first * 1000:8.1f} ms / {second * 1000:.1f} ms "
          "(target <= 20)")


if __name__ == "__main__":
    main()
