"""Figures of issue 27 (where commands run), each on real processes in a temp HERMES_HOME:

1. ``process`` poll overhead: median time of ``process(action=poll)`` on a running command, idle
   and with new output, through ``tools.registry.dispatch`` (what the model's call costs here);
2. sandbox start-up: ``terminal("true")`` x N, plain vs ``terminal.sandbox: workspace-write``;
3. checkpoint cost for a 1,000- and a 10,000-file working dir: the first snapshot, a turn's
   snapshot when nothing changed, and one after a file changed;
4. ``execute_code`` vs plain tool calls: a turn that reads 20 files and counts their lines, the
   loopback fake provider scripting the model both ways (model calls, prompt + completion tokens).

    .venv/bin/python bench/where_commands_run.py [--runs 100] [--only poll,sandbox,ckpt,code]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def ctx_for(cwd: Path, **terminal):
    from hermes_core.config import parse_config
    from tools.registry import ToolContext

    return ToolContext(cwd=cwd, config=parse_config({"terminal": terminal}), session_id="bench")


def timed(fn, runs: int) -> float:
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def bench_poll(work: Path, runs: int) -> None:
    from tools.registry import dispatch

    ctx = ctx_for(work)
    idle = json.loads(dispatch("process", {"action": "start", "command": "sleep 600"}, ctx))
    busy = json.loads(dispatch("process", {"action": "start", "command":
                                           "while true; do echo tick; sleep 0.001; done"}, ctx))
    t_idle = timed(lambda: dispatch("process", {"action": "poll", "id": idle["id"]}, ctx), runs)
    t_busy = timed(lambda: dispatch("process", {"action": "poll", "id": busy["id"]}, ctx), runs)
    t_list = timed(lambda: dispatch("process", {"action": "list"}, ctx), runs)
    for pid in (idle["id"], busy["id"]):
        dispatch("process", {"action": "kill", "id": pid}, ctx)
    print(f"process poll (median of {runs}): idle {t_idle * 1e6:.0f} µs, with new output "
          f"{t_busy * 1e6:.0f} µs; list of 2: {t_list * 1e6:.0f} µs")


def bench_sandbox(work: Path, runs: int) -> None:
    from tools import sandbox
    from tools.registry import dispatch

    ok, why = sandbox.probe()
    plain = ctx_for(work)
    rows = [("plain", plain)]
    if ok:
        rows.append(("sandboxed (workspace-write)", ctx_for(work, sandbox="workspace-write")))
    for label, ctx in rows:
        dispatch("terminal", {"command": "true"}, ctx)  # warm: imports, probe
        t0 = time.perf_counter()
        for _ in range(runs):
            dispatch("terminal", {"command": "true"}, ctx)
        total = time.perf_counter() - t0
        print(f"terminal('true') x {runs}, {label}: {total:.2f} s ({total / runs * 1e3:.1f} ms "
              "each)")
    if not ok:
        print(f"sandboxed: not measured ({why})")


def make_tree(root: Path, files: int) -> None:
    for i in range(files):
        d = root / f"pkg{i % 50:02d}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"mod{i:05d}.py").write_text(f"# module {i}\n" + "x = 1\n" * 8)


def bench_checkpoints(tmp: Path, home: Path) -> None:
    from tools.checkpoints.store import ShadowRepo

    for files in (1_000, 10_000):
        work = tmp / f"tree{files}"
        make_tree(work, files)
        repo = ShadowRepo(home, work, max_files=files)
        t0 = time.perf_counter()
        repo.snapshot("first")
        first = time.perf_counter() - t0
        same = timed(lambda: repo.snapshot("unchanged"), 5)
        changed = []
        for n in range(5):
            (work / "pkg00" / "mod00000.py").write_text(f"changed {n}\n")
            t0 = time.perf_counter()
            repo.snapshot(f"change {n}")
            changed.append(time.perf_counter() - t0)
        print(f"checkpoint, {files:,} files: first {first * 1e3:.0f} ms, unchanged "
              f"{same * 1e3:.0f} ms, one file changed {statistics.median(changed) * 1e3:.0f} ms")


def bench_code(work: Path, home: Path) -> None:
    from run_agent import AIAgent
    from tests.fake_provider import FakeProvider, text, tool_calls

    for i in range(20):
        (work / f"src{i:02d}.py").write_text("".join(f"value_{n} = {n}  # a line of code\n"
                                                     for n in range(30 + i)))
    names = sorted(p.name for p in work.glob("src*.py"))
    script = ("from hermes_tools import read_file, search_files\n"
              "files = sorted(search_files('src*.py', target='files').split())\n"
              "counts = {f: len(read_file(f).splitlines()) for f in files}\n"
              "print(sum(counts.values()), 'lines in', len(files), 'files')\n")
    plans = {
        "plain, one read per model call": [tool_calls([("search_files", {"pattern": "src*.py",
                                                                          "target": "files"})])]
        + [tool_calls([("read_file", {"path": n})]) for n in names] + [text("790 lines.")],
        "plain, 20 reads in one parallel reply": [
            tool_calls([("search_files", {"pattern": "src*.py", "target": "files"})]),
            tool_calls([("read_file", {"path": n}) for n in names]), text("790 lines.")],
        "execute_code": [tool_calls([("execute_code", {"code": script})]), text("790 lines.")],
    }
    with FakeProvider() as fp:
        for label, replies in plans.items():
            fp.reset()
            fp.queue(*replies)
            agent = AIAgent(base_url=fp.base_url, api_key="k", model="bench", quiet_mode=True,
                            cwd=str(work), session_db=False, skip_memory=True,
                            skip_context_files=True)
            res = agent.run_conversation("How many lines do the src*.py files have in total?")
            u = agent.usage()
            print(f"20 files, {label}: {res['api_calls']} model calls, {u['prompt_tokens']:,} "
                  f"prompt + {u['completion_tokens']:,} completion = {u['total_tokens']:,} tokens")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--only", default="poll,sandbox,ckpt,code")
    args = ap.parse_args()
    only = set(args.only.split(","))
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        home, work = tmp / "home", tmp / "work"
        home.mkdir()
        work.mkdir()
        os.environ["HERMES_HOME"] = str(home)
        for var in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENROUTER_API_KEY"):
            os.environ.pop(var, None)
        if "poll" in only:
            bench_poll(work, args.runs)
        if "sandbox" in only:
            bench_sandbox(work, args.runs)
        if "ckpt" in only:
            bench_checkpoints(tmp, home)
        if "code" in only:
            bench_code(work, home)
    return 0


if __name__ == "__main__":
    sys.exit(main())
