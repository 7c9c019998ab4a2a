"""Skills at scale and the cost of the background review.

1. For 10, 200 and 1,000 skills (Hermes layout: category folders, metadata.hermes.tags; plus the 3
   starter skills): the system prompt build time the first time ever (every SKILL.md parsed), in a
   new process (the parsed front matter read from skills/.cache.json), and again in the same process
   (warm), and the index's tokens against its budget (skills.index_budget, default 1,000).
2. A tool-heavy turn against the loopback provider, then the review: how long ``after_turn`` adds
   to the user's wait (it only starts a thread), and the time from the answer to the finished review.

    .venv/bin/python bench/skills.py [--runs 20]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CATEGORIES = ("devops", "data", "writing", "research", "mlops", "media", "productivity", "security")


def make_skills(home: Path, n: int) -> None:
    root = home / "skills"
    for i in range(n):
        cat = CATEGORIES[i % len(CATEGORIES)]
        folder = root / cat / f"skill-{i:04d}"
        (folder / "references").mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: skill-{i:04d}\ndescription: Handle recurring task number {i} the way the user "
            f"prefers, with checks.\nversion: 1.0.0\nmetadata:\n  hermes:\n    tags: [{cat}, bench]\n"
            f"---\n# Skill {i}\n" + "1. Do the step carefully.\n" * 30, encoding="utf-8")
        (folder / "references" / "notes.md").write_text("notes\n" * 20, encoding="utf-8")


def bench_prompt(runs: int) -> None:
    from hermes_core.config import HermesConfig
    from agent.prompt_builder import build_prompt
    from tools.registry import get_tool_definitions, get_toolset
    from tools.skills import index, loader
    from hermes_core.tokens import estimate_text_tokens

    cfg = HermesConfig()
    budget = cfg.skills.index_budget
    tools = get_tool_definitions()

    def build(home: Path) -> str:
        return build_prompt(home, home, tools=tools, toolset_of=get_toolset, config=cfg,
                            skip_context_files=True, skip_memory=True).text

    print(f"{'skills':>6}  {'first ever':>10}  {'new process':>11}  {'warm':>8}  {'index tokens':>12}  mode")
    for n in (10, 200, 1000):
        with tempfile.TemporaryDirectory() as tmp:
            home = Path(tmp)
            make_skills(home, n)
            first, cold = [], []
            for _ in range(max(3, runs // 4)):
                loader.clear_cache()  # nothing parsed in this process: as a new `hermes` process
                (home / "skills" / loader.CACHE_FILE).unlink(missing_ok=True)  # and no cache on disk
                t = time.perf_counter()
                build(home)
                first.append(time.perf_counter() - t)
                loader.clear_cache()  # a new process: the disk cache written just now is read
                t = time.perf_counter()
                build(home)
                cold.append(time.perf_counter() - t)
            warm = []
            for _ in range(runs):
                t = time.perf_counter()
                prompt = build(home)
                warm.append(time.perf_counter() - t)
            part = index.prompt_part(home, cfg)
            tokens = estimate_text_tokens(part)
            mode = "descriptions" if "- skill-" in part else "names only"
            assert tokens <= budget, (n, tokens)
            assert part in prompt
            print(f"{n + 3:>6}  {statistics.median(first) * 1000:>8.1f}ms  {statistics.median(cold) * 1000:>9.1f}ms"
                  f"  {statistics.median(warm) * 1000:>6.1f}ms  {tokens:>5} / {budget:<5}  {mode}")


def bench_review(runs: int) -> None:
    from agent import skill_review as review
    from run_agent import AIAgent
    from tests.fake_provider import FakeProvider, text, tool_calls

    fp = FakeProvider().start()
    starts, finishes = [], []
    try:
        for i in range(runs):
            with tempfile.TemporaryDirectory() as tmp:
                os.environ["HERMES_HOME"] = tmp
                body = f"---\nname: bench-{i}\ndescription: Benchmark routine {i}.\n---\n1. run\n"
                fp.queue(tool_calls([("todo", {"todos": [{"id": str(k), "content": "x"}]}) for k in range(10)]),
                         text("done"),
                         tool_calls([("skill_manage", {"action": "create", "name": f"bench-{i}", "content": body})]),
                         text("saved"))
                agent = AIAgent(base_url=fp.base_url, api_key="k", model="fake-model", quiet_mode=True,
                                skip_context_files=True, skip_memory=True, cwd=tmp)
                res = agent.run_conversation("do ten things")
                answered = time.monotonic()
                started = review.after_turn(agent, res)
                starts.append(time.monotonic() - answered)
                assert started is not None
                started.join(60)
                assert started.outcome, started.error
                finishes.append(started.finished_at - answered)
                agent.session_db.close()
    finally:
        fp.stop()
    print(f"review: after_turn adds {statistics.median(starts) * 1000:.2f} ms to the user's wait (median of {runs});"
          f" answer -> review finished {statistics.median(finishes) * 1000:.0f} ms median,"
          f" {max(finishes) * 1000:.0f} ms max (loopback provider, 2 review calls)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    bench_prompt(args.runs)
    bench_review(args.runs)


if __name__ == "__main__":
    main()
