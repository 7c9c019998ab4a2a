"""A loopback Anthropic Messages API server for tests (next to ``tests/fake_provider.py``).

Real HTTP on 127.0.0.1 (``ThreadingHTTPServer``, keep-alive), what the ``anthropic`` SDK talks
to: ``POST /v1/messages`` (JSON, or SSE events when the body says ``stream``) and ``GET
/v1/models``. The ``fake_anthropic`` fixture (tests/conftest.py) gives a started one::

    fa.queue(tool_use([("read_file", {"path": "a.txt"})]), text("done"))
    agent = AIAgent(provider="anthropic", base_url=fa.base_url, api_key="k", model="claude-x")

Replies: the next queued one, else ``fa.handler(body)`` when set, else ``fa.default``. Helpers:
``text``, ``tool_use``, ``error``, ``rate_limited`` (429 + retry-after), ``overloaded`` (529),
``overflow`` ("prompt is too long: N tokens > M maximum"), ``exceeds_limit`` (the "input length
and `max_tokens` exceed context limit" wording), ``stream_error`` (an ``error`` event after some
text, on a 200 stream).

Keys (``x-api-key``, or ``Authorization: Bearer``): every key is accepted unless
``fa.key_status`` names it: ``{"k2": 401, "k3": 429}`` answers those keys with that error (``fa.keys_seen`` lists what arrived, in order).

The prompt cache: each request's prefix (tools, system, then every content block) is cut at its
``cache_control`` breakpoints; a prefix seen at a breakpoint before is read from the cache, up to
``LOOKBACK`` blocks before a breakpoint (as the real API looks back). ``usage`` reports
``cache_read_input_tokens``, ``cache_creation_input_tokens`` and the rest as ``input_tokens``;
``fa.cache_read``, ``fa.cache_written`` and ``fa.prompt_tokens`` are the totals.

As a process: ``python -m tests.fake_anthropic --port 0 [--reply TEXT]`` prints ``READY URL``.
"""
from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import signal
import sys
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Optional

LOOKBACK = 20
MODEL_ID = "claude-fake-1"


@dataclass
class Reply:
    kind: str = "text"  # text | tool_use | error | stream_error
    text: str = "ok"
    calls: list[tuple[str, dict]] = field(default_factory=list)
    thinking: Optional[str] = None
    status: int = 200
    error_type: str = ""
    message: str = ""
    headers: dict[str, str] = field(default_factory=dict)


def text(content: str, thinking: Optional[str] = None) -> Reply:
    return Reply("text", content, thinking=thinking)


def tool_use(calls: list[tuple[str, dict]], content: str = "",
             thinking: Optional[str] = None) -> Reply:
    return Reply("tool_use", content, calls=list(calls), thinking=thinking)


def error(status: int, error_type: str, message: str,
          headers: Optional[dict[str, str]] = None) -> Reply:
    return Reply("error", status=status, error_type=error_type, message=message,
                 headers=dict(headers or {}))


def rate_limited(retry_after: float = 0) -> Reply:
    return error(429, "rate_limit_error", "Number of request tokens has exceeded your rate limit",
                 {"retry-after": str(retry_after)})


def overloaded() -> Reply:
    return error(529, "overloaded_error", "Overloaded", {"retry-after": "0"})


def overflow(tokens: int, maximum: int) -> Reply:
    return error(400, "invalid_request_error",
                 f"prompt is too long: {tokens} tokens > {maximum} maximum")


def exceeds_limit(tokens: int, max_tokens: int, limit: int) -> Reply:
    return error(400, "invalid_request_error",
                 f"input length and `max_tokens` exceed context limit: {tokens} + {max_tokens} > "
                 f"{limit}, decrease input length or `max_tokens` and try again")


def stream_error(error_type: str = "overloaded_error", partial: str = "par") -> Reply:
    return Reply("stream_error", partial, error_type=error_type, message="Overloaded")


def _canon(unit: Any) -> str:
    if isinstance(unit, dict):
        unit = {k: v for k, v in unit.items() if k != "cache_control"}
    return json.dumps(unit, sort_keys=True, separators=(",", ":"))


