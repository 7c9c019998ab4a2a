"""A loopback OpenAI-compatible chat-completions server for tests.

Real HTTP on 127.0.0.1 (ephemeral port), served by a ``ThreadingHTTPServer`` in a
background thread, HTTP/1.1 keep-alive (the openai SDK reuses connections).

Typical use (the ``fake_provider`` fixture in ``tests/conftest.py`` gives a started one)::

    fp.queue(tool_calls([("read_file", {"path": "a.txt"})]), text("done"))
    agent = AIAgent(base_url=fp.base_url, api_key="test", model="fake-model")
    ...
    assert all(check_well_formed(b) == [] for b in fp.requests)

Reply selection for each ``POST /v1/chat/completions``: the next queued reply, else
``fp.handler(body)`` when set, else ``fp.default`` (text "ok").  A handler may return a
``Reply``, a plain ``str`` (-> ``text(str)``) or ``None`` (-> ``fp.default``).

Handlers that react to the request size::

    fp.handler = window_limited(8000)              # 400 "prompt is too long" over 8000 est. tokens
    fp.handler = size_limited_413(200_000)         # 413 when the raw body exceeds 200 kB

    # or written by hand:
    def handler(body):
        n = estimate_prompt_tokens(body)
        return overflow(n, 8000) if n > 8000 else text("fine")

``fp.models`` is the list ``GET /v1/models`` serves (default ``["fake-model"]``).

Inspection: ``fp.requests`` (JSON bodies, in order), ``fp.raw_requests`` (bytes),
``fp.request_headers`` (lower-cased names), ``fp.last_request``, ``fp.pending`` (queued
replies left), ``fp.wait_for_requests(n, timeout)``.  ``estimate_prompt_tokens(body)`` is the
``usage.prompt_tokens`` the fake reports unless a reply overrides ``usage``.

As a separate process (benchmarks, CLI tests)::

    python -m tests.fake_provider --port 0 [--delay 1.0] [--reply "text"]

(run from the repo root; ``python tests/fake_provider.py ...`` works from anywhere) prints
``READY http://127.0.0.1:PORT/v1`` on stdout once it is serving; SIGTERM/SIGINT stop it.
"""

from __future__ import annotations

import argparse
import copy
import itertools
import json
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterable

__all__ = [
    "FakeProvider",
    "Reply",
    "text",
    "tool_calls",
    "error",
    "error_413",
    "overflow",
    "rate_limited",
    "server_error",
    "cut_stream",
    "garbage",
    "slow",
    "window_limited",
    "size_limited_413",
    "estimate_prompt_tokens",
    "check_well_formed",
]

MODEL_ID = "fake-model"


# --------------------------------------------------------------------------------------
# Replies
# --------------------------------------------------------------------------------------


@dataclass
class Reply:
    """One scripted answer. Build with the module-level constructors, not directly.

    kind: "text" | "tool_calls" | "error" | "cut" | "garbage"
    """

    kind: str = "text"
    content: str | None = "ok"
    tool_calls: list[dict] = field(default_factory=list)
    usage: dict | None = None
    delay: float = 0.0
    finish_reason: str | None = "stop"
    chunks: int = 3  # streamed: number of content / argument pieces
    reasoning: str | None = None  # sent as reasoning_content (streamed: before the content)
    chunk_delay: float = 0.0  # streamed: pause between SSE events
    # error / garbage
    status: int = 200
    message: str = ""
    type: str | None = None
    code: str | int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: str | bytes | None = None

    @property
    def is_success(self) -> bool:
        return self.kind in ("text", "tool_calls")


def _as_reply(value: Any) -> Reply | None:
    if value is None or isinstance(value, Reply):
        return value
    if isinstance(value, str):
        return text(value)
    raise TypeError(f"handler returned {type(value).__name__}, expected Reply, str or None")


def text(
    content: str,
    *,
    usage: dict | None = None,
    delay: float = 0.0,
    finish_reason: str = "stop",
    chunks: int = 3,
    chunk_delay: float = 0.0,
    reasoning: str | None = None,
) -> Reply:
    """A plain assistant answer. ``usage`` (possibly partial) overrides the computed usage.
    When streamed, the content is sent in ``chunks`` deltas ``chunk_delay`` seconds apart."""
    return Reply(
        kind="text",
        content=content,
        usage=usage,
        delay=delay,
        finish_reason=finish_reason,
        chunks=max(1, chunks),
        chunk_delay=chunk_delay,
        reasoning=reasoning,
    )


