"""Run by hand: how fast is the embedded local model on this machine?

    .venv/bin/python bench/local_model.py [--model PATH] [--threads N] [--tokens 100]

Prints the load time (import + GGUF load), the prompt size, and tokens/s for a ~100-token generation,
non-streamed and streamed (time to first token included), through the same LocalClient the agent uses.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from agent.providers.local import LocalClient, LocalModelUnavailable  # noqa: E402

PROMPT = [{"role": "system", "content": "You are a helpful assistant."},
          {"role": "user", "content": "Write a short story about a lighthouse keeper who finds a message in a bottle."}]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="GGUF path (default: the embedded SmolLM2)")
    ap.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default: llama-cpp-python's)")
    ap.add_argument("--tokens", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=30, help="warm streams for the first-token median")
    args = ap.parse_args()
    try:
        client = LocalClient(model_path=args.model, n_threads=args.threads)
    except LocalModelUnavailable as exc:
        print(f"local model unavailable: {exc}")
        return 1

    t0 = time.perf_counter()
    window = client.context_length  # loads
    print(f"model:        {client.model_path}")
    print(f"load:         {time.perf_counter() - t0:.2f} s (window {window} tokens, cpus {os.cpu_count()}, "
          f"threads {args.threads or 'default'})")

    client.chat.completions.create(messages=PROMPT, max_tokens=1)  # warm-up: prompt eval, caches
    # a story prompt rarely ends before max_tokens, so this is a ~N-token generation
    t0 = time.perf_counter()
    resp = client.chat.completions.create(messages=PROMPT, max_tokens=args.tokens, temperature=0.7, seed=1)
    dt = time.perf_counter() - t0
    u = resp.usage
    print(f"generate:     {u.completion_tokens} tokens in {dt:.2f} s = {u.completion_tokens / dt:.1f} tokens/s "
          f"(prompt {u.prompt_tokens} tokens, cached after warm-up)")

    t0 = time.perf_counter()
    first = None
    n = 0
    for chunk in client.chat.completions.create(messages=PROMPT, max_tokens=args.tokens, temperature=0.7,
                                                seed=2, stream=True, stream_options={"include_usage": True}):
        if chunk.choices and chunk.choices[0].delta.content:
            first = first or time.perf_counter() - t0
        if chunk.usage is not None and not chunk.choices:
            n = chunk.usage.completion_tokens
    dt = time.perf_counter() - t0
    print(f"stream:       {n} tokens in {dt:.2f} s = {n / dt:.1f} tokens/s, first token after {(first or 0) * 1000:.0f} ms")
    firsts = sorted(_first_token(client) for _ in range(args.repeat))
    print(f"first token:  median {firsts[len(firsts) // 2] * 1000:.1f} ms, best {firsts[0] * 1000:.1f} ms "
          f"over {args.repeat} warm streams; load average {os.getloadavg()[0]:.2f}")
    return 0


def _first_token(client: LocalClient) -> float:
    t0 = time.perf_counter()
    first = None
    for chunk in client.chat.completions.create(messages=PROMPT, max_tokens=3, stream=True):
        if first is None and chunk.choices and chunk.choices[0].delta.content:
            first = time.perf_counter() - t0
    return first if first is not None else time.perf_counter() - t0


if __name__ == "__main__":
    raise SystemExit(main())
