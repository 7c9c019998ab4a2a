"""A loopback web server for the web and browser tests: real HTTP on 127.0.0.1.

Pages: ``/article/<slug>`` (tests/web_articles.py), ``/login`` (a form that posts to
``/welcome``), ``/redirect?to=URL``, ``/loop`` (redirects forever), ``/huge`` (50 MB, streamed;
``huge_sent`` counts what actually left), ``/doc.pdf``, ``/image.png``, ``/slow`` (never finishes
its body), ``/secret`` (what the SSRF tests must never reach; ``hits`` counts every path), hostile pages
(``/bomb`` gzip bomb, ``/nested`` 20,000 nested divs, ``/binary``, ``/badcharset``).
Fake search APIs with each provider's answer shape: ``/searxng/search``, ``/brave/search``,
``/tavily/search``, ``/exa/search``, ``/firecrawl/v1/search``; ``api_requests`` records them.
"""
from __future__ import annotations

import json
import struct
import threading
import zlib
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.web_articles import ARTICLES

HUGE_BYTES = 50 * 1024 * 1024
PDF_TEXT = ("Quarterly report of the lighthouse keepers guild", "The lamp burned 2,190 hours.")

LOGIN_PAGE = b"""<!DOCTYPE html><html><head><title>Sign in</title></head><body>
<h1>Members area</h1><form action="/welcome" method="post">
<label for="user">Username</label> <input id="user" name="user">
<label for="pw">Password</label> <input id="pw" name="pw" type="password">
<button type="submit">Sign in</button></form>
<p><a href="/article/tides">Read the tide story</a></p>
<img src="/image.png" alt="guild logo" width="2" height="2">
<script>console.log("login page ready")</script></body></html>"""


