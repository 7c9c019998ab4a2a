"""Web, browser and vision tools: what they cost and how well extraction works.

1. web_extract per page over loopback (fetch + extraction, median of N): each test article of
   tests/web_articles.py with its main-text recall (target >= 90%) and boilerplate fraction
   (target <= 5%), the PDF, the login form, and the 50 MB page (capped at web.max_page_bytes).
2. The browser: start-up (first browser_navigate of a session: Chromium launched through
   Playwright, guard proxy on) and per-action latency of navigate, snapshot, type, click, back.
3. What the toolsets add to every request (schema tokens, characters/4): web (with a search
   backend configured), vision, browser.

    .venv/bin/python bench/web.py [--runs 5] [--no-browser]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def timed(fn, runs: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(runs):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def bench_extract(web, runs: int) -> bool:
    from hermes_core.config import parse_config
    from tests.web_articles import ARTICLES, score
    from tools.registry import ToolContext, dispatch

    ctx = ToolContext(cwd=Path(tempfile.mkdtemp()), config=parse_config(
        {"web": {"allow_private": True, "page_tokens": 100_000}}))
    ok = True
    print("web_extract over loopback (median of %d):" % runs)
    print(f"  {'page':<14}{'time':>10}  {'recall':>7}  {'boilerplate':>11}")
    for slug, article in ARTICLES.items():
        dt, out = timed(lambda: dispatch("web_extract", {"urls": [web.url(f"/article/{slug}")]},
                                         ctx), runs)
        recall, boiler = score(article, str(out).split("\n\n", 1)[1])
        ok = ok and recall >= 0.9 and boiler <= 0.05
        print(f"  {slug:<14}{dt * 1000:>8.1f}ms  {recall:>7.0%}  {boiler:>11.1%}")
    for label, path, n in (("pdf", "/doc.pdf", runs), ("login form", "/login", runs),
                           ("50 MB page", "/huge", 1)):
        dt, _ = timed(lambda: dispatch("web_extract", {"urls": [web.url(path)]}, ctx), n)
        print(f"  {label:<14}{dt * 1000:>8.1f}ms")
    print(f"  (50 MB page: {web.huge_sent / 1e6:.1f} MB left the server before the cap closed "
          "the connection)")
    return ok


def bench_browser(web, runs: int) -> None:
    from hermes_core.config import parse_config
    from tools.browser.host import HOST
    from tools.browser.session import SESSIONS
    from tools.registry import ToolContext, dispatch

    cfg = parse_config({"web": {"allow_hosts": [f"127.0.0.1:{web.port}"]}})
    ctx = ToolContext(cwd=Path(tempfile.gettempdir()), config=cfg, session_id="bench")
    t = time.perf_counter()
    dispatch("browser_navigate", {"url": web.url("/login")}, ctx)
    startup = time.perf_counter() - t
    print(f"browser: start-up + first navigate {startup * 1000:.0f} ms (Chromium via Playwright, "
          "guard proxy on)")

    def step(out: dict[str, float], name: str, tool: str, args: dict) -> str:
        t0 = time.perf_counter()
        result = dispatch(tool, args, ctx)
        out[name] = time.perf_counter() - t0
        return result

    def cycle() -> dict[str, float]:
        out: dict[str, float] = {}
        step(out, "navigate", "browser_navigate", {"url": web.url("/login")})
        snap = step(out, "snapshot", "browser_snapshot", {})
        user = re.search(r'textbox "Username" (@\S+)', snap).group(1)
        button = re.search(r'button "Sign in" (@\S+)', snap).group(1)
        step(out, "type", "browser_type", {"ref": user, "text": "bob"})
        step(out, "click (submits)", "browser_click", {"ref": button})
        step(out, "back", "browser_back", {})
        return out

    samples = [cycle() for _ in range(runs)]
    for name in samples[0]:
        print(f"  {name:<16}{statistics.median(s[name] for s in samples) * 1000:>8.0f} ms")
    print("  (actions that change the page wait up to 3 s for the network to go quiet, at "
          "least 0.5 s, and answer with a fresh snapshot)")
    HOST.run(SESSIONS.close_all, 30)


def bench_schemas() -> None:
    os.environ.setdefault("EXA_API_KEY", "bench")  # a backend is configured: web_search listed
    from tools.registry import get_tool_definitions

    print("schema tokens per request (characters/4):")
    for toolset in ("web", "vision", "browser"):
        defs = get_tool_definitions([toolset])
        names = ", ".join(d["function"]["name"] for d in defs)
        print(f"  {toolset:<8}{sum(len(json.dumps(d)) for d in defs) // 4:>5}  ({names})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--no-browser", action="store_true")
    args = ap.parse_args()
    os.environ["HERMES_HOME"] = tempfile.mkdtemp(prefix="hermes-bench-web-")
    from tests.web_server import WebServer

    web = WebServer().start()
    try:
        ok = bench_extract(web, args.runs)
        if not args.no_browser:
            bench_browser(web, args.runs)
        bench_schemas()
    finally:
        web.stop()
    print(f"extraction targets (recall >= 90%, boilerplate <= 5%): {'OK' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
