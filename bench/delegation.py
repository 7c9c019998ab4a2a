"""What delegation costs: parallel children against a slow provider, and the runtime's own share.

1. Against a loopback provider that waits 1 s before every reply: the wall time of ``delegate_task``
   with one child and with three (interleaved runs, medians) and their ratio (target <= 1.3).
2. Against an instant provider: the wall time of ``delegate_task`` with one child minus a raw HTTP
   POST of that child's request body, i.e. the runtime's own overhead per child (building the agent
   and its session, the thread, the turn, the records); and the same for three children at once.

    .venv/bin/python bench/delegation.py [--runs 5] [--fast-runs 30]
"""
from __future__ import annotations

import argparse
import http.client
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


def start_provider(*extra: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "tests.fake_provider", "--port", "0",
                             "--reply", "Done: nothing needed changing.", *extra],
                            cwd=ROOT, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip()
    if not line.startswith("READY "):
        raise SystemExit(f"fake provider did not start: {line!r}")
    return proc, line.split(" ", 1)[1]


def make_parent(base_url: str):
    """A parent agent with its session in the store, and the tool context its tools would get."""
    from run_agent import AIAgent
    from tools.registry import ToolContext

    agent = AIAgent(base_url=base_url, api_key="bench", model="fake-model", quiet_mode=True,
                    skip_context_files=True, skip_memory=True, cwd=tempfile.gettempdir())
    agent.session_db.create_session(agent.session_id, source="cli", model=agent.model)
    ctx = ToolContext(cwd=agent.cwd, session_id=agent.session_id, interrupt_event=threading.Event(),
                      session_db=agent.session_db, config=agent.config, agent=agent)
    return agent, ctx


def delegate(ctx, n: int) -> float:
    from tools.registry import dispatch

    args = {"tasks": [{"goal": f"Check item {i} of the inventory", "context": "It lives in stock.csv."}
                      for i in range(n)]}
    t = time.perf_counter()
    out = json.loads(dispatch("delegate_task", args, ctx))
    elapsed = time.perf_counter() - t
    assert out["summary"] == f"{n} completed", out
    return elapsed


def raw_post_timer(base_url: str, agent) -> callable:
    """A raw POST of the request a child sends (its prompt, message and tools)."""
    from agent.delegation import Task, child_system_prompt

    task = Task("Check item 0 of the inventory", "It lives in stock.csv.")
    tools = [t for t in agent.tools if t["function"]["name"] != "delegate_task"]
    payload = {"model": "fake-model", "tools": tools,
               "messages": [{"role": "system", "content": child_system_prompt(task, agent.cwd)},
                            {"role": "user", "content": task.goal}]}
    u = urlparse(base_url)
    conn = http.client.HTTPConnection(u.hostname, u.port)

    def post() -> float:
        t = time.perf_counter()
        conn.request("POST", u.path + "/chat/completions", body=json.dumps(payload).encode(),
                     headers={"Content-Type": "application/json"})
        json.loads(conn.getresponse().read())
        return time.perf_counter() - t

    return post


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5, help="runs of each size against the 1 s provider")
    ap.add_argument("--fast-runs", type=int, default=30, help="runs against the instant provider")
    args = ap.parse_args()
    os.environ["HERMES_HOME"] = tempfile.mkdtemp(prefix="hermes-bench-")
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENROUTER_API_KEY"):
        os.environ.pop(var, None)
    slow_proc, slow_url = start_provider("--delay", "1.0")
    fast_proc, fast_url = start_provider()
    try:
        _, slow_ctx = make_parent(slow_url)
        fast_agent, fast_ctx = make_parent(fast_url)
        delegate(fast_ctx, 1)  # warm up: imports, the provider client, the store
        one, three = [], []
        for _ in range(args.runs):  # interleaved, so both see the same machine
            one.append(delegate(slow_ctx, 1))
            three.append(delegate(slow_ctx, 3))
        post = raw_post_timer(fast_url, fast_agent)
        post()
        fast_one, fast_three, raw = [], [], []
        for _ in range(args.fast_runs):
            fast_one.append(delegate(fast_ctx, 1))
            raw.append(post())
            fast_three.append(delegate(fast_ctx, 3))
    finally:
        for proc in (slow_proc, fast_proc):
            proc.terminate()
            proc.wait()
    m1, m3 = statistics.median(one), statistics.median(three)
    f1, f3, r = statistics.median(fast_one), statistics.median(fast_three), statistics.median(raw)
    print(f"provider delay 1.0 s, {args.runs} runs each (medians)")
    print(f"  1 child                 : {m1:7.3f} s")
    print(f"  3 children in parallel : {m3:7.3f} s")
    print(f"  ratio 3 / 1             : {m3 / m1:7.2f}   (target <= 1.3)")
    print(f"instant provider, {args.fast_runs} runs (medians)")
    print(f"  1 child, delegate_task  : {f1 * 1000:7.1f} ms")
    print(f"  raw POST of its request : {r * 1000:7.1f} ms")
    print(f"  overhead per child      : {(f1 - r) * 1000:7.1f} ms")
    print(f"  3 children at once      : {f3 * 1000:7.1f} ms ({(f3 - r) / 3 * 1000:.1f} ms per child "
          "beyond one POST)")


if __name__ == "__main__":
    main()
