"""Chat-completion requests on one keep-alive ``http.client`` connection, beside the SDK client.

Why: the plain path already sends a raw JSON body and reads the raw JSON answer, yet the SDK still
built its request options, walked its typed parameters and went through httpx, h11 and httpcore:
~1.3 ms of CPU per provider call against ~0.2 ms here, and a turn's CPU is the gateway's
throughput (one process, one GIL). The SDK client stays what agents and pools lend and close; its
``api_key``, ``base_url`` and ``timeout`` are read per request (a rotated key takes effect). What
the SDK gave the loop stays: its error classes (``APIStatusError`` by status,
``APIConnectionError``, ``APITimeoutError``), so classification and retries do not change.

A wire carries one request at a time (a pool lends a client to one request); a second caller while
it is busy gets None and uses the SDK. ``abort()`` (``AIAgent.interrupt`` from another thread)
shuts the socket so a blocked read returns at once. A reused connection the server had closed
while idle is retried once on a new one, only when nothing of the answer arrived.
"""
from __future__ import annotations

import http.client
import json
import os
import socket
import threading
from typing import Any, Iterator, Optional
from urllib.parse import urlsplit

from agent.providers.sse_stream import sse_data, stream_error
from hermes_core import wire_json

WIRE_ATTR = "_hermes_wire"
PROXY_VARS = ("https_proxy", "http_proxy", "all_proxy")
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


def proxied() -> bool:
    """A proxy is configured: only the SDK's httpx honours it, so no wire is attached."""
    return any(os.environ.get(v) or os.environ.get(v.upper()) for v in PROXY_VARS)


def _seconds(timeout: Any) -> Optional[float]:
    """A float, or an httpx ``Timeout``'s read timeout (None: no limit)."""
    if timeout is None or isinstance(timeout, (int, float)):
        return timeout
    return getattr(timeout, "read", None)


class DirectWire:
    def __init__(self, ssl_context: Any = None) -> None:
        self._ssl = ssl_context
        self._conn: Optional[http.client.HTTPConnection] = None
        self._origin: Optional[tuple[str, str, int]] = None
        self._busy = threading.Lock()
        self._aborted = False

    def acquire(self) -> bool:
        """Take the wire for one request (False: it is carrying one)."""
        if not self._busy.acquire(blocking=False):
            return False
        self._aborted = False
        return True

    def release(self) -> None:
        self._busy.release()

    def _connection(self, scheme: str, host: str, port: int,
                    timeout: Optional[float]) -> http.client.HTTPConnection:
        if self._conn is None or self._origin != (scheme, host, port):
            self.close()
            if scheme == "https":
                self._conn = http.client.HTTPSConnection(host, port, timeout=timeout,
                                                         context=self._ssl)
            else:
                self._conn = http.client.HTTPConnection(host, port, timeout=timeout)
            self._origin = (scheme, host, port)
        self._conn.timeout = timeout
        if self._conn.sock is not None:
            self._conn.sock.settimeout(timeout)
        return self._conn

    def post(self, url: str, body: bytes, headers: dict[str, str],
             timeout: Optional[float]) -> http.client.HTTPResponse:
        """POST ``body``; the unread response (its status and headers read)."""
        parts = urlsplit(url)
        scheme, host = parts.scheme, parts.hostname or ""
        port = parts.port or (443 if scheme == "https" else 80)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        for attempt in (0, 1):
            if self._aborted:  # interrupted before anything went out: nothing is sent
                raise ConnectionAbortedError("the request was interrupted")
            conn = self._connection(scheme, host, port, timeout)
            reused = conn.sock is not None
            try:
                conn.request("POST", path, body=body, headers=headers)
                return conn.getresponse()
            except _STALE:
                self.close()
                if not reused or attempt or self._aborted:  # an interrupt is never retried
                    raise
            except BaseException:
                self.close()
                raise
        raise AssertionError("unreachable")

    def abort(self) -> bool:
        """Cut the request in flight (from another thread)."""
        self._aborted = True
        sock = getattr(self._conn, "sock", None)
        if sock is None:
            return False
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            return False
        return True

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()


def wire_of(client: Any) -> Optional[DirectWire]:
    """The client's wire (a test double's made-up attribute is not one)."""
    wire = getattr(client, WIRE_ATTR, None)
    return wire if isinstance(wire, DirectWire) else None