def tool_calls(
    calls: Iterable[tuple[str, dict | str] | tuple[str, dict | str, str]],
    content: str | None = None,
    *,
    usage: dict | None = None,
    delay: float = 0.0,
) -> Reply:
    """An assistant turn with tool calls.

    Each call is ``(name, args)`` where args is a dict (JSON-encoded) or a raw string sent
    verbatim (use that for malformed JSON), optionally ``(name, args, id)`` to pin the id.
    Unpinned ids are assigned when the reply is served: ``call_<n>``, n counting from 1 per
    provider (``reset()`` restarts it), so a reused reply never repeats an id.
    """
    out = []
    for call in calls:
        if len(call) == 3:
            name, args, call_id = call  # type: ignore[misc]
        else:
            name, args = call  # type: ignore[misc]
            call_id = None
        arguments = args if isinstance(args, str) else json.dumps(args)
        out.append(
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        )
    return Reply(
        kind="tool_calls",
        content=content,
        tool_calls=out,
        usage=usage,
        delay=delay,
        finish_reason="tool_calls",
    )


def error(
    status: int,
    message: str,
    *,
    type: str | None = None,  # noqa: A002 - mirrors the OpenAI field name
    code: str | int | None = None,
    headers: dict[str, str] | None = None,
    body: str | bytes | dict | None = None,
    delay: float = 0.0,
) -> Reply:
    """An HTTP error with an OpenAI error body ``{"error": {"message", "type", "code"}}``.

    ``body`` replaces the whole response body (a dict is JSON-encoded).
    """
    if isinstance(body, dict):
        body = json.dumps(body)
    return Reply(
        kind="error",
        content=None,
        status=status,
        message=message,
        type=type,
        code=code,
        headers=dict(headers or {}),
        body=body,
        delay=delay,
        finish_reason=None,
    )


def error_413() -> Reply:
    return error(413, "Request entity too large", type="invalid_request_error")


def overflow(tokens: int, maximum: int) -> Reply:
    """The context-overflow 400 (Anthropic/OpenRouter wording)."""
    return error(
        400,
        f"prompt is too long: {tokens} tokens > {maximum} maximum",
        type="invalid_request_error",
        code="context_length_exceeded",
    )


def rate_limited(retry_after: float | int = 1) -> Reply:
    ra = str(int(retry_after)) if float(retry_after).is_integer() else str(retry_after)
    return error(
        429,
        "Rate limit exceeded, please retry later",
        type="rate_limit_error",
        code="rate_limit_exceeded",
        headers={"Retry-After": ra},
    )


def server_error(status: int = 500) -> Reply:
    return error(status, f"Internal server error ({status})", type="server_error")


def cut_stream(content: str = "partial answer that never fin") -> Reply:
    """Streamed: a few SSE chunks then the socket closes without [DONE] / chunk terminator.
    Non-streamed: headers promising the full body, half of it, then close."""
    return Reply(kind="cut", content=content, finish_reason=None)


def garbage(body: str | bytes = "not json", *, status: int = 200, content_type: str = "application/json") -> Reply:
    """A 200 (by default) whose body is not a chat completion."""
    return Reply(
        kind="garbage",
        content=None,
        status=status,
        body=body,
        headers={"Content-Type": content_type},
        finish_reason=None,
    )


def slow(reply: Reply, seconds: float) -> Reply:
    """``reply`` delayed by ``seconds`` before anything is sent."""
    return replace(reply, delay=seconds)


# --------------------------------------------------------------------------------------
# Token estimate and request-shape helpers
# --------------------------------------------------------------------------------------


def _content_chars(content: Any) -> int:
    if content is None:
        return 0
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        n = 0
        for part in content:
            if isinstance(part, dict):
                if isinstance(part.get("text"), str):
                    n += len(part["text"])
            elif isinstance(part, str):
                n += len(part)
        return n
    return len(str(content))


