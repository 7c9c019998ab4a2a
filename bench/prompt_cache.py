"""Prompt-cache hit ratio on the native Anthropic path (issue 25 target: >= 80%).

A 50-turn conversation at a small window, so compactions happen, against the loopback Messages API
fake (tests/fake_anthropic.py), which counts the prompt tokens it could read from its cache (the
prefix up to a breakpoint it saw before). Prints reads / all prompt tokens, chat requests only and
with the summaries, and how many compactions there were.

    .venv/bin/python bench/prompt_cache.py [--turns 50] [--window 12000]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SUMMARY = ("## Goal\nKeep chatting.\n## Completed actions\nMany turns.\n## Current state\nOngoing."
           "\n## Next steps\nContinue.")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=50)
    ap.add_argument("--window", type=int, default=12000)
    args = ap.parse_args()
    os.environ["HERMES_HOME"] = tempfile.mkdtemp(prefix="hermes-bench-")
    from run_agent import AIAgent
    from tests.fake_anthropic import FakeAnthropic, text

    fake = FakeAnthropic().start()
    summaries: list[int] = []

    def reply(body: dict):
        if "hand-off notes" in str(body.get("system")):
            summaries.append(len(fake.usages))
            return text(SUMMARY)
        return text("Here is a considered answer. " * 12)

    fake.handler = reply
    agent = AIAgent(provider="anthropic", base_url=fake.base_url, api_key="bench",
                    model="claude-fake-1", quiet_mode=True, skip_context_files=True,
                    context_length=args.window)
    for i in range(args.turns):
        assert agent.run_conversation(f"Turn {i}: " + "please think about this " * 30)["completed"]
    fake.stop()
    chat = [u for i, u in enumerate(fake.usages) if i not in set(summaries)]
    read = sum(u["cache_read_input_tokens"] for u in chat)
    total = sum(u["input_tokens"] + u["cache_read_input_tokens"]
                + u["cache_creation_input_tokens"] for u in chat)
    print(f"turns {args.turns}, window {args.window:,}, compactions {agent.compactions}, "
          f"summary requests {len(summaries)}")
    print(f"cache hit ratio (chat requests): {read / total:.1%} ({read:,} of {total:,} tokens)")
    print(f"cache hit ratio (all requests) : {fake.cache_read / fake.prompt_tokens:.1%}")


if __name__ == "__main__":
    main()