def _fake_request(url: str) -> Any:
    import httpx2

    return httpx2.Request("POST", url)


def _status_error(status: int, headers: Any, raw: bytes, url: str) -> Exception:
    """The SDK's exception for an error status (what ``client.chat.completions.create`` raised)."""
    import httpx2
    import openai

    try:
        body: Any = json.loads(raw)
    except ValueError:
        body = raw.decode("utf-8", "replace")
    err = body.get("error", body) if isinstance(body, dict) else body
    response = httpx2.Response(status, headers=list(headers.items()), content=raw,
                               request=_fake_request(url))
    classes = {400: openai.BadRequestError, 401: openai.AuthenticationError,
               403: openai.PermissionDeniedError, 404: openai.NotFoundError,
               409: openai.ConflictError, 422: openai.UnprocessableEntityError,
               429: openai.RateLimitError}
    cls = classes.get(status, openai.InternalServerError if status >= 500
                      else openai.APIStatusError)
    return cls(f"Error code: {status} - {body}", response=response, body=err)


def _transport_error(exc: BaseException, url: str) -> Exception:
    import openai

    if isinstance(exc, (TimeoutError, socket.timeout)):
        return openai.APITimeoutError(request=_fake_request(url))
    return openai.APIConnectionError(request=_fake_request(url))


_UA: list[str] = []


def _user_agent() -> str:
    """The SDK's own User-Agent: a provider sees the same client it saw before."""
    if not _UA:
        import openai

        _UA.append(f"OpenAI/Python {openai.__version__}")
    return _UA[0]


def request_json(client: Any, wire: DirectWire, body: dict[str, Any], stream: bool,
                 timeout: Any = None) -> Any:
    """Send a chat-completions body; the decoded JSON answer, or (``stream``) an iterator of the
    decoded chunks. Raises the SDK's exception classes."""
    base = str(client.base_url).rstrip("/")
    url = base + "/chat/completions"
    headers = {"Authorization": f"Bearer {client.api_key}", "Content-Type": "application/json",
               "Accept": "text/event-stream" if stream else "application/json",
               "User-Agent": _user_agent()}
    for name, attr in (("OpenAI-Organization", "organization"), ("OpenAI-Project", "project")):
        value = getattr(client, attr, None)  # OPENAI_ORG_ID / OPENAI_PROJECT_ID, as the SDK sends
        if isinstance(value, str) and value:
            headers[name] = value
    seconds = _seconds(timeout if timeout is not None else client.timeout)
    try:
        resp = wire.post(url, wire_json.dumps(body), headers, seconds)
        if resp.status >= 300 or resp.status < 200:
            raw = resp.read()
            raise _status_error(resp.status, resp.headers, raw, url)
        if stream:
            return _chunks(wire, resp, url)
        return wire_json.loads(resp.read())
    except (OSError, http.client.HTTPException) as exc:
        wire.close()
        raise _transport_error(exc, url) from exc


def _pieces(resp: http.client.HTTPResponse) -> Iterator[bytes]:
    """The body as it arrives. ``read1`` (not ``readline``, whose chunked reading takes a cut
    connection for the body's end) raises ``IncompleteRead`` when the body stops short."""
    while True:
        data = resp.read1(65536)
        if not data:
            if resp.length:  # a Content-Length the body did not reach
                raise http.client.IncompleteRead(b"", resp.length)
            return
        yield data


def _chunks(wire: DirectWire, resp: http.client.HTTPResponse, url: str) -> Iterator[dict]:
    """The stream's chunks (``sse_stream``'s rules: ``[DONE]`` ends it, an ``error`` member
    raises ``openai.APIError``); the body's end is read so the connection is reused."""
    import openai

    done = False
    try:
        for data in sse_data(_pieces(resp)):
            if data.startswith(b"[DONE]"):
                resp.read()
                done = True
                return
            chunk = wire_json.loads(data)
            failed = stream_error(chunk)
            if failed is not None:
                raise openai.APIError(failed[0], _fake_request(url), body=failed[1])
            yield chunk
        done = True
    except (OSError, http.client.HTTPException) as exc:
        raise _transport_error(exc, url) from exc
    finally:
        if not done:
            wire.close()  # stopped early or failed: the rest of the body is unread
