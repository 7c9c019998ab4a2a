"""The dashboard's first load and its time to first streamed token, against the same turn over
the API.

1. Page weight: what Chromium transfers to show the login page (HTML, script, style; headers
   included), from a real ``hermes dashboard``. Budget: 300 KB, everything served locally.
2. Time to first token, median of N turns on one session, the provider answering after
   ``--delay`` seconds in 5 chunks:
   - in the page: from the Send click to the first text in the answer bubble (measured in the
     page: session, ``POST /v1/runs``, the events stream, the DOM update);
   - over the API: a streamed ``/v1/chat/completions`` with ``X-Hermes-Session-Key``, to the
     first content delta, from Python, on the same server.

    .venv/bin/python bench/dashboard.py [--turns 10] [--delay 0.05]

Needs Debian's chromium (``apt-get install chromium``) and playwright.
"""
from __future__ import annotations

import argparse
import http.client
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.dashboard.conftest import DashboardProcess  # noqa: E402
from tests.fake_provider import FakeProvider, text  # noqa: E402

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
MEASURE = """() => new Promise((resolve) => {
  const t0 = performance.now();
  const box = document.getElementById("transcript");
  const seen = new MutationObserver(() => {
    const bubble = box.querySelector(".msg.assistant.streaming");
    if (bubble && bubble.textContent.length) { seen.disconnect(); resolve(performance.now() - t0); }
  });
  seen.observe(box, { subtree: true, childList: true, characterData: true });
  document.querySelector("form.row button[type=submit]").click();
})"""


def page_side(dash: DashboardProcess, provider: FakeProvider, turns: int, delay: float
              ) -> tuple[float, list[float]]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        sent: list[int] = []
        page.on("requestfinished", lambda r: sent.append(_transfer(r)))
        page.goto(dash.url)
        page.wait_for_selector("#token")
        page.wait_for_load_state("networkidle")
        weight = sum(sent) / 1024
        page.fill("#token", dash.token)
        page.click("#login-form button")
        page.wait_for_selector("#chat-input")
        times = []
        for n in range(turns):
            provider.queue(text(f"answer number {n} streamed in five chunks", delay=delay,
                                chunks=5))
            page.fill("#chat-input", f"question {n}")
            times.append(page.evaluate(MEASURE) / 1000)
            page.wait_for_selector(f".msg.assistant.done:has-text('answer number {n}')")
        browser.close()
    return weight, times


def _transfer(request) -> int:  # noqa: ANN001 - playwright's Request
    sizes = request.sizes()
    return sizes["responseBodySize"] + sizes["responseHeadersSize"]


def api_side(dash: DashboardProcess, provider: FakeProvider, turns: int, delay: float
             ) -> list[float]:
    parts = urlsplit(dash.base)
    times = []
    for n in range(turns):
        provider.queue(text(f"answer number {n} streamed in five chunks", delay=delay, chunks=5))
        body = json.dumps({"model": "m", "stream": True,
                           "messages": [{"role": "user", "content": f"question {n}"}]})
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
        start = time.perf_counter()
        conn.request("POST", "/v1/chat/completions", body=body, headers={
            "Authorization": f"Bearer {dash.token}", "Content-Type": "application/json",
            "X-Hermes-Session-Key": "bench-api"})
        resp = conn.getresponse()
        first = None
        for raw in resp:
            line = raw.decode().strip()
            if first is None and line.startswith("data: {"):
                delta = json.loads(line[6:])["choices"]
                if delta and delta[0]["delta"].get("content"):
                    first = time.perf_counter() - start
        conn.close()
        times.append(first or float("nan"))
    return times


def ms(xs: list[float]) -> str:
    return f"median {statistics.median(xs) * 1000:.0f} ms (min {min(xs) * 1000:.0f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--turns", type=int, default=10)
    ap.add_argument("--delay", type=float, default=0.05, help="provider's seconds before answering")
    args = ap.parse_args()
    provider = FakeProvider().start()
    with tempfile.TemporaryDirectory() as tmp:
        dash = DashboardProcess(Path(tmp) / "home", provider)
        try:
            weight, page_times = page_side(dash, provider, args.turns, args.delay)
            api_times = api_side(dash, provider, args.turns, args.delay)
        finally:
            dash.stop()
            provider.stop()
    print(f"first load: {weight:.1f} KB transferred (budget 300 KB, no CDN)")
    print(f"time to first token, provider delay {args.delay * 1000:.0f} ms, {args.turns} turns:")
    print(f"  in the page (click -> first text in the bubble): {ms(page_times)}")
    print(f"  over the API (streamed chat completion):         {ms(api_times)}")


if __name__ == "__main__":
    main()
