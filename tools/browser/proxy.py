"""The browser's SSRF guard: a forward proxy on 127.0.0.1 that every request of the browser goes
through (Playwright's ``proxy`` option; loopback is not bypassed).

Why a proxy and not Playwright's route interception: a route sees a navigation's first URL
only, never its redirect hops, so ``/redirect -> http://127.0.0.1/`` would pass. Here every
connection, whatever caused it (a redirect, an image, a fetch() of a script, a WebSocket), names
its host to the proxy, which resolves and checks it with the same rule as web_extract
(``tools.web.ssrf``) and connects only to the addresses it checked. A refused plain-HTTP request
gets a 403 marked ``X-Hermes-Refused``; a refused CONNECT (HTTPS) a 403 status line.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Optional
from urllib.parse import urlsplit

from tools.web.ssrf import GuardPolicy, SSRFRefused, resolve_checked

log = logging.getLogger(__name__)
REFUSED_HEADER = "X-Hermes-Refused"
HEAD_LIMIT = 64 * 1024
_HOP_HEADERS = ("proxy-connection", "connection", "keep-alive", "proxy-authorization")


def _split_target(method: str, target: str) -> tuple[str, int, str]:
    """(host, port, origin-form path) of a proxy request line's target. Pure."""
    if method == "CONNECT":
        host, _, port = target.rpartition(":")
        return host.strip("[]"), int(port or 443), ""
    parts = urlsplit(target)
    if parts.scheme != "http" or not parts.hostname:
        raise ValueError(f"not an absolute http URL: {target!r}")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return parts.hostname, parts.port or 80, path


class GuardProxy:
    """Start with ``await start()`` (returns its URL); ``refusals`` lists what it refused."""

    def __init__(self, policy: GuardPolicy) -> None:
        self.policy = policy
        self.refusals: list[str] = []
        self._server: Optional[asyncio.AbstractServer] = None

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await self._serve(reader, writer)
        except Exception as exc:  # one broken connection (or the process exiting) is not news
            log.debug("guard proxy connection failed: %s", exc)
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
            if len(head) > HEAD_LIMIT:
                raise ValueError("request head too large")
            lines = head.decode("latin-1").split("\r\n")
            method, target, version = lines[0].split(" ", 2)
            host, port, path = _split_target(method, target)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, asyncio.TimeoutError,
                ValueError, ConnectionError):
            writer.close()
            return
        try:
            upstream = await self._connect(host, port, target)
        except SSRFRefused as exc:
            self.refusals.append(f"{target if method != 'CONNECT' else host}: {exc}")
            await self._refuse(writer, str(exc))
            return
        except OSError as exc:
            await self._answer(writer, 502, f"cannot connect to {host}:{port}: {exc}")
            return
        up_reader, up_writer = upstream
        if method == "CONNECT":
            writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        else:
            kept = [h for h in lines[1:] if h and h.split(":", 1)[0].strip().lower()
                    not in _HOP_HEADERS]
            up_writer.write(f"{method} {path} {version}\r\n".encode("latin-1")
                            + "".join(f"{h}\r\n" for h in kept).encode("latin-1")
                            + b"Connection: close\r\n\r\n")
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))

    async def _connect(self, host: str, port: int, target: str
                       ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        addresses = await asyncio.to_thread(resolve_checked, host, port, self.policy)
        error: Optional[OSError] = None
        for addr in addresses:  # only the addresses that were checked
            try:
                return await asyncio.wait_for(asyncio.open_connection(addr, port), 10)
            except (OSError, asyncio.TimeoutError) as exc:
                error = exc if isinstance(exc, OSError) else OSError(f"timed out ({addr})")
        raise error or OSError(f"no address for {host}")

    async def _refuse(self, writer: asyncio.StreamWriter, why: str) -> None:
        await self._answer(writer, 403, f"Refused by Hermes' SSRF guard: {why}",
                           {REFUSED_HEADER: "1"})

    async def _answer(self, writer: asyncio.StreamWriter, status: int, text: str,
                      headers: Optional[dict[str, str]] = None) -> None:
        body = text.encode()
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        reason = {403: "Forbidden", 502: "Bad Gateway"}.get(status, "Error")
        writer.write(f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\n"
                     f"Content-Length: {len(body)}\r\n{extra}Connection: close\r\n\r\n"
                     .encode() + body)
        try:
            await writer.drain()
        except ConnectionError:
            pass
        writer.close()


async def _pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
    try:
        while True:
            data = await src.read(65536)
            if not data:
                break
            dst.write(data)
            await dst.drain()
    except (ConnectionError, asyncio.CancelledError, OSError):
        pass
    finally:
        try:
            dst.close()
        except RuntimeError:  # the loop is closing
            pass
