"""The wire under one MCP connection: a read stream that reports its end (the server went away),
the streamable HTTP client, and which errors mean the transport itself broke.

Async, used from the manager's loop; the SDK and httpx2 are imported only when a server starts.
"""
from __future__ import annotations

from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Callable

from tools.mcp.config import ServerConfig


class _EofWatch:
    """The transport's read stream, reporting the moment it ends (the server went away)."""

    def __init__(self, inner: Any, on_eof: Callable[[], None]) -> None:
        self._inner, self._on_eof = inner, on_eof

    async def receive(self) -> Any:
        import anyio

        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._on_eof()
            raise

    def __aiter__(self) -> "_EofWatch":
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> "_EofWatch":
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._inner.__aexit__(*exc)

    def __getattr__(self, name: str) -> Any:  # e.g. `last_context`, read with getattr by the SDK
        return getattr(self._inner, name)


@asynccontextmanager
async def watched(transport: Any, on_eof: Callable[[], None]) -> AsyncIterator[tuple[Any, Any]]:
    """``transport``'s streams, the read one calling ``on_eof`` when the server goes away (a
    stdio pipe at EOF), so the connection learns of a drop before the next call does."""
    async with transport as (read, write):
        yield _EofWatch(read, on_eof), write


@asynccontextmanager
async def streamable_http(cfg: ServerConfig) -> AsyncIterator[tuple[Any, Any]]:
    """The streamable HTTP streams with the server's headers; reads may wait as long as a call."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    timeout = httpx2.Timeout(cfg.connect_timeout, read=max(300.0, cfg.timeout))
    async with httpx2.AsyncClient(headers=cfg.headers, timeout=timeout) as http:
        async with streamable_http_client(cfg.url or "", http_client=http) as streams:
            yield streams


def is_transport_error(exc: BaseException) -> bool:
    """True when ``exc`` means the connection broke (so reconnect), not that the call failed."""
    import anyio

    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, (OSError, anyio.ClosedResourceError, anyio.BrokenResourceError,
                        anyio.EndOfStream)):
        return True
    try:
        import httpx2
    except ImportError:  # pragma: no cover
        return False
    return isinstance(exc, (httpx2.TransportError, httpx2.HTTPStatusError))