def estimate_prompt_tokens(body: dict) -> int:
    """Deterministic prompt-token reading the fake reports as ``usage.prompt_tokens``:
    (chars of all message contents + tool-call arguments + tools JSON) // 4 + 4 per message."""
    messages = body.get("messages") or []
    chars = 0
    for msg in messages:
        if not isinstance(msg, dict):
            continue
        chars += _content_chars(msg.get("content"))
        for tc in msg.get("tool_calls") or []:
            fn = (tc or {}).get("function") or {}
            args = fn.get("arguments")
            if isinstance(args, str):
                chars += len(args)
            elif args is not None:
                chars += len(json.dumps(args))
    if body.get("tools"):
        chars += len(json.dumps(body["tools"]))
    return chars // 4 + 4 * len(messages)


def window_limited(
    limit_tokens: int, reply_factory: Callable[[dict], Reply | str | None] | None = None
) -> Callable[[dict], Reply | None]:
    """Handler: ``overflow(est, limit_tokens)`` when the request's estimated prompt tokens
    exceed the limit, else ``reply_factory(body)`` (or ``fp.default`` when no factory)."""

    def handler(body: dict) -> Reply | None:
        est = estimate_prompt_tokens(body)
        if est > limit_tokens:
            return overflow(est, limit_tokens)
        return _as_reply(reply_factory(body)) if reply_factory else None

    return handler


def size_limited_413(
    max_bytes: int, reply_factory: Callable[[dict], Reply | str | None] | None = None
) -> Callable[..., Reply | None]:
    """Handler: 413 when the raw request body is larger than ``max_bytes``, else
    ``reply_factory(body)`` (or ``fp.default``)."""

    def handler(body: dict, raw: bytes | None = None) -> Reply | None:
        size = len(raw) if raw is not None else len(json.dumps(body).encode())
        if size > max_bytes:
            return error_413()
        return _as_reply(reply_factory(body)) if reply_factory else None

    handler.wants_raw = True  # type: ignore[attr-defined]
    return handler


def check_well_formed(body: dict | list) -> list[str]:
    """Problems in a chat-completions request (a body dict or a bare messages list).

    Checks: non-empty messages; every tool message answers a tool call of the assistant
    message right before its block of tool results; every assistant tool call is answered
    in the tool block that follows it; no two user / two assistant messages in a row
    (system messages are neutral, a tool message separates); tool-call arguments are strings.
    """
    messages = body.get("messages") if isinstance(body, dict) else body
    problems: list[str] = []
    if not messages:
        return ["empty messages list"]

    pending: dict[str, int] = {}  # unanswered tool_call id -> index of its assistant message
    open_calls: set[str] = set()  # ids answerable by the current tool block
    last_role: str | None = None
    last_idx = -1
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict):
            problems.append(f"message {i} is not an object")
            continue
        role = msg.get("role")
        if role not in ("system", "developer", "user", "assistant", "tool"):
            problems.append(f"message {i} has unknown role {role!r}")
            continue

        if role != "tool":
            # the tool block (if any) ended: whatever is still pending is unanswered
            for cid, at in list(pending.items()):
                problems.append(f"assistant tool_call {cid} (message {at}) has no tool result")
                del pending[cid]
            open_calls = set()

        if role == "tool":
            cid = msg.get("tool_call_id")
            if not cid:
                problems.append(f"tool message {i} has no tool_call_id")
            elif cid in pending:
                del pending[cid]
            elif cid in open_calls:
                problems.append(f"tool message {i} answers tool_call {cid} a second time")
            else:
                problems.append(
                    f"tool message {i} (tool_call_id {cid}) has no preceding assistant tool_call"
                )
            last_role = "tool"
            last_idx = i
            continue

        if role in ("system", "developer"):
            continue

        if role == last_role:
            problems.append(f"consecutive {role} messages at {last_idx} and {i}")

        if role == "assistant":
            for tc in msg.get("tool_calls") or []:
                cid = (tc or {}).get("id")
                if not cid:
                    problems.append(f"assistant message {i} has a tool_call without id")
                    continue
                fn = (tc or {}).get("function") or {}
                if not isinstance(fn.get("arguments"), str):
                    problems.append(f"tool_call {cid} arguments are not a string")
                if not fn.get("name"):
                    problems.append(f"tool_call {cid} has no function name")
                pending[cid] = i
                open_calls.add(cid)
        last_role = role
        last_idx = i

    for cid, at in pending.items():
        problems.append(f"assistant tool_call {cid} (message {at}) has no tool result")
    return problems


