"""Server-sent events: the writer, and the bridge from an agent thread's callbacks to the event
loop.

``TurnFeed`` collects what the agent reports while a turn runs (text deltas, tool start/end) through
thread-safe callbacks; ``TurnFeed.events`` yields them on the loop in arrival order until the turn
is over, with a ``keepalive`` tick when nothing happened for a while (proxies drop silent streams)
and a ``gone`` item when the client went away (so the caller can interrupt the turn).
"""
from __future__ import annotations

import asyncio
import threading
from collections import deque
from typing import Any, AsyncIterator, Optional

from aiohttp import web

from hermes_core import wire_json

KEEPALIVE_SECONDS = 15.0
POLL_SECONDS = 0.5  # how often a silent stream checks that its client is still connected


def sse_bytes(data: Any, event: Optional[str] = None, event_id: Optional[int] = None) -> bytes:
    """One SSE record; ``data`` is JSON-encoded (``wire_json``: orjson, as every other body)
    unless it is already bytes (``b"[DONE]"``);
    ``event_id`` is what a reconnecting client sends back as ``Last-Event-ID``."""
    payload = data if isinstance(data, bytes) else wire_json.dumps(data)
    head = f"id: {event_id}\n".encode() if event_id is not None else b""
    head += f"event: {event}\n".encode() if event else b""
    return head + b"data: " + payload + b"\n\n"


class _HeldHeaders(web.StreamResponse):
    """A stream whose headers wait for its first write (aiohttp's own buffering, which its plain
    responses use): headers and first record in one write, one syscall, one TCP segment. On an
    aiohttp without that switch the headers simply go out at ``prepare`` as before."""

    _send_headers_immediately = False


class SSEWriter:
    """A text/event-stream response; ``send`` raises ConnectionResetError once the client is
    gone. ``hold_headers``: the headers go out with the first record, not at ``open`` (for a
    stream whose client needs nothing before it: the chat stream's first record is its own)."""

    def __init__(self, request: web.Request, headers: Optional[dict[str, str]] = None,
                 hold_headers: bool = False) -> None:
        self.request = request
        kind = _HeldHeaders if hold_headers else web.StreamResponse
        self.resp = kind(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache",
                                  "X-Accel-Buffering": "no", **(headers or {})})
        self._held: list[bytes] = []  # records kept for the next write (``flush=False``)

    @property
    def prepared(self) -> bool:
        return self.resp.prepared

    async def open(self) -> None:
        await self.resp.prepare(self.request)

    async def send(self, data: Any, event: Optional[str] = None,
                   event_id: Optional[int] = None, flush: bool = True) -> None:
        """One record; ``flush=False`` holds it for the next write (more is already queued:
        one write, one syscall and one TCP segment for the lot)."""
        await self.send_record(sse_bytes(data, event, event_id), flush)

    async def send_record(self, record: bytes, flush: bool = True) -> None:
        """An already encoded record (see ``send``)."""
        self._held.append(record)
        if flush:
            await self.flush()

    async def flush(self) -> None:
        if self._held:
            data, self._held = b"".join(self._held), []
            await self.resp.write(data)

    async def comment(self, text: str = "keep-alive") -> None:
        await self.send_record(f": {text}\n\n".encode())

    async def close(self) -> None:
        data, self._held = b"".join(self._held), []
        await self.resp.write_eof(data)

    def client_gone(self) -> bool:
        transport = self.request.transport
        return transport is None or transport.is_closing()


class TurnFeed:
    """What a running turn reports, carried from the agent's thread to the event loop.

    Why this shape: one loop wake-up per burst, not per delta (the agent thread appends under a
    lock and schedules a wake-up only when none is pending), and one plain future to wait on
    rather than a task and ``asyncio.wait`` per event: a streamed turn's extra CPU was mostly
    this hand-over."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._lock = threading.Lock()
        self._incoming: list[tuple[str, Any]] = []  # appended by the agent's thread
        self._wake_pending = False
        self._ready: deque[tuple[str, Any]] = deque()  # the loop's side, in arrival order
        self._waiter: Optional[asyncio.Future[None]] = None

    def _put(self, kind: str, value: Any, wake: bool = True) -> None:
        """``wake=False``: queued for the next wake-up (the next report, the turn's end or the
        stream's poll, at most ``POLL_SECONDS`` away) rather than one of its own."""
        with self._lock:
            self._incoming.append((kind, value))
            if self._wake_pending or not wake:
                return
            self._wake_pending = True
        self._loop.call_soon_threadsafe(self._wake)

    def _take(self) -> None:
        with self._lock:
            items, self._incoming, self._wake_pending = self._incoming, [], False
        self._ready.extend(items)

    def _wake(self, *_: Any) -> None:
        self._take()
        self._poke()

    def _poke(self, *_: Any) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def on_delta(self, text: str) -> None:
        """``stream_callback`` of the agent."""
        if text:
            self._put("delta", text)

    def more(self) -> bool:
        """Something is already here (a caller may hold its write back for it)."""
        return bool(self._ready)

    def more_text(self) -> str:
        """The text of the deltas already queued next, taken off the queue (a caller joins them to
        the delta it has: one chunk, one encode and one record for the lot, order kept)."""
        ready = self._ready
        if not ready or ready[0][0] != "delta":
            return ""
        parts = []
        while ready and ready[0][0] == "delta":
            parts.append(ready.popleft()[1])
        return "".join(parts)

    def on_tool(self, event: dict[str, Any]) -> None:
        """``tool_progress_callback`` of the agent. A tool's event waits for what follows it (a
        quick tool's start for its end, an end for the next text, at most the stream's poll):
        one cross-thread wake-up and one write where each event had its own, each about a tenth
        of a streamed turn's gateway CPU. Text deltas never wait."""
        if isinstance(event, dict) and event.get("type") in ("tool_start", "tool_end"):
            self._put("tool", dict(event), wake=False)

    async def events(self, turn: "asyncio.Future[Any]", writer: Optional[SSEWriter] = None,
                     keepalive: float = KEEPALIVE_SECONDS) -> AsyncIterator[tuple[str, Any]]:
        """``("delta", text)``, ``("tool", event)``, ``("keepalive", None)`` or ``("gone", None)``
        until ``turn`` is done and everything it reported was yielded."""
        loop = asyncio.get_running_loop()
        quiet_since = loop.time()
        turn.add_done_callback(self._poke)
        while True:
            if self._ready:
                quiet_since = loop.time()
                yield self._ready.popleft()
                continue
            if turn.done():
                self._take()  # anything the thread reported just before it finished
                if not self._ready:
                    return
                continue
            self._waiter = loop.create_future()
            timer = loop.call_later(POLL_SECONDS, self._poke)
            try:
                await self._waiter
            finally:
                timer.cancel()
                self._waiter = None
            if not self._ready:
                self._take()  # the poll: what was queued without a wake-up of its own
            if self._ready or turn.done():
                continue
            if writer is not None and writer.client_gone():
                yield "gone", None
                return
            if loop.time() - quiet_since >= keepalive:
                quiet_since = loop.time()
                yield "keepalive", None
