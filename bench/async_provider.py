"""A loopback OpenAI-compatible provider for load benchmarks (not a test double): aiohttp, one
event loop, every reply after a fixed delay.

Why not ``tests.fake_provider``: that one is a ``ThreadingHTTPServer`` (a thread per
connection), right for tests, but at 1,000 requests in flight its own threads answer hundreds
of milliseconds late, and that lateness showed up in the gateway's "added latency". A real
provider is not the bottleneck of a gateway benchmark; this one waits without a thread.

    .venv/bin/python bench/async_provider.py [--port 0] [--delay 5] [--reply "Sure."]

Prints ``READY http://127.0.0.1:<port>/v1`` once listening. It takes the gateway's collector policy
(``gateway/heap.py``): its own full collections (up to 170 ms at 1,000 requests in flight) were
counted in the gateway's "added latency" too.
"""
from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
import time
from pathlib import Path

from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from gateway.heap import HeapPolicy  # noqa: E402

_IDS = itertools.count(1)


def completion(model: str, reply: str, prompt_chars: int) -> dict:
    usage = {"prompt_tokens": prompt_chars // 4 + 1, "completion_tokens": len(reply) // 4 + 1}
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    return {"id": f"chatcmpl-bench-{next(_IDS)}", "object": "chat.completion",
            "created": int(time.time()), "model": model, "usage": usage,
            "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                         "message": {"role": "assistant", "content": reply}}]}


def sse(model: str, reply: str) -> bytes:
    """The reply as a chat-completions stream: role, content, finish, [DONE]."""
    base = {"id": f"chatcmpl-bench-{next(_IDS)}", "object": "chat.completion.chunk",
            "created": int(time.time()), "model": model}
    deltas = [({"role": "assistant", "content": ""}, None), ({"content": reply}, None),
              ({}, "stop")]
    records = [json.dumps({**base, "choices": [{"index": 0, "delta": d, "finish_reason": f}]})
               for d, f in deltas]
    return "".join(f"data: {r}\n\n" for r in [*records, "[DONE]"]).encode()


def make_app(delay: float, reply: str) -> web.Application:
    async def chat(request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        body = json.loads(raw or b"{}")
        await asyncio.sleep(delay)
        model = body.get("model") or "fake-model"
        if body.get("stream"):
            return web.Response(body=sse(model, reply), content_type="text/event-stream")
        return web.json_response(completion(model, reply, len(raw)))

    async def models(_request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "fake-model",
                                                              "object": "model"}]})

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_get("/v1/models", models)
    return app


async def serve(port: int, delay: float, reply: str) -> None:
    runner = web.AppRunner(make_app(delay, reply), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port, backlog=4096)
    await site.start()
    bound = runner.addresses[0][1]
    heap = HeapPolicy()
    heap.settle()
    print(f"READY http://127.0.0.1:{bound}/v1", flush=True)
    while True:
        await asyncio.sleep(2.0)
        heap.tick(busy=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--delay", type=float, default=1.0)
    ap.add_argument("--reply", default="Sure.")
    args = ap.parse_args()
    try:
        asyncio.run(serve(args.port, args.delay, args.reply))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