def make_pdf(lines: tuple[str, ...]) -> bytes:
    """A one-page PDF whose text layer holds ``lines`` (hand-built: no PDF writer needed)."""
    ops = "BT /F1 14 Tf 72 720 Td " + " ".join(
        f"({line}) Tj 0 -24 Td" for line in lines) + " ET"
    objs = ["<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
            "/Resources << /Font << /F1 5 0 R >> >> >>",
            f"<< /Length {len(ops)} >>\nstream\n{ops}\nendstream",
            "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for n, obj in enumerate(objs, start=1):
        offsets.append(len(out))
        out += f"{n} 0 obj\n{obj}\nendobj\n".encode()
    xref = len(out)
    out += f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode()
    out += "".join(f"{o:010d} 00000 n \n" for o in offsets).encode()
    out += f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def make_png(width: int = 2, height: int = 2) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(
            ">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    raw = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0,
                                                                0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def _bomb() -> tuple[bytes, dict[str, str]]:
    """200 MB of markup that arrive as 200 kB of gzip."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b"<p>" + b"a" * 1_000_000 + b"</p>"
    data = z.compress(b"<html><body>") + b"".join(z.compress(chunk) for _ in range(200))
    return data + z.flush(), {"Content-Type": "text/html", "Content-Encoding": "gzip"}


HOSTILE = {
    "/bomb": _bomb,
    "/nested": lambda: (b"<html><body>" + b"<div>" * 20000 + b"deep text" + b"</div>" * 20000
                        + b"</body></html>", {"Content-Type": "text/html"}),
    "/binary": lambda: (bytes(range(256)) * 64, {"Content-Type": "application/octet-stream"}),
    "/badcharset": lambda: ("<html><body><p>caf\u00e9 au lait, a long enough paragraph of "
                            "text to count as the page's content.</p></body></html>".encode(),
                            {"Content-Type": "text/html; charset=x-no-such-charset"}),
}

SEARCH_HITS = [("Tide ledgers of Kelmsford", "https://example.org/tides", "Handwritten records."),
               ("Rooftop bees", "https://example.org/bees", "Six years of swarms.")]


def search_answer(provider: str) -> dict:
    rows = SEARCH_HITS
    if provider == "searxng":
        return {"results": [{"title": t, "url": u, "content": s} for t, u, s in rows]}
    if provider == "brave":
        return {"web": {"results": [{"title": t, "url": u, "description": s} for t, u, s in rows]}}
    if provider == "tavily":
        return {"results": [{"title": t, "url": u, "content": s, "score": 0.9} for t, u, s in rows]}
    if provider == "exa":
        return {"results": [{"title": t, "url": u, "highlights": [s]} for t, u, s in rows]}
    return {"success": True, "data": [{"title": t, "url": u, "description": s} for t, u, s in rows]}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "_Server"

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, body: bytes, ctype: str = "text/html; charset=utf-8",
              headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._route("GET", b"")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self._route("POST", self.rfile.read(length) if length else b"")

    def _route(self, method: str, body: bytes) -> None:
        parts = urlsplit(self.path)
        path, query = parts.path, parse_qs(parts.query)
        web = self.server.web
        with web.lock:
            web.hits[path] += 1
        if path.startswith("/article/") and path[9:] in ARTICLES:
            return self._send(200, ARTICLES[path[9:]].html.encode())
        simple = {"/login": (LOGIN_PAGE, "text/html; charset=utf-8"),
                  "/doc.pdf": (make_pdf(PDF_TEXT), "application/pdf"),
                  "/image.png": (make_png(), "image/png"),
                  "/secret": (b"the internal secret", "text/plain")}
        if path in simple:
            return self._send(200, *simple[path])
        if path == "/welcome":
            user = parse_qs(body.decode()).get("user", ["?"])[0]
            return self._send(200, f"<html><title>Welcome</title><body><h1>Welcome, {user}!</h1>"
                                   "</body></html>".encode())
        if path == "/redirect":
            return self._send(302, b"", headers={"Location": query.get("to", ["/"])[0]})
        if path == "/loop":
            return self._send(302, b"", headers={"Location": "/loop"})
        if path == "/huge":
            return self._huge()
        if path in HOSTILE:
            body, headers = HOSTILE[path]()
            return self._send(200, body, headers.pop("Content-Type"), headers)
        if path == "/slow":
            return self._slow()
        provider = path.strip("/").split("/")[0]
        if provider in ("searxng", "brave", "tavily", "exa", "firecrawl"):
            return self._api(provider, method, body, query)
        self._send(404, b"<html><body>not found</body></html>")

    def _api(self, provider: str, method: str, body: bytes, query: dict) -> None:
        web = self.server.web
        with web.lock:
            web.api_requests.append({"provider": provider, "method": method, "query": query,
                                     "headers": {k.lower(): v for k, v in self.headers.items()},
                                     "json": json.loads(body) if body else None})
        status, answer = web.api_override.get(provider, (200, search_answer(provider)))
        self._send(status, json.dumps(answer).encode(), "application/json")

    def _huge(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(HUGE_BYTES))
        self.end_headers()
        block = b"<p>" + b"filler text of the huge page " * 2200 + b"</p>\n"
        sent = 0
        try:
            self.wfile.write(b"<html><head><title>Huge</title></head><body><h1>Huge page</h1>")
            while sent < HUGE_BYTES:
                n = min(len(block), HUGE_BYTES - sent)
                self.wfile.write(block[:n])
                sent += n
                with self.server.web.lock:
                    self.server.web.huge_sent = sent
        except OSError:
            self.close_connection = True
        finally:
            self.server.web.huge_done.set()

    def _slow(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", "100000")
        self.end_headers()
        try:
            self.wfile.write(b"<html><body>")
            self.wfile.flush()
            self.server.web.release.wait(30)
        except OSError:
            pass
        self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    web: "WebServer"

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if isinstance(sys.exc_info()[1], OSError):
            return  # a client that dropped the connection (the page cap does): expected
        super().handle_error(request, client_address)


class WebServer:
    """Start with ``WebServer().start()``; ``url(path)``; ``stop()``."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.hits: Counter = Counter()
        self.api_requests: list[dict] = []
        self.api_override: dict[str, tuple[int, Any]] = {}
        self.huge_sent = 0
        self.huge_done = threading.Event()  # the /huge handler stopped writing
        self.release = threading.Event()
        self._server: _Server | None = None

    def start(self) -> "WebServer":
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.web = self
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                         daemon=True, name="web-test-server").start()
        return self

    @property
    def port(self) -> int:
        assert self._server is not None
        return self._server.server_address[1]

    def url(self, path: str = "/", host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def stop(self) -> None:
        self.release.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
