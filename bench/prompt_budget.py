"""The fixed prompt's size by part (SPEC §9): system prompt + tool schemas of a default agent.

A default agent: every default toolset on, empty memory, no context files, in a temp HERMES_HOME.
Tokens are characters/4 (``json.dumps`` of each tool definition, the brief's measure). Also shows
what the embedded 8k model gets (the compact core). The LAST line is a one-line summary.

    .venv/bin/python bench/prompt_budget.py              # default agent
    .venv/bin/python bench/prompt_budget.py --skills 200 # with 200 synthetic skills installed
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TARGET = 4000


def install_skills(home: Path, n: int) -> None:
    for i in range(n):
        d = home / "skills" / f"synthetic-skill-{i:03d}"
        d.mkdir(parents=True)
        (d / "SKILL.md").write_text(
            f"---\nname: synthetic-skill-{i:03d}\ndescription: Does synthetic task number {i} "
            f"with a short, realistic one-line description.\n---\n\n# Skill {i}\n\nSteps.\n")


def build(home: Path, cwd: Path, **kw):  # -> AIAgent
    from run_agent import AIAgent

    return AIAgent(base_url="http://127.0.0.1:9/v1", api_key="bench-key", quiet_mode=True, cwd=str(cwd),
                   session_db=None, **kw)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skills", type=int, default=0, metavar="N", help="install N synthetic skills first")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home, cwd = Path(tmp) / "home", Path(tmp) / "work"
        home.mkdir()
        cwd.mkdir()
        os.environ["HERMES_HOME"] = str(home)
        for var in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "HERMES_MODEL", "HERMES_PROVIDER"):
            os.environ.pop(var, None)
        if args.skills:
            install_skills(home, args.skills)
        from agent.prompt_builder import breakdown, breakdown_lines
        from tools.registry import get_toolset
        from agent.tool_selection import WINDOW_SHARE

        agent = build(home, cwd, model="bench-model")
        rows = agent.prompt_breakdown()
        total = sum(n for _, n in rows)
        extra = f", {args.skills} skills installed" if args.skills else ""
        print(f"Fixed prompt of a default agent (every default toolset, empty memory, no context files{extra}):")
        for line in breakdown_lines([r for r in rows if r[1]], TARGET):
            print(line)

        small = build(home, cwd, model="SmolLM2-135M-Instruct", context_length=8192).fixed_prompt()
        small_total = sum(n for _, n in breakdown(small.parts, small.tools, get_toolset))
        names = [t["function"]["name"] for t in small.tools]
        omitted = small.omitted_toolsets
        print(f"Embedded 8,192-token model: {small_total:,} tokens (limit {8192 // WINDOW_SHARE:,}); "
              f"tools {', '.join(names)}; toolsets left out: {', '.join(omitted) or 'none'}")
        verdict = "OK" if total <= TARGET else "OVER"
        print(f"prompt budget: {total:,} / {TARGET:,} tokens ({total / TARGET:.0%}) {verdict}{extra}")
    return 0 if total <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