def units(body: dict) -> list[tuple[str, int, bool]]:
    """The request's prefix as (canonical text, tokens, has a breakpoint), in cache order."""
    out = []
    system = body.get("system") or []
    system = [{"type": "text", "text": system}] if isinstance(system, str) else system
    for item in list(body.get("tools") or []) + list(system):
        out.append(item)
    for msg in body.get("messages") or []:
        content = msg.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for i, block in enumerate(blocks or []):
            out.append({"role": msg.get("role"), "first": i == 0, **block})
    canon = [_canon(u) for u in out]  # once per unit: the fake's own time is in every benchmark
    return [(c, len(c) // 4 + 1, isinstance(u, dict) and "cache_control" in u)
            for c, u in zip(canon, out)]


def estimate_tokens(body: dict) -> int:
    return sum(t for _, t, _ in units(body))


class _Cache:
    """Prefix hashes written at breakpoints; a request reads the longest one it repeats."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.lock = threading.Lock()

    def account(self, body: dict) -> tuple[int, int, int]:
        parts = units(body)
        digests, h = [], hashlib.sha256()
        for canon, _, _ in parts:
            h.update(canon.encode())
            digests.append(h.copy().hexdigest())
        marks = [i for i, (_, _, bp) in enumerate(parts) if bp]
        tokens = [t for _, t, _ in parts]
        with self.lock:
            near = {j for m in marks for j in range(max(0, m - LOOKBACK), m + 1)}
            hits = [j for j in near if digests[j] in self.seen]
            hit = max(hits) if hits else -1
            last = max(marks) if marks else -1
            self.seen.update(digests[m] for m in marks)
        read = sum(tokens[:hit + 1])
        written = sum(tokens[hit + 1:last + 1]) if last > hit else 0
        return sum(tokens) - read - written, read, written


class FakeAnthropic:
    """See the module docstring."""

    def __init__(self, default: Optional[Reply] = None) -> None:
        self.default = default or text("ok")
        self.handler: Optional[Callable[[dict], Optional[Reply]]] = None
        self.models: list[dict] = [{"id": MODEL_ID, "display_name": "Claude Fake",
                                    "max_input_tokens": 200_000}]
        self.key_status: dict[str, int] = {}
        self.keys_seen: list[str] = []
        self.requests: list[dict] = []
        self.headers: list[dict[str, str]] = []
        self.usages: list[dict] = []
        self.window: Optional[int] = None  # over this (estimated): overflow errors
        self._queue: list[Reply] = []
        self._lock = threading.Lock()
        self._cache = _Cache()
        self._ids = itertools.count(1)
        self._server: Optional[ThreadingHTTPServer] = None
        self.base_url = ""

    # ---- lifecycle

    def start(self, port: int = 0) -> "FakeAnthropic":
        server = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
        server.daemon_threads = True
        server.fake = self  # type: ignore[attr-defined]
        self._server = server
        self.base_url = f"http://127.0.0.1:{server.server_address[1]}"
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                         daemon=True, name="fake-anthropic").start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def queue(self, *replies: Reply | str) -> None:
        with self._lock:
            self._queue.extend(text(r) if isinstance(r, str) else r for r in replies)

    @property
    def cache_read(self) -> int:
        return sum(u["cache_read_input_tokens"] for u in self.usages)

    @property
    def cache_written(self) -> int:
        return sum(u["cache_creation_input_tokens"] for u in self.usages)

    @property
    def prompt_tokens(self) -> int:
        return sum(u["input_tokens"] + u["cache_read_input_tokens"]
                   + u["cache_creation_input_tokens"] for u in self.usages)

    # ---- used by the handler

    def pick(self, body: dict, key: str) -> Reply:
        with self._lock:
            self.requests.append(body)
            self.keys_seen.append(key)
            status = self.key_status.get(key)
        if status == 401:
            return error(401, "authentication_error", "invalid x-api-key")
        if status == 429:
            return rate_limited(0)
        if self.window is not None and estimate_tokens(body) > self.window:
            return overflow(estimate_tokens(body), self.window)
        with self._lock:
            if self._queue:
                return self._queue.pop(0)
        found = self.handler(body) if self.handler is not None else None
        return found or self.default

    def usage(self, body: dict, reply: Reply) -> dict:
        fresh, read, written = self._cache.account(body)
        out = len(reply.text) // 4 + 1 + sum(len(json.dumps(a)) // 4 for _, a in reply.calls)
        usage = {"input_tokens": fresh, "cache_read_input_tokens": read,
                 "cache_creation_input_tokens": written, "output_tokens": out}
        with self._lock:
            self.usages.append(usage)
        return usage

    def blocks(self, reply: Reply) -> list[dict]:
        out: list[dict] = []
        if reply.thinking:
            out.append({"type": "thinking", "thinking": reply.thinking, "signature": "sig-fake"})
        if reply.text:
            out.append({"type": "text", "text": reply.text})
        for name, args in reply.calls:
            out.append({"type": "tool_use", "id": f"toolu_{next(self._ids):04d}", "name": name,
                        "input": args})
        return out


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers, body: two writes; no 40 ms delayed-ACK stalls

    def log_message(self, *args: Any) -> None:
        pass

    @property
    def fake(self) -> FakeAnthropic:
        return self.server.fake  # type: ignore[attr-defined]

    def _json(self, status: int, data: dict, headers: Optional[dict] = None) -> None:
        raw = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(raw)

    def _key(self) -> str:
        """The request's API key: ``x-api-key``, or the bearer token newer SDKs send."""
        bearer = (self.headers.get("authorization") or "").removeprefix("Bearer ").strip()
        return self.headers.get("x-api-key") or bearer

    def do_GET(self) -> None:  # noqa: N802
        if self.path.split("?")[0] != "/v1/models":
            return self._json(404, {"type": "error", "error": {"type": "not_found_error",
                                                                "message": self.path}})
        data = [{"type": "model", "created_at": "2025-01-01T00:00:00Z", **m}
                for m in self.fake.models]
        self._json(200, {"data": data, "has_more": False})

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        fake = self.fake
        fake.headers.append({k.lower(): v for k, v in self.headers.items()})
        reply = fake.pick(body, self._key())
        if reply.kind == "error":
            return self._json(reply.status, {"type": "error", "error": {
                "type": reply.error_type, "message": reply.message}}, reply.headers)
        usage = fake.usage(body, reply)
        blocks = fake.blocks(reply)
        stop = "tool_use" if reply.calls else "end_turn"
        message = {"id": f"msg_{next(fake._ids)}", "type": "message", "role": "assistant",
                   "model": body.get("model") or MODEL_ID, "stop_sequence": None}
        if not body.get("stream"):
            return self._json(200, {**message, "content": blocks, "stop_reason": stop,
                                    "usage": usage})
        self._stream(message, blocks, stop, usage, reply)

    def _event(self, name: str, data: dict) -> None:
        self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()

    def _stream(self, message: dict, blocks: list[dict], stop: str, usage: dict,
                reply: Reply) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        start_usage = {**usage, "output_tokens": 1}
        self._event("message_start", {"type": "message_start", "message": {
            **message, "content": [], "stop_reason": None, "usage": start_usage}})
        self._event("ping", {"type": "ping"})
        for i, block in enumerate(blocks):
            self._block(i, block)
            if reply.kind == "stream_error":
                self._event("error", {"type": "error", "error": {"type": reply.error_type,
                                                                  "message": reply.message}})
                return
        self._event("message_delta", {"type": "message_delta", "delta": {
            "stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": usage["output_tokens"]}})
        self._event("message_stop", {"type": "message_stop"})

    def _block(self, i: int, block: dict) -> None:
        kind = block["type"]
        empty = {"text": {"type": "text", "text": ""},
                 "thinking": {"type": "thinking", "thinking": "", "signature": ""},
                 "tool_use": {**block, "input": {}}}[kind]
        self._event("content_block_start", {"type": "content_block_start", "index": i,
                                            "content_block": empty})
        if kind == "text":
            deltas = [{"type": "text_delta", "text": block["text"][j:j + 4]}
                      for j in range(0, len(block["text"]), 4)]
        elif kind == "thinking":
            deltas = [{"type": "thinking_delta", "thinking": block["thinking"]},
                      {"type": "signature_delta", "signature": block["signature"]}]
        else:
            raw = json.dumps(block["input"])
            deltas = [{"type": "input_json_delta", "partial_json": raw[j:j + 5]}
                      for j in range(0, len(raw), 5)]
        for delta in deltas:
            self._event("content_block_delta", {"type": "content_block_delta", "index": i,
                                                "delta": delta})
        self._event("content_block_stop", {"type": "content_block_stop", "index": i})


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.fake_anthropic")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--reply", default="ok")
    args = ap.parse_args(argv)
    fake = FakeAnthropic(text(args.reply)).start(args.port)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    print(f"READY {fake.base_url}", flush=True)
    done.wait()
    fake.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