# --------------------------------------------------------------------------------------
# HTTP plumbing
# --------------------------------------------------------------------------------------


def _split(s: str, parts: int = 3) -> list[str]:
    """Split s into up to ``parts`` non-empty pieces (at least one, possibly empty)."""
    if not s:
        return [s]
    size = max(1, -(-len(s) // parts))
    return [s[i : i + size] for i in range(0, len(s), size)]


class _Server(ThreadingHTTPServer):
    request_queue_size = 1024  # benchmarks open ~100 connections at once; the default backlog is 5
    daemon_threads = True
    allow_reuse_address = True
    provider: "FakeProvider"

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError, OSError)):
            return  # client went away / stop() cut the socket: expected in tests
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "FakeProvider/1.0"
    timeout = 120  # idle keep-alive connections eventually go away
    disable_nagle_algorithm = True  # headers and body are separate writes: avoid 40 ms delayed-ACK stalls
    server: _Server

    # quiet
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def setup(self) -> None:
        super().setup()
        self.server.provider._track(self.connection, True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.provider._track(self.connection, False)

    # ---- low-level writers -----------------------------------------------------------

    def _send_bytes(self, status: int, payload: bytes, content_type: str, headers: dict | None = None) -> None:
        self.send_response(status)
        hdrs = {"Content-Type": content_type}
        hdrs.update(headers or {})
        for k, v in hdrs.items():
            self.send_header(k, str(v))
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()

    def _send_json(self, status: int, obj: Any, headers: dict | None = None) -> None:
        self._send_bytes(status, json.dumps(obj).encode(), "application/json", headers)

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _sse(self, obj: Any) -> None:
        data = obj if isinstance(obj, str) else json.dumps(obj)
        self._chunk(f"data: {data}\n\n".encode())

    def _start_sse(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()

    def _abort(self) -> None:
        """Drop the connection without finishing the response."""
        self.close_connection = True
        try:
            self.wfile.flush()
        except OSError:
            pass
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = bytearray()
            while True:
                line = self.rfile.readline()
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    # trailers until blank line
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    # ---- routes -----------------------------------------------------------------------

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path in ("/v1/models", "/models"):
            ids = self.server.provider.models
            self._send_json(
                200,
                {"object": "list", "data": [{"id": m, "object": "model", "created": 0,
                                             "owned_by": "test"} for m in ids]},
            )
        elif path in ("/health", "/v1/health"):
            self._send_json(200, {"status": "ok"})
        else:
            self._send_json(404, {"error": {"message": f"not found: {self.path}", "type": "not_found", "code": None}})

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        raw = self._read_body()
        if not path.endswith("/chat/completions"):
            self._send_json(404, {"error": {"message": f"not found: {self.path}", "type": "not_found", "code": None}})
            return
        try:
            body = json.loads(raw or b"{}")
            if not isinstance(body, dict):
                raise ValueError("body is not an object")
        except ValueError as exc:
            self._send_json(400, {"error": {"message": f"invalid JSON body: {exc}", "type": "invalid_request_error", "code": None}})
            return
        provider = self.server.provider
        provider._record(body, raw, {k.lower(): v for k, v in self.headers.items()})
        reply = provider._pick(body, raw)
        if reply.delay > 0:
            provider._stopping.wait(reply.delay)
        self._respond(reply, body)

    # ---- reply rendering ------------------------------------------------------------

    def _respond(self, reply: Reply, body: dict) -> None:
        stream = bool(body.get("stream"))
        model = body.get("model") or MODEL_ID
        if reply.kind == "error":
            if reply.body is not None:
                payload = reply.body.encode() if isinstance(reply.body, str) else reply.body
            else:
                payload = json.dumps(
                    {"error": {"message": reply.message, "type": reply.type, "code": reply.code}}
                ).encode()
            self._send_bytes(reply.status, payload, "application/json", reply.headers)
            return
        if reply.kind == "garbage":
            payload = reply.body.encode() if isinstance(reply.body, str) else (reply.body or b"")
            headers = dict(reply.headers)
            ctype = headers.pop("Content-Type", "application/json")
            self._send_bytes(reply.status, payload, ctype, headers)
            return

        provider = self.server.provider
        cid = provider._next_completion_id()
        if any(tc.get("id") is None for tc in reply.tool_calls):
            calls = copy.deepcopy(reply.tool_calls)
            for tc in calls:
                if tc.get("id") is None:
                    tc["id"] = provider._next_call_id()
            reply = replace(reply, tool_calls=calls)
        created = int(time.time())
        usage = _usage(body, reply)

        if reply.kind == "cut":
            if stream:
                self._start_sse()
                base = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model}
                self._sse({**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]})
                for piece in _split(reply.content or "", 3)[:2]:
                    provider._stopping.wait(reply.chunk_delay)
                    self._sse({**base, "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]})
            else:
                full = json.dumps(_completion(cid, created, model, reply, usage)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(full)))
                self.end_headers()
                self.wfile.write(full[: len(full) // 2])
            self._abort()
            return

        if not stream:
            self._send_json(200, _completion(cid, created, model, reply, usage))
            return

        # streamed success
        base = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model}

        def chunk(delta: dict, finish: str | None = None) -> dict:
            if reply.chunk_delay > 0:
                provider._stopping.wait(reply.chunk_delay)
            return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        self._start_sse()
        self._sse(chunk({"role": "assistant", "content": ""}))
        if reply.reasoning:
            self._sse(chunk({"reasoning_content": reply.reasoning}))
        if reply.content:
            for piece in _split(reply.content, reply.chunks):
                self._sse(chunk({"content": piece}))
        for idx, tc in enumerate(reply.tool_calls):
            fn = tc["function"]
            self._sse(
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": idx,
                                "id": tc["id"],
                                "type": "function",
                                "function": {"name": fn["name"], "arguments": ""},
                            }
                        ]
                    }
                )
            )
            for piece in _split(fn["arguments"], reply.chunks):
                if piece:
                    self._sse(chunk({"tool_calls": [{"index": idx, "function": {"arguments": piece}}]}))
        self._sse(chunk({}, reply.finish_reason or "stop"))
        if (body.get("stream_options") or {}).get("include_usage"):
            self._sse({**base, "choices": [], "usage": usage})
        self._sse("[DONE]")
        self._chunk(b"")  # terminating zero-length chunk


