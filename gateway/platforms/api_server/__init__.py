"""The OpenAI-compatible API server (SPEC §15), one module per concern:

- ``server``: ``APIServer`` (lifecycle, ``add_routes``/``add_endpoint``, capabilities, health,
  models)
- ``security``: key, Host, Origin/CORS and Content-Type checks (one middleware, pure decisions)
- ``wire``: OpenAI error bodies, bounded JSON bodies, small parsing helpers
- ``session_headers``: ``X-Hermes-Session-Key`` / ``X-Hermes-Session-Id``
- ``chat``, ``responses`` (+ ``response_events``): the two completion APIs; ``outcomes``: turn
  outcome -> wire (finish reasons, the ``hermes`` member, tool progress records)
- ``sessions_api``: ``/api/sessions`` (list, show, messages, delete); ``sessions_edit``: create,
  rename, fork
- ``runs`` (+ ``run_book``): ``/v1/runs`` (a turn followed by events, approvals answered, stop)
- ``catalog``: ``/v1/skills``, ``/v1/toolsets``
- ``sse``: server-sent events and the bridge from agent callbacks to the event loop

Other features add their routes with ``APIServer.add_routes(registrar)`` (see docs/CONTRACTS.md).
"""
from __future__ import annotations

from gateway.platforms.api_server.routes import builtin_registrars
from gateway.platforms.api_server.security import is_loopback
from gateway.platforms.api_server.server import (DEFAULT_HOST, DEFAULT_MAX_BODY, DEFAULT_PORT,
                                                 APIServer, APIServerConfigError, RouteRegistrar)
from gateway.platforms.api_server.session_headers import SESSION_ID_HEADER, SESSION_KEY_HEADER
from gateway.platforms.api_server.wire import (MODEL_ID, APIError, error_response, query_int,
                                               read_json)

__all__ = ["APIServer", "APIServerConfigError", "APIError", "RouteRegistrar", "error_response",
           "read_json", "query_int", "is_loopback", "DEFAULT_HOST", "DEFAULT_PORT",
           "DEFAULT_MAX_BODY", "MODEL_ID", "SESSION_ID_HEADER", "SESSION_KEY_HEADER",
           "builtin_registrars"]
