"""Who may talk to the API server: a web page the user happens to visit must not drive the agent.

A browser can send a "simple" cross-origin POST (``text/plain``, no preflight) and, through DNS
rebinding, make a hostile name resolve to 127.0.0.1 and read the answers. So every request is
checked in this order: the ``Host`` names this server (a rebinding page sends its own name), the
``Origin`` is one the owner listed (or absent, as with non-browser clients), the Bearer key matches
(always required), and a POST body is ``application/json`` (which a page can only send after a CORS
preflight we do not grant). The decisions are pure functions; ``make_middleware`` applies them.
"""
from __future__ import annotations

import asyncio
import hmac
import ipaddress
import logging
from typing import Any, Awaitable, Callable, Iterable, Optional

from aiohttp import web

from gateway.capacity import TurnLimitReached
from gateway.platforms.api_server.wire import APIError, error_response
from gateway.turn_state import SessionBusy

log = logging.getLogger("gateway.api_server")

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
WILDCARD_HOSTS = ("0.0.0.0", "::", "")
CORS_ALLOW_HEADERS = "Authorization, Content-Type, X-Hermes-Session-Id, X-Hermes-Session-Key"
CORS_EXPOSE_HEADERS = "X-Hermes-Session-Id, X-Hermes-Session-Key"
OPEN_PATHS = ("/health",)  # answered without a key (liveness probes); still Host-checked
CORS_KEY = web.RequestKey("hermes_cors_headers", dict)


def is_loopback(host: str) -> bool:
    if host in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return False


def split_host(value: str) -> tuple[str, Optional[int]]:
    """``"[::1]:8642"`` -> ``("::1", 8642)``; ``"Example.com"`` -> ``("example.com", None)``.
    A malformed value gives ``("", None)``, which nothing allows."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return "", None
        host, rest = value[1:end], value[end + 1:]
    elif value.count(":") == 1:
        host, _, port = value.partition(":")
        rest = ":" + port
    elif ":" in value:  # a bare IPv6 address is not a valid Host header
        return "", None
    else:
        host, rest = value, ""
    if not rest:
        return host, None
    if not rest.startswith(":") or not rest[1:].isdigit():
        return "", None
    return host, int(rest[1:])


def host_allowed(header: Optional[str], bound_host: str, port: int,
                 allowed: Iterable[str] = ()) -> bool:
    """Is ``Host: header`` this server? The bound address or a loopback name, on our port; a name
    the owner configured (``name`` for any port, ``name:port`` for one); any IP literal on our port
    when bound to every interface (rebinding needs a DNS name, so an IP literal is never one)."""
    if not header:
        return False
    host, given_port = split_host(header)
    if not host:
        return False
    allowed = [a.strip().lower() for a in allowed if a and a.strip()]
    if "*" in allowed:
        return True
    for entry in allowed:
        name, entry_port = split_host(entry)
        if name == host and (entry_port is None or entry_port == given_port):
            return True
    if given_port != port:
        return False
    bound = bound_host.strip("[]").lower()
    if host == bound or host in LOOPBACK_NAMES:
        return True
    return bound in WILDCARD_HOSTS and _is_ip(host)


def same_origin(origin: str, host: Optional[str]) -> bool:
    """A page served by this server calling it (the dashboard): the Origin is the Host we
    checked, so it is not another site's page (pure)."""
    if not host:
        return False
    value = origin.strip().rstrip("/").lower()
    return value in (f"http://{host.strip().lower()}", f"https://{host.strip().lower()}")


def origin_allowed(origin: str, cors_origins: Iterable[str]) -> bool:
    listed = {o.strip().rstrip("/").lower() for o in cors_origins if o and o.strip()}
    return "*" in listed or origin.strip().rstrip("/").lower() in listed


def is_json_content_type(value: Optional[str]) -> bool:
    media = (value or "").split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/")
                                           and media.endswith("+json"))


def key_matches(authorization: Optional[str], key: bytes) -> bool:
    """A header that is not valid UTF-8 arrives with surrogate escapes: those bytes are compared
    as sent (never a key, never an exception)."""
    auth = authorization or ""
    token = auth[7:].strip() if auth[:7].lower() == "bearer " else ""
    given = token.encode("utf-8", "surrogateescape")
    return hmac.compare_digest(given, key)


def cors_headers(origin: str) -> dict[str, str]:
    return {"Access-Control-Allow-Origin": origin, "Vary": "Origin",
            "Access-Control-Expose-Headers": CORS_EXPOSE_HEADERS}


