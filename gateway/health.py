"""``GET /health/detailed``: the gateway's load, for operators and their monitoring.

``/health`` stays a public yes/no; this one answers behind the same Bearer key as every other route
(turn counts and memory are nobody else's business). The same figures go to ``gateway.json``, which
``hermes gateway status`` reads, so a gateway without the API server reports them too.
"""
from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, Callable, Optional

from gateway.capacity import rss_bytes


def load_report(runner: Any, started: float, warm: Optional[dict[str, Any]] = None,
                limit_source: str = "") -> dict[str, Any]:
    """Turn counts, sessions, threads and memory of this process, right now."""
    turns = runner.capacity.snapshot()
    if limit_source:
        turns["limit_source"] = limit_source
    return {"status": "ok" if runner.accepting else "draining", "pid": os.getpid(),
            "uptime_seconds": round(time.time() - started, 1), "turns": turns,
            "turns_completed": runner.turns_completed, **runner.session_counts(),
            "threads": threading.active_count(), "turn_threads": runner.pool.stats(),
            "rss_bytes": rss_bytes(),
            "warmup": {**(warm or {"done": False}), "sdk_loaded": "openai" in sys.modules}}


def register_detailed(report: Callable[[], dict[str, Any]]) -> Callable[[Any], None]:
    """A route registrar for ``APIServer.add_routes``: ``/health/detailed`` answers ``report()``."""
    from aiohttp import web

    def register(server: Any) -> None:
        async def detailed(_request: web.Request) -> web.Response:
            return web.json_response(report())

        server.add_endpoint("health_detailed", "GET", "/health/detailed", detailed)

    return register
