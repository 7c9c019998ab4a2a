"""How many connections the API server holds, and what it does past that (issue 20 item 4).

Every connection is a file descriptor. Thousands of clients that connect and never send a byte
used to exhaust the process's limit: then nothing could open a file (the status file, the store)
and the gateway exited. So:
- connections are capped below the descriptor limit (``connection_cap``), leaving room for the
  store, logs, provider sockets and the status file;
- at the cap, a new connection makes room by closing the oldest connection that has no request
  in flight (an idle or never-speaking one); when every one is busy, it is answered 503;
- an idle connection (none sent yet, or between requests) is closed after ``idle_timeout``
  seconds, which also bounds how long a client may take to send its headers.
"""
from __future__ import annotations

import asyncio
import logging
import socket
from typing import Any, Awaitable, Callable, Optional

from aiohttp import web

log = logging.getLogger("gateway.api_server")

DEFAULT_IDLE_TIMEOUT = 15.0  # seconds (uvicorn uses 5, nginx 75)
DEFAULT_MAX_CONNECTIONS = 10_000
MIN_RESERVE = 64  # descriptors kept free for everything else the process opens

ACCEPTS_PER_WAKE = 16  # connections accepted per readiness of the listening socket
RECHECK_SECONDS = 0.05  # how soon to look again when every held connection is busy

def connection_cap(open_files: Optional[int], configured: Optional[int] = None) -> int:
    """The most connections to hold: ``configured`` (``gateway.api_server.max_connections``) or
    the default, never more than the descriptor limit minus a reserve (a quarter, at least 64)."""
    wanted = configured if configured and configured > 0 else DEFAULT_MAX_CONNECTIONS
    if open_files is None:
        return wanted
    room = open_files - max(MIN_RESERVE, open_files // 4)
    return max(1, min(wanted, room))


class ConnectionGuard:
    """Accepts connections itself (not through ``loop.create_server``, which accepts until the
    descriptors run out), so it never holds more than ``cap``: at the cap the oldest connection
    without a request in flight is closed to make room, and when every held connection is busy
    the listening socket is not read (new clients wait in the kernel's backlog)."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.busy: set[Any] = set()  # protocols with a request being handled
        self.evicted = 0
        self._sock: Optional[socket.socket] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._server: Optional[web.Server] = None
        self._reading = False
        self._starting = 0  # accepted, not yet handed to aiohttp (they hold a descriptor too)

    def held(self) -> int:
        return len(self._server.connections) + self._starting if self._server is not None else 0

    def listen(self, server: web.Server, host: str, port: int, backlog: int,
               reuse_port: bool) -> int:
        """Bind and start accepting for ``server`` (aiohttp's); returns the port bound."""
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        # a name like "localhost": its IPv4 address first (what clients of 127.0.0.1 reach)
        family, kind, proto, _, addr = sorted(found, key=lambda a: a[0] != socket.AF_INET)[0]
        sock = socket.socket(family, kind, proto)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if reuse_port:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            sock.bind(addr)
            sock.listen(backlog)
            sock.setblocking(False)
        except OSError:
            sock.close()
            raise
        self._sock, self._server, self._loop = sock, server, asyncio.get_running_loop()
        self._read(True)
        return int(sock.getsockname()[1])

    def close(self) -> None:
        if self._sock is not None:
            self._read(False)
            self._sock.close()
            self._sock = None

    def _read(self, on: bool) -> None:
        assert self._loop is not None and self._sock is not None
        if on and not self._reading:
            self._loop.add_reader(self._sock.fileno(), self._accept)
        elif not on and self._reading:
            self._loop.remove_reader(self._sock.fileno())
        self._reading = on

    def _accept(self) -> None:
        assert self._sock is not None and self._server is not None and self._loop is not None
        for _ in range(ACCEPTS_PER_WAKE):
            if self.held() >= self.cap and not self._make_room():
                self._read(False)  # all busy: look again shortly; clients wait in the backlog
                self._loop.call_later(RECHECK_SECONDS, self._resume)
                return
            try:
                conn, _addr = self._sock.accept()
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                return
            except OSError as exc:  # out of descriptors after all (other files): pause a moment
                log.warning("API server: accept failed (%s); pausing new connections for 1 s", exc)
                self._read(False)
                self._loop.call_later(1.0, self._resume)
                return
            conn.setblocking(False)
            self._starting += 1
            self._loop.create_task(self._connect(conn))

    async def _connect(self, conn: socket.socket) -> None:
        assert self._loop is not None and self._server is not None
        try:
            await self._loop.connect_accepted_socket(self._server, sock=conn)
        except OSError as exc:
            log.debug("API server: a connection failed to start: %s", exc)
            conn.close()
        finally:
            self._starting -= 1

    def _resume(self) -> None:
        if self._sock is not None:
            self._read(True)
            self._accept()

    def _make_room(self) -> bool:
        assert self._server is not None
        for handler in self._server.connections:  # oldest first
            if handler.transport is not None and handler not in self.busy:
                handler.force_close()
                self.evicted += 1
                if self.evicted in (1, 100) or self.evicted % 10_000 == 0:
                    log.warning("API server at its %d-connection cap: closed %d idle connection(s)",
                                self.cap, self.evicted)
                return True
        return False

    def middleware(self) -> Any:
        """Marks a connection busy while one of its requests is handled (never closed for room)."""
        @web.middleware
        async def track(request: web.Request,
                        handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                        ) -> web.StreamResponse:
            proto = request.protocol
            self.busy.add(proto)
            try:
                return await handler(request)
            finally:
                self.busy.discard(proto)
        return track