def preflight_headers(origin: str) -> dict[str, str]:
    return {**cors_headers(origin),
            "Access-Control-Allow-Methods": "GET, POST, PATCH, DELETE, OPTIONS",
            "Access-Control-Allow-Headers": CORS_ALLOW_HEADERS, "Access-Control-Max-Age": "600"}


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _has_body(request: web.Request) -> bool:
    return bool(request.content_length) or (request.content_length is None and request.body_exists)


def make_middleware(server: Any) -> Any:
    """The aiohttp middleware enforcing the checks above for ``server`` (an ``APIServer``), then
    turning ``APIError``s and unexpected failures into OpenAI error bodies."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        origin = request.headers.get("Origin")
        cors = (cors_headers(origin) if origin and origin_allowed(origin, server.cors_origins)
                else {})
        request[CORS_KEY] = cors  # added by add_cors_headers to every response, streamed ones too
        try:
            resp = await _checked(server, request, handler, origin, cors)
        except APIError as exc:
            resp = error_response(exc.status, exc.message, exc.type, exc.code, exc.param,
                                  exc.headers)
        except TurnLimitReached as exc:  # the process holds all the turns it can (gateway.capacity)
            resp = error_response(429, str(exc), "rate_limit_error", "turn_limit",
                                  headers={"Retry-After": str(exc.retry_after)})
        # another worker kept the session's turn lease too long (gateway.lease)
        except SessionBusy as exc:
            resp = error_response(409, str(exc), "invalid_request_error", "session_busy",
                                  headers={"Retry-After": "5"})
        except web.HTTPException as exc:
            if exc.status < 400:
                raise
            kind = "not_found" if exc.status == 404 else "invalid_request_error"
            resp = error_response(exc.status, f"{exc.reason}: {request.method} {request.path}",
                                  kind)
        except (ConnectionResetError, asyncio.CancelledError):
            raise
        except Exception:
            log.exception("API request %s %s failed", request.method, request.path)
            resp = error_response(500, "Internal server error.", "server_error")
        return resp

    return middleware


async def add_cors_headers(request: web.Request, response: web.StreamResponse) -> None:
    """``on_response_prepare`` hook: the CORS grant the middleware decided on, just before the
    headers go."""
    response.headers.update(request.get(CORS_KEY) or {})


async def _checked(server: Any, request: web.Request, handler: Handler, origin: Optional[str],
                   cors: dict[str, str]) -> web.StreamResponse:
    host = request.headers.get("Host")
    if not host_allowed(host, server.host, server.port, server.allowed_hosts):
        raise APIError(421, f"Host {host!r} is not this server (DNS rebinding is refused). Use "
                            f"http://127.0.0.1:{server.port} or add the name to "
                            "gateway.api_server.allowed_hosts.", code="host_not_allowed")
    if origin and not cors and not same_origin(origin, host):
        raise APIError(403, f"Origin {origin!r} is not allowed; list it in "
                            "gateway.api_server.cors_origins to let that web page call the API.",
                            code="origin_not_allowed")
    if (request.method == "OPTIONS" and origin
            and request.headers.get("Access-Control-Request-Method")):
        return web.Response(status=204, headers=preflight_headers(origin))
    open_path = request.path in OPEN_PATHS or (
        request.method in ("GET", "HEAD") and request.path in getattr(server, "public_paths", ()))
    if getattr(request.match_info, "route", None) in getattr(server, "signed_routes", ()):
        if not server.runner.accepting:  # the sender retries later (GitHub, Stripe do)
            raise APIError(503, "The gateway is shutting down; retry shortly.", "server_error",
                           "shutting_down", headers={"Retry-After": "5"})
        return await handler(request)  # it checks its own signature, any body type
    if not open_path and not key_matches(request.headers.get("Authorization"), server.key):
        raise APIError(401, "Invalid or missing API key (send 'Authorization: Bearer <key>'; the "
                            "key is API_SERVER_KEY in HERMES_HOME/.env).", code="invalid_api_key")
    if request.method in ("POST", "PUT", "PATCH") and _has_body(request) \
            and not is_json_content_type(request.headers.get("Content-Type")):
        raise APIError(415, "Request bodies must be sent with 'Content-Type: application/json'.",
                       code="unsupported_media_type")
    if not open_path and not server.runner.accepting:
        raise APIError(503, "The gateway is shutting down; retry shortly.", "server_error",
                       "shutting_down", headers={"Retry-After": "5"})
    return await handler(request)
