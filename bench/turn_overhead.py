"""What the runtime costs next to the wire: one plain turn over a 400-message history.

Prints the median ``run_conversation`` time, the median raw HTTP POST of the same request body to
the same loopback server, their ratio, the time the turn spent in the session store (its share of
the turn), ``import run_agent`` time and ``AIAgent()`` construction time.
Targets (issue 2): ratio <= 2.0, import <= 150 ms, construction <= 20 ms.

    .venv/bin/python bench/turn_overhead.py [--runs 100] [--store postgresql://user:pw@host/db]
                                            [--provider anthropic]

``--store`` runs the agent on that PostgreSQL database (default: SQLite under a temp HERMES_HOME).
``--provider anthropic`` measures the same turn on the native Anthropic path too (the loopback
Messages API fake, its raw POST the converted body) and prints each path's runtime overhead
(turn minus raw POST) and their difference (issue 25 target: within 10%), with the machine load.
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
    rows = []
    for _ in range(7):
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                             env=dict(os.environ))
        rows.append([float(x) for x in out.stdout.split()])
    return tuple(statistics.median(r[i] for r in rows) for i in range(3))  # type: ignore[return-value]


class StoreTimer:
    """Times every public SessionDB method the agent calls (wrapped on the instance)."""

    def __init__(self, db) -> None:
        self.spent, self.calls = 0.0, 0
        for name in dir(type(db)):
            if not name.startswith("_") and inspect.isfunction(getattr(type(db), name)):
                setattr(db, name, self._timed(getattr(db, name)))

    def _timed(self, fn):
        def call(*a, **kw):
            t = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                self.spent += time.perf_counter() - t
                self.calls += 1
        return call


def anthropic_overhead(runs: int) -> tuple[float, float]:
    """Median turn and raw POST (ms) of the same turn on the native Anthropic path."""
    from agent.providers.anthropic.convert import build_request
    from run_agent import AIAgent

    proc, base_url = start_provider("tests.fake_anthropic")
    try:
        agent = AIAgent(provider="anthropic", base_url=base_url, api_key="bench",
                        model="claude-fake-1", quiet_mode=True, skip_context_files=True,
                        skip_memory=True)
        hist = history()
        agent.run_conversation("warm up", conversation_history=list(hist))
        msgs = [{"role": "system", "content": agent._cached_system_prompt}, *hist,
                {"role": "user", "content": "One more question?"}]
        u = urlparse(base_url)
        conn = http.client.HTTPConnection(u.hostname, u.port)

        def raw_post() -> None:
            body = build_request(msgs, model="claude-fake-1", max_tokens=8192, tools=agent.tools)
            conn.request("POST", "/v1/messages", body=json.dumps(body).encode(),
                         headers={"Content-Type": "application/json", "x-api-key": "bench"})
            json.loads(conn.getresponse().read())

        raw_post()
        turn, raw = [], []
        for _ in range(runs):
            t = time.perf_counter()
            assert agent.run_conversation("One more question?",
                                          conversation_history=list(hist))["completed"]
            turn.append(time.perf_counter() - t)
            t = time.perf_counter()
            raw_post()
            raw.append(time.perf_counter() - t)
    finally:
        proc.terminate()
        proc.wait()
    return statistics.median(turn) * 1000, statistics.median(raw) * 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--store", metavar="URL", help="a postgresql:// URL (default: SQLite)")
    ap.add_argument("--provider", choices=("openai", "anthropic"), default="openai")
    args = ap.parse_args()
    load_before = os.getloadavg()
    home = tempfile.mkdtemp(prefix="hermes-bench-")
    os.environ["HERMES_HOME"] = home
    if args.store:
        os.environ["HERMES_DATABASE_URL"] = args.store
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENROUTER_API_KEY"):
        os.environ.pop(var, None)
    proc, base_url = start_provider()
    try:
        from run_agent import AIAgent

        agent = AIAgent(base_url=base_url, api_key="bench", model="fake-model", quiet_mode=True,
                        skip_context_files=True, skip_memory=True)
        store_name = f"{agent.session_db.backend} {agent.session_db.label}"
        timer = StoreTimer(agent.session_db)
        hist = history()
        agent.run_conversation("warm up", conversation_history=list(hist))
        payload = {"model": "fake-model",
                   "messages": [{"role": "system", "content": agent._cached_system_prompt}, *hist,
                                {"role": "user", "content": "One more question?"}],
                   "tools": agent.tools}
        body = json.dumps(payload).encode()
        u = urlparse(base_url)
        conn = http.client.HTTPConnection(u.hostname, u.port)

        def raw_post() -> None:
            # serialising the body is part of any client's POST, so it is inside the timed region
            conn.request("POST", u.path + "/chat/completions", body=json.dumps(payload).encode(),
                         headers={"Content-Type": "application/json"})
            json.loads(conn.getresponse().read())

        raw_post()
        turn, raw, store, calls = [], [], [], []
        for _ in range(args.runs):  # interleaved, so both see the same machine
            timer.spent, timer.calls = 0.0, 0
            t = time.perf_counter()
            res = agent.run_conversation("One more question?", conversation_history=list(hist))
            turn.append(time.perf_counter() - t)
            store.append(timer.spent)
            calls.append(timer.calls)
            assert res["completed"], res
            t = time.perf_counter()
            raw_post()
            raw.append(time.perf_counter() - t)
        imp, first, second = measure_startup()
    finally:
        proc.terminate()
        proc.wait()
    t_med, r_med = statistics.median(turn), statistics.median(raw)
    s_med = statistics.median(store)
    print(f"history: {len(hist)} messages, request body {len(body):,} bytes, {args.runs} runs")
    print(f"store                   : {store_name}")
    print(f"run_conversation median : {t_med * 1000:8.2f} ms")
    print(f"store calls per turn    : {s_med * 1000:8.2f} ms median over {statistics.median(calls):.0f}"
          f" calls ({s_med / t_med:.1%} of the turn)")
    print(f"raw HTTP POST median    : {r_med * 1000:8.2f} ms")
    print(f"ratio                   : {t_med / r_med:8.2f}   (target <= 2.0)")
    print(f"import run_agent        : {imp * 1000:8.1f} ms (target <= 150)")
    print(f"AIAgent() first / next  : {first * 1000:8.1f} ms / {second * 1000:.1f} ms (target <= 20)")
    if args.provider == "anthropic":
        a_turn, a_raw = anthropic_overhead(args.runs)
        o_over, a_over = (t_med - r_med) * 1000, a_turn - a_raw
        print(f"anthropic turn / raw    : {a_turn:8.2f} ms / {a_raw:.2f} ms")
        print(f"overhead openai / anthr.: {o_over:8.2f} ms / {a_over:.2f} ms "
              f"({a_over / o_over - 1:+.1%}; target within 10%)")
    print(f"machine load (1/5/15 m) : before {load_before[0]:.2f} {load_before[1]:.2f} "
          f"{load_before[2]:.2f}, after {os.getloadavg()[0]:.2f} (cores: {os.cpu_count()})")


if __name__ == "__main__":
    main()