def _usage(body: dict, reply: Reply) -> dict:
    prompt = estimate_prompt_tokens(body)
    completion = len(reply.content or "") // 4 + 1
    for tc in reply.tool_calls:
        completion += len(tc["function"]["arguments"]) // 4
    usage = {"prompt_tokens": prompt, "completion_tokens": completion}
    if reply.usage:
        usage.update(reply.usage)
    if not (reply.usage and "total_tokens" in reply.usage):
        usage["total_tokens"] = int(usage["prompt_tokens"]) + int(usage["completion_tokens"])
    return usage


def _completion(cid: str, created: int, model: str, reply: Reply, usage: dict) -> dict:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.reasoning:
        message["reasoning_content"] = reply.reasoning
    if reply.tool_calls:
        message["tool_calls"] = copy.deepcopy(reply.tool_calls)
    return {
        "id": cid,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": reply.finish_reason or "stop", "logprobs": None}
        ],
        "usage": usage,
    }


# --------------------------------------------------------------------------------------
# The provider
# --------------------------------------------------------------------------------------


class FakeProvider:
    """Loopback OpenAI-compatible server. See the module docstring."""

    # handler helpers, also reachable as FakeProvider.window_limited(...) etc.
    window_limited = staticmethod(window_limited)
    size_limited_413 = staticmethod(size_limited_413)

    def __init__(self, host: str = "127.0.0.1", port: int = 0, default: Reply | None = None):
        self.host = host
        self._port = port
        self.default: Reply = default if default is not None else text("ok")
        self.handler: Callable[[dict], Reply | str | None] | None = None
        self.models: list[str] = [MODEL_ID]  # what GET /v1/models lists
        self.requests: list[dict] = []
        self.raw_requests: list[bytes] = []
        self.request_headers: list[dict[str, str]] = []  # header names lower-cased
        self._queue: list[Reply] = []
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._ids = itertools.count(1)
        self._call_ids = itertools.count(1)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._conns: set[socket.socket] = set()
        self.connections = 0  # TCP connections accepted so far (a client that reuses one adds none)
        self.base_url: str = ""
        self.port: int = 0

    # ---- lifecycle ------------------------------------------------------------------

    def start(self) -> "FakeProvider":
        if self._server is not None:
            return self
        self._stopping.clear()
        server = _Server((self.host, self._port), _Handler)
        server.provider = self
        self._server = server
        self.port = server.server_address[1]
        self.base_url = f"http://{self.host}:{self.port}/v1"
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name=f"fake-provider-{self.port}", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, thread = self._server, self._thread
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        server.server_close()
        with self._lock:
            conns = list(self._conns)
        for conn in conns:  # wake handler threads parked on idle keep-alive connections
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if thread is not None:
            thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> "FakeProvider":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # ---- scripting ------------------------------------------------------------------

    def queue(self, *replies: Reply | str) -> None:
        """Scripted replies, consumed one per request in order (a str means ``text(str)``)."""
        with self._lock:
            self._queue.extend(_as_reply(r) for r in replies)  # type: ignore[misc]

    @property
    def pending(self) -> int:
        """Number of queued replies not consumed yet."""
        with self._lock:
            return len(self._queue)

    def reset(self) -> None:
        """Forget recorded requests, the queue, the handler; default back to text("ok")."""
        with self._lock:
            self._queue.clear()
            self.requests.clear()
            self.raw_requests.clear()
            self.request_headers.clear()
            self.handler = None
            self.default = text("ok")
            self._call_ids = itertools.count(1)

    def wait_for_requests(self, n: int, timeout: float = 5.0) -> bool:
        """Block until at least ``n`` chat requests were received (True) or timeout (False)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self.requests) < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
            return True

    @property
    def last_request(self) -> dict | None:
        with self._lock:
            return self.requests[-1] if self.requests else None

    # ---- internals used by the handler ------------------------------------------------

    def _record(self, body: dict, raw: bytes, headers: dict[str, str]) -> None:
        with self._cond:
            self.requests.append(body)
            self.raw_requests.append(raw)
            self.request_headers.append(headers)
            self._cond.notify_all()

    def _pick(self, body: dict, raw: bytes) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.pop(0)
            handler = self.handler
            default = self.default
        if handler is not None:
            try:
                if getattr(handler, "wants_raw", False):
                    result = handler(body, raw)  # type: ignore[call-arg]
                else:
                    result = handler(body)
                reply = _as_reply(result)
            except Exception as exc:  # a broken handler shows up as a 500, not a hang
                return error(500, f"fake provider handler raised {type(exc).__name__}: {exc}", type="server_error")
            if reply is not None:
                return reply
        return default

    def _next_completion_id(self) -> str:
        with self._lock:
            return f"chatcmpl-fake-{next(self._ids)}"

    def _next_call_id(self) -> str:
        with self._lock:
            return f"call_{next(self._call_ids)}"

    def _track(self, conn: socket.socket, add: bool) -> None:
        with self._lock:
            if add:
                self._conns.add(conn)
                self.connections += 1
            else:
                self._conns.discard(conn)


# --------------------------------------------------------------------------------------
# Subprocess mode
# --------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fake_provider", description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--delay", type=float, default=0.0, help="seconds to wait before every reply")
    parser.add_argument("--reply", default="ok", help="text of every reply")
    args = parser.parse_args(argv)

    fp = FakeProvider(host=args.host, port=args.port, default=text(args.reply, delay=args.delay))
    fp.start()
    done = threading.Event()

    def _stop(*_: Any) -> None:
        done.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    print(f"READY {fp.base_url}", flush=True)
    try:
        while not done.wait(0.5):
            pass
    finally:
        fp.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
