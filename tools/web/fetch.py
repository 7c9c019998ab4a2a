"""Fetching pages for the model: streamed, capped, timed out, every hop through the SSRF guard.

aiohttp with a resolver of our own (``GuardedResolver``): a connection only ever goes to an
address the guard checked, including the addresses of every redirect hop; redirects are followed
here, one hop at a time, so an IP literal in a ``Location`` is checked too. A body is read in
chunks and the connection closed once ``web.max_page_bytes`` arrived: a 50 MB page costs 5 MB.
"""
from __future__ import annotations

import asyncio
import socket
from dataclasses import dataclass, field
from typing import Any, Optional
from urllib.parse import urljoin

import aiohttp
from aiohttp.abc import AbstractResolver

from tools.web.ssrf import GuardPolicy, SSRFRefused, check_url, resolve_checked

REDIRECTS = (301, 302, 303, 307, 308)
ACCEPT = ("text/html,application/xhtml+xml,application/pdf;q=0.9,text/plain;q=0.8,"
          "application/json;q=0.7,*/*;q=0.5")
CHUNK = 64 * 1024


class FetchError(Exception):
    """A page could not be fetched; the text says why, in one line."""


@dataclass(frozen=True)
class FetchOptions:
    policy: GuardPolicy = field(default_factory=GuardPolicy)
    timeout: float = 20.0
    max_bytes: int = 5_000_000
    max_redirects: int = 5
    user_agent: str = "Hermes-Agent"

    @classmethod
    def from_config(cls, web: Any) -> "FetchOptions":
        return cls(GuardPolicy.from_config(web), float(web.timeout), int(web.max_page_bytes),
                   int(web.max_redirects), str(web.user_agent))


@dataclass
class Fetched:
    url: str  # as asked
    final_url: str  # after redirects
    status: int
    content_type: str  # lower case, without parameters ("" when the server sent none)
    charset: Optional[str]
    body: bytes
    truncated: bool  # the body was cut at max_bytes
    declared_length: Optional[int]
    redirects: list[str] = field(default_factory=list)

    def text(self) -> str:
        try:
            return self.body.decode(self.charset or "utf-8", errors="replace")
        except LookupError:  # a charset Python does not know
            return self.body.decode("utf-8", errors="replace")


class GuardedResolver(AbstractResolver):
    """aiohttp's resolver, but every address is checked by the guard before anyone connects."""

    def __init__(self, policy: GuardPolicy) -> None:
        self.policy = policy

    async def resolve(self, host: str, port: int = 0,
                      family: int = socket.AF_INET) -> list[dict[str, Any]]:
        try:
            addresses = await asyncio.to_thread(resolve_checked, host, port, self.policy)
        except socket.gaierror as exc:
            raise OSError(f"cannot resolve {host}: {exc.strerror or exc}") from None
        return [{"hostname": host, "host": a, "port": port, "proto": 0,
                 "family": socket.AF_INET6 if ":" in a else socket.AF_INET,
                 "flags": socket.AI_NUMERICHOST} for a in addresses]

    async def close(self) -> None:
        return None


def _refusal(exc: BaseException) -> Optional[SSRFRefused]:
    """The SSRFRefused inside whatever aiohttp wrapped it in."""
    seen = exc
    for _ in range(5):
        if isinstance(seen, SSRFRefused):
            return seen
        nxt = getattr(seen, "os_error", None) or seen.__cause__ or seen.__context__
        if nxt is None:
            return None
        seen = nxt
    return None


async def _read_capped(resp: aiohttp.ClientResponse, cap: int) -> tuple[bytes, bool]:
    data = bytearray()
    async for chunk in resp.content.iter_chunked(CHUNK):
        data += chunk
        if len(data) >= cap:
            resp.close()  # drop the connection: the rest is never read
            return bytes(data[:cap]), True
    return bytes(data), False


async def _get(session: aiohttp.ClientSession, url: str, opts: FetchOptions) -> Fetched:
    current, hops = url, []
    for _ in range(opts.max_redirects + 1):
        try:
            check_url(current, opts.policy)
            async with session.get(current, allow_redirects=False) as resp:
                location = resp.headers.get("Location")
                if resp.status in REDIRECTS and location:
                    current = urljoin(current, location)
                    hops.append(current)
                    continue
                body, cut = await _read_capped(resp, opts.max_bytes)
                return Fetched(url, current, resp.status, (resp.content_type or "").lower(),
                               resp.charset, body, cut, resp.content_length, hops)
        except Exception as exc:
            refused = _refusal(exc)
            if refused is None:
                raise
            if hops:
                raise FetchError(f"redirected to {current}, which is refused: {refused}") from None
            raise FetchError(f"refused: {refused}") from None
    raise FetchError(f"more than {opts.max_redirects} redirects (the last went to {current})")


async def _fetch_one(session: aiohttp.ClientSession, url: str, opts: FetchOptions) -> Fetched:
    try:
        return await asyncio.wait_for(_get(session, url, opts), opts.timeout)
    except FetchError:
        raise
    except (asyncio.TimeoutError, TimeoutError):
        raise FetchError(f"no complete answer within {opts.timeout:g} s (web.timeout)") from None
    except aiohttp.InvalidURL:
        raise FetchError("not a valid URL") from None
    except aiohttp.TooManyRedirects:
        raise FetchError("too many redirects") from None
    except aiohttp.ClientConnectorError as exc:
        raise FetchError(f"cannot connect: {exc.os_error or exc}") from None
    except aiohttp.ClientPayloadError as exc:
        raise FetchError(f"the page's body is broken: {exc}") from None
    except (aiohttp.ClientError, OSError, ValueError) as exc:
        raise FetchError(f"{type(exc).__name__}: {exc}") from None


async def fetch_all(urls: list[str], opts: FetchOptions) -> list[Fetched | FetchError]:
    """Each URL's page (or its FetchError), in order; fetched concurrently on one session."""
    connector = aiohttp.TCPConnector(resolver=GuardedResolver(opts.policy), use_dns_cache=False,
                                     limit=8)
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=min(opts.timeout, 10.0),
                                    sock_read=opts.timeout)
    headers = {"User-Agent": opts.user_agent, "Accept": ACCEPT}
    async with aiohttp.ClientSession(connector=connector, timeout=timeout, headers=headers,
                                     trust_env=False) as session:
        async def one(url: str) -> Fetched | FetchError:
            try:
                return await _fetch_one(session, url, opts)
            except FetchError as exc:
                return exc
        return list(await asyncio.gather(*(one(u) for u in urls)))


def fetch_pages(urls: list[str], opts: FetchOptions) -> list[Fetched | FetchError]:
    """The blocking form for tool handlers (they run in the agent's worker threads)."""
    return asyncio.run(fetch_all(urls, opts))
