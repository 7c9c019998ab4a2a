"""Compression costs and behaviour (issue 3). Run by hand; prints figures.

1. A synthetic 2,000-message session (user turns, tool calls with bulky results, answers):
   the per-turn decision (`should_compress` on the request estimate), the cost of assembling a
   compaction excluding the summary call, and tokens before/after.
2. A 500-turn run at an 8k window against the loopback provider: summary calls, compactions, and the
   peak request size as a fraction of the window.

    .venv/bin/python bench/compression.py
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def synthetic(n: int) -> list[dict]:
    msgs: list[dict] = []
    i = 0
    while len(msgs) < n:
        msgs.append({"role": "user", "content": f"Request {i}: please look into item {i} " + "context " * 30})
        if i % 3 == 0:
            cid = f"call_{i}"
            msgs.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": cid, "type": "function", "function": {"name": "read_file", "arguments": json.dumps({"path": f"f{i}.py"})}}]})
            msgs.append({"role": "tool", "tool_call_id": cid, "content": "line of code\n" * 150})
        msgs.append({"role": "assistant", "content": f"Done with item {i}. " + "explanation " * 40})
        i += 1
    return msgs[:n] if msgs[n - 1]["role"] != "tool" else msgs[: n + 1]


def part1() -> None:
    from agent.context_compressor import ContextCompressor
    from hermes_core.tokens import estimate_messages_tokens_rough

    msgs = synthetic(2000)
    summary = "## Goal\nBenchmark.\n## Next steps\nContinue with the remaining items." * 5
    comp = ContextCompressor(200_000, summarize=lambda *a, **k: summary)
    tokens = estimate_messages_tokens_rough(msgs)
    n = 200_000
    t = time.perf_counter()
    for _ in range(n):
        comp.should_compress(tokens)
    decide = (time.perf_counter() - t) / n
    reps = []
    for _ in range(10):
        fresh = ContextCompressor(200_000, summarize=lambda *a, **k: summary)
        t = time.perf_counter()
        res = fresh.compress(msgs, current_tokens=tokens)
        reps.append(time.perf_counter() - t)
    est = []
    for _ in range(10):
        t = time.perf_counter()
        estimate_messages_tokens_rough(msgs)
        est.append(time.perf_counter() - t)
    print(f"session: {len(msgs)} messages, ~{tokens:,} tokens (window 200k, threshold {comp.threshold_tokens:,})")
    print(f"per-turn decision (should_compress)      : {decide * 1e6:8.3f} us   (target <= 1 ms)")
    print(f"  full re-estimate of the history, if done: {statistics.median(est) * 1000:8.3f} ms "
          f"(the loop avoids it with the provider's real reading)")
    print(f"assemble a compaction, no summary call   : {statistics.median(reps) * 1000:8.2f} ms   (target <= 20 ms)")
    print(f"tokens before -> after                   : {res.before_tokens:,} -> {res.after_tokens:,} "
          f"({len(msgs)} -> {len(res.messages)} messages)")


def part2(turns: int = 500) -> None:
    os.environ["HERMES_HOME"] = home = tempfile.mkdtemp(prefix="hermes-bench-")
    Path(home, "config.yaml").write_text("model:\n  context_length: 8000\n")
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENROUTER_API_KEY"):
        os.environ.pop(var, None)
    from run_agent import AIAgent
    from tests.fake_provider import FakeProvider, estimate_prompt_tokens, text, tool_calls

    summary = ("## Goal\nKeep going.\n## Completed actions\nMany turns.\n## Current state\nOngoing.\n"
               "## Next steps\nContinue.")
    fp = FakeProvider().start()
    state = {"i": 0}

    def reply(body):
        if "hand-off notes" in str(body["messages"][0].get("content")):
            return text(summary)
        if body["messages"][-1]["role"] == "user" and state["i"] % 4 == 0:
            return tool_calls([("todo", {})])
        return text("Answer: " + "details " * 40)

    fp.handler = reply
    try:
        agent = AIAgent(base_url=fp.base_url, api_key="bench", model="fake-model", quiet_mode=True,
                        skip_context_files=True, skip_memory=True)
        t = time.perf_counter()
        for i in range(turns):
            state["i"] = i
            res = agent.run_conversation(f"user message {i}: " + "please consider this request " * 12)
            assert res["completed"], res.get("error")
        elapsed = time.perf_counter() - t
        summaries = sum(1 for b in fp.requests if "hand-off notes" in str(b["messages"][0].get("content")))
        chat = [b for b in fp.requests if "hand-off notes" not in str(b["messages"][0].get("content"))]
        peak = max(estimate_prompt_tokens(b) for b in chat)
        print(f"{turns}-turn run at an 8k window: {len(chat)} chat requests, {summaries} summary calls, "
              f"{agent.compactions} compactions, {elapsed:.1f} s")
        print(f"peak request size                        : {peak:,} tokens = {peak / 8000:.0%} of the window")
    finally:
        fp.stop()


if __name__ == "__main__":
    part1()
    part2()
