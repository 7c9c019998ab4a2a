"""A separate OS process holding an agent on a shared session (for the cross-process lock tests).

    python -m tests.lock_worker --session ID --base-url URL --mode turn|compress --message TEXT

Prints one JSON line with the outcome. HERMES_HOME comes from the environment.
"""
from __future__ import annotations

import argparse
import json
import sys


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--session", required=True)
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--mode", choices=("turn", "compress"), default="turn")
    ap.add_argument("--message", default="hello from a worker")
    args = ap.parse_args()
    from run_agent import AIAgent

    agent = AIAgent(base_url=args.base_url, api_key="test-key", model="fake-model", quiet_mode=True,
                    skip_context_files=True, skip_memory=True, session_id=args.session)
    print("STARTED", flush=True)
    if args.mode == "compress":
        out = agent.compress()
    else:
        res = agent.run_conversation(args.message)
        out = {k: res.get(k) for k in ("completed", "failed", "partial", "compression_deferred",
                                       "compression_exhausted", "final_response", "error")}
    out["compactions"] = agent.compactions
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
