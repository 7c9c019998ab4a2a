"""The API server: an aiohttp app in front of the runner, assembled from route registrars.

Each concern registers its own routes (``chat``, ``responses``, ``sessions_api``; other features
such as cron's ``/api/jobs`` through ``APIServer.add_routes``) with ``add_endpoint``, which also
lists the route in ``GET /v1/capabilities``. Security checks (key, Host, Origin, Content-Type) apply
to every route through one middleware (``security``), so a registrar writes plain handlers.
"""
from __future__ import annotations

import logging
import socket
from typing import Any, Awaitable, Callable, Iterable, Optional

from aiohttp import web

from gateway.platforms.api_server.connections import (DEFAULT_IDLE_TIMEOUT, ConnectionGuard,
                                                      connection_cap)
from gateway.platforms.api_server.security import add_cors_headers, is_loopback, make_middleware
from gateway.platforms.api_server.wire import MODEL_ID

log = logging.getLogger("gateway.api_server")

DEFAULT_HOST, DEFAULT_PORT, DEFAULT_MAX_BODY = "127.0.0.1", 8642, 1 << 20
MIN_KEY_CHARS = 16
LISTEN_BACKLOG = 4096  # a burst of new clients (1,000 at once) must not overflow aiohttp's 128

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
RouteRegistrar = Callable[["APIServer"], None]


class APIServerConfigError(Exception):
    """The API server cannot start with these settings; the message says how to fix them."""


