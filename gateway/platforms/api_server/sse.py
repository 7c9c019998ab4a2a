"""Server-sent events: the writer, and the bridge from an agent thread's callbacks to the event loop.

``TurnFeed`` collects what the agent reports while a turn runs (text deltas, tool start/end) through
thread-safe callbacks; ``TurnFeed.events`` yields them on the loop in arrival order until the turn is
over, with a ``keepalive`` tick when nothing happened for a while (proxies drop silent streams) and a
``gone`` item when the client went away (so the caller can interrupt the turn).
"""
from __future__ import annotations

import asyncio
import json
from typing import Any, AsyncIterator, Optional

from aiohttp import web

KEEPALIVE_SECONDS = 15.0
POLL_SECONDS = 0.5  # how often a silent stream checks that its client is still connected


def sse_bytes(data: Any, event: Optional[str] = None, event_id: Optional[int] = None) -> bytes:
    """One SSE record; ``data`` is JSON-encoded unless it is already bytes (``b"[DONE]"``);
    ``event_id`` is what a reconnecting client sends back as ``Last-Event-ID``."""
    payload = data if isinstance(data, bytes) else json.dumps(data, ensure_ascii=False).encode()
    head = f"id: {event_id}\n".encode() if event_id is not None else b""
    head += f"event: {event}\n".encode() if event else b""
    return head + b"data: " + payload + b"\n\n"


class SSEWriter:
    """A text/event-stream response; ``send`` raises ConnectionResetError once the client is gone."""

    def __init__(self, request: web.Request, headers: Optional[dict[str, str]] = None) -> None:
        self.request = request
        self.resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache",
                                                "X-Accel-Buffering": "no", **(headers or {})})

    @property
    def prepared(self) -> bool:
        return self.resp.prepared

    async def open(self) -> None:
        await self.resp.prepare(self.request)

    async def send(self, data: Any, event: Optional[str] = None,
                   event_id: Optional[int] = None) -> None:
        await self.resp.write(sse_bytes(data, event, event_id))

    async def comment(self, text: str = "keep-alive") -> None:
        await self.resp.write(f": {text}\n\n".encode())

    async def close(self) -> None:
        await self.resp.write_eof()

    def client_gone(self) -> bool:
        transport = self.request.transport
        return transport is None or transport.is_closing()


class TurnFeed:
    """What a running turn reports, carried from the agent's thread to the event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

    def _put(self, kind: str, value: Any) -> None:
        self._loop.call_soon_threadsafe(self._queue.put_nowait, (kind, value))

    def on_delta(self, text: str) -> None:
        """``stream_callback`` of the agent."""
        if text:
            self._put("delta", text)

    def on_tool(self, event: dict[str, Any]) -> None:
        """``tool_progress_callback`` of the agent."""
        if isinstance(event, dict) and event.get("type") in ("tool_start", "tool_end"):
            self._put("tool", dict(event))

    async def events(self, turn: "asyncio.Future[Any]", writer: Optional[SSEWriter] = None,
                     keepalive: float = KEEPALIVE_SECONDS) -> AsyncIterator[tuple[str, Any]]:
        """``("delta", text)``, ``("tool", event)``, ``("keepalive", None)`` or ``("gone", None)`` until
        ``turn`` is done and everything it reported was yielded."""
        loop = asyncio.get_running_loop()
        quiet_since = loop.time()
        while not (turn.done() and self._queue.empty()):
            getter = asyncio.ensure_future(self._queue.get())
            done, _ = await asyncio.wait({getter, turn}, timeout=POLL_SECONDS,
                                         return_when=asyncio.FIRST_COMPLETED)
            if getter in done:
                quiet_since = loop.time()
                yield getter.result()
                continue
            getter.cancel()
            if done:
                continue
            if writer is not None and writer.client_gone():
                yield "gone", None
                return
            if loop.time() - quiet_since >= keepalive:
                quiet_since = loop.time()
                yield "keepalive", None