class APIServer:
    name = "api_server"

    def __init__(self, runner: Any, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
                 key: Optional[str] = None, max_body_bytes: int = DEFAULT_MAX_BODY,
                 allowed_hosts: Iterable[str] = (), cors_origins: Iterable[str] = (),
                 reuse_port: bool = False, response_headers: Optional[dict[str, str]] = None,
                 idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
                 max_connections: Optional[int] = None) -> None:
        """``reuse_port``: share the port with other workers (``hermes gateway run --workers``);
        ``response_headers`` go on every response (a worker names itself: ``X-Hermes-Worker``);
        ``idle_timeout``/``max_connections``: see ``api_server.connections``."""
        if not key:
            raise APIServerConfigError(
                "API server: no API key. Set API_SERVER_KEY (or gateway.api_server.key); `hermes "
                "gateway run` generates one into HERMES_HOME/.env on first start. Clients send it "
                "as 'Authorization: Bearer <key>'.")
        if len(key) < MIN_KEY_CHARS:
            log.warning("API_SERVER_KEY is shorter than %d characters; use a long random key",
                        MIN_KEY_CHARS)
        self.runner, self.host, self.port, self.max_body = runner, host, port, max_body_bytes
        self.key = key.encode()
        self.allowed_hosts = [str(h) for h in allowed_hosts]
        self.cors_origins = [str(o) for o in cors_origins]
        self.reuse_port, self.response_headers = reuse_port, dict(response_headers or {})
        self.endpoints: dict[str, dict[str, str]] = {}
        self.features: dict[str, bool] = {}
        self.public_paths: set[str] = set()  # GETs served without the key (a page's own files)
        self.signed_routes: set[Any] = set()  # routes that check their own signature (webhooks)
        self._registrars: list[RouteRegistrar] = []
        self._app: Optional[web.Application] = None
        self._site_runner: Optional[web.AppRunner] = None
        self.idle_timeout = idle_timeout
        self.guard = ConnectionGuard(connection_cap(_open_files_limit(), max_connections))

    # -- extension ------------------------------------------------------------------------------
    def add_routes(self, registrar: RouteRegistrar) -> "APIServer":
        """Have ``registrar(server)`` add routes (with ``server.add_endpoint``) when the app is
        built; call before ``start()``. Handlers get the key/Host/Origin/Content-Type checks for
        free."""
        self._registrars.append(registrar)
        return self

    def add_endpoint(self, name: str, method: str, path: str, handler: Handler) -> None:
        """One route, listed under ``name`` in ``/v1/capabilities``' ``endpoints``."""
        if self._app is None:
            raise RuntimeError("add_endpoint is for route registrars (see APIServer.add_routes)")
        self._app.router.add_route(method, path, handler)
        self.endpoints[name] = {"method": method, "path": path}

    def add_public_file(self, path: str, handler: Handler) -> None:
        """A GET served without the key (a web page's HTML, script and style, which hold no data:
        everything they show comes from keyed routes). Not listed in ``/v1/capabilities``."""
        if self._app is None:
            raise RuntimeError("add_public_file is for route registrars (see APIServer.add_routes)")
        self._app.router.add_route("GET", path, handler)
        self.public_paths.add(path)

    def add_signed_endpoint(self, name: str, method: str, path: str, handler: Handler) -> None:
        """A route whose callers prove themselves with their own signature (a webhook's HMAC)
        instead of the Bearer key; any body type. The handler must check the signature."""
        if self._app is None:
            raise RuntimeError("add_signed_endpoint is for route registrars (see add_routes)")
        self.signed_routes.add(self._app.router.add_route(method, path, handler))
        self.endpoints[name] = {"method": method, "path": path}

    # -- lifecycle ------------------------------------------------------------------------------
    def app(self) -> web.Application:
        from gateway.platforms.api_server.routes import builtin_registrars

        self._app = web.Application(middlewares=[self.guard.middleware(), make_middleware(self)],
                                    client_max_size=self.max_body + 1)
        self._app.on_response_prepare.append(add_cors_headers)
        if self.response_headers:
            async def add_own_headers(_request: web.Request, response: web.StreamResponse) -> None:
                response.headers.update(self.response_headers)

            self._app.on_response_prepare.append(add_own_headers)
        self.endpoints, self.features, self.public_paths = {}, {}, set()
        self.signed_routes = set()
        for registrar in [*builtin_registrars(), *self._registrars]:
            registrar(self)
        return self._app

    def check_port(self) -> None:
        """Fail at once (before the warm-up) when the address is taken, naming the way out."""
        if self.reuse_port or self.port == 0:  # workers share a port the supervisor reserved
            return
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as aiohttp binds
            try:
                sock.bind((self.host, self.port))
            except OSError as exc:
                raise APIServerConfigError(
                    f"cannot listen on {self.host}:{self.port} ({exc.strerror or exc}): another "
                    "program (another gateway?) uses it; pick another port with --port N or "
                    "`hermes config set gateway.api_server.port N`") from None

    async def start(self) -> None:
        """Listen; every accepted connection goes through ``self.guard`` (the connection cap)."""
        self._site_runner = web.AppRunner(self.app(), access_log=None, handle_signals=False,
                                          keepalive_timeout=self.idle_timeout)
        await self._site_runner.setup()
        assert self._site_runner.server is not None
        self.port = self.guard.listen(self._site_runner.server, self.host, self.port,
                                      LISTEN_BACKLOG, self.reuse_port)
        log.info("API server listening on http://%s:%d (Bearer key required%s; at most %d "
                 "connections)", self.host, self.port,
                 "" if is_loopback(self.host) else "; listening beyond loopback", self.guard.cap)

    async def stop(self) -> None:
        self.guard.close()  # no new connections; the runner drains the open ones
        if self._site_runner is not None:
            await self._site_runner.cleanup()
            self._site_runner = None

    # -- what the server offers ------------------------------------------------------------------
    def capabilities(self) -> dict[str, Any]:
        """``GET /v1/capabilities`` (SPEC §15): what a client may feature-detect."""
        return {"object": "hermes.api_server.capabilities", "platform": "hermes-agent",
                "model": MODEL_ID, "auth": {"type": "bearer", "required": True},
                "features": dict(self.features), "endpoints": dict(self.endpoints)}


def _open_files_limit() -> Optional[int]:
    import resource

    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return None if soft == resource.RLIM_INFINITY else int(soft)
