"""OpenAI-compatible HTTP API in front of the runner: chat completions (plain and SSE), responses, models.

Callers are authenticated by ``API_SERVER_KEY``, so chat pairing does not apply. Chat completions are
stateless by default (the client sends the whole history; the last user message is the turn's input);
``X-Hermes-Session-Id`` binds a request to a persistent session whose history the server keeps.
Responses chain through ``previous_response_id`` or a named ``conversation``, both kept in the store.
Every error is OpenAI's ``{"error": {...}}`` JSON; oversized bodies are refused before being read.
"""
from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import logging
import secrets
import time
from typing import Any, Optional

from aiohttp import web

from gateway.sessions import RESPONSE_KEY_PREFIX

log = logging.getLogger("gateway.api_server")

DEFAULT_HOST, DEFAULT_PORT, DEFAULT_MAX_BODY = "127.0.0.1", 8642, 1 << 20
MODEL_ID = "hermes-agent"
SESSION_HEADER = "X-Hermes-Session-Id"
ROLES = ("system", "developer", "user", "assistant", "tool")
INTERRUPTED = "The turn was interrupted before it finished; retry shortly."


class APIServerConfigError(Exception):
    """The API server cannot start with these settings; the message says how to fix them."""


class APIError(Exception):
    def __init__(self, status: int, message: str, type_: str = "invalid_request_error",
                 code: Optional[str] = None, param: Optional[str] = None,
                 headers: Optional[dict[str, str]] = None) -> None:
        super().__init__(message)
        self.status, self.message, self.type, self.code, self.param = status, message, type_, code, param
        self.headers = headers


def error_response(status: int, message: str, type_: str = "invalid_request_error", code: Optional[str] = None,
                   param: Optional[str] = None, headers: Optional[dict[str, str]] = None) -> web.Response:
    body = {"error": {"message": message, "type": type_, "param": param, "code": code}}
    return web.json_response(body, status=status, headers=headers)


def is_loopback(host: str) -> bool:
    if host in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _text_of(content: Any) -> str:
    """Chat or responses content (str or list of parts) -> plain text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
    return "" if content is None else str(content)


def _usage(result: dict[str, Any]) -> tuple[int, int]:
    return int(result.get("prompt_tokens") or 0), int(result.get("completion_tokens") or 0)


def _check_roles(items: list[dict[str, Any]], param: str, required: bool) -> None:
    for n, item in enumerate(items):
        role = item.get("role")
        if (role is not None or required) and role not in ROLES:
            raise APIError(400, f"{param}[{n}].role must be one of {', '.join(ROLES)}, not {role!r}.", param=param)


def _responses_fields(body: dict[str, Any]) -> tuple[Optional[str], Optional[str], bool]:
    """Validated (previous_response_id, conversation id, store) of a /v1/responses body."""
    if body.get("instructions") is not None and not isinstance(body["instructions"], str):
        raise APIError(400, "'instructions' must be a string.", param="instructions")
    prev, conv, store = body.get("previous_response_id"), body.get("conversation"), body.get("store", True)
    if isinstance(conv, dict):
        conv = conv.get("id")
        if not isinstance(conv, str) or not conv:
            raise APIError(400, "'conversation' must be a string or an object with a string 'id'.",
                           param="conversation")
    if conv is not None and not isinstance(conv, str):
        raise APIError(400, "'conversation' must be a string or an object with a string 'id'.", param="conversation")
    if prev is not None and not isinstance(prev, str):
        raise APIError(400, "'previous_response_id' must be a string.", param="previous_response_id")
    if store is None:
        store = True
    if not isinstance(store, bool):
        raise APIError(400, "'store' must be a boolean.", param="store")
    if prev and conv:
        raise APIError(400, "Use either 'previous_response_id' or 'conversation', not both.",
                       param="previous_response_id")
    return prev or None, conv or None, store


def _stored_history(db: Any, sid: str) -> list[dict[str, Any]]:
    """A stored conversation as read-only history for a ``store: false`` continuation."""
    return [m for m in db.get_active_messages(sid) if m.get("role") != "system"]


class APIServer:
    name = "api_server"

    def __init__(self, runner: Any, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, key: Optional[str] = None,
                 max_body_bytes: int = DEFAULT_MAX_BODY) -> None:
        if not key and not is_loopback(host):
            raise APIServerConfigError(
                f"API server: refusing to listen on {host} without an API key; set API_SERVER_KEY "
                "(clients send it as 'Authorization: Bearer <key>') or use API_SERVER_HOST=127.0.0.1")
        self.runner, self.host, self.port, self.max_body = runner, host, port, max_body_bytes
        self._key = key.encode() if key else None
        self._site_runner: Optional[web.AppRunner] = None

    # -- lifecycle -------------------------------------------------------------------------------
    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._middleware], client_max_size=self.max_body + 1)
        app.router.add_get("/health", self._health)
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/responses", self._responses)
        return app

    async def start(self) -> None:
        self._site_runner = web.AppRunner(self.app(), access_log=None, handle_signals=False)
        await self._site_runner.setup()
        site = web.TCPSite(self._site_runner, self.host, self.port)
        await site.start()
        if self.port == 0:
            self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        log.info("API server listening on http://%s:%d (auth %s)", self.host, self.port,
                 "on" if self._key else "off")

    async def stop(self) -> None:
        if self._site_runner is not None:
            await self._site_runner.cleanup()
            self._site_runner = None

    # -- plumbing --------------------------------------------------------------------------------
    @web.middleware
    async def _middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        try:
            if request.path != "/health":
                if self._key is not None:
                    auth = request.headers.get("Authorization", "")
                    given = auth[7:].strip().encode() if auth.lower().startswith("bearer ") else b""
                    if not hmac.compare_digest(given, self._key):
                        return error_response(401, "Invalid or missing API key (send 'Authorization: Bearer <key>').",
                                              code="invalid_api_key")
                if not self.runner.accepting:
                    return error_response(503, "The gateway is shutting down; retry shortly.", "server_error",
                                          "shutting_down", headers={"Retry-After": "5"})
            return await handler(request)
        except APIError as exc:
            return error_response(exc.status, exc.message, exc.type, exc.code, exc.param, exc.headers)
        except web.HTTPException as exc:
            if exc.status < 400:
                raise
            kind = "not_found" if exc.status == 404 else "invalid_request_error"
            return error_response(exc.status, f"{exc.reason}: {request.method} {request.path}", kind)
        except (ConnectionResetError, asyncio.CancelledError):
            raise
        except Exception:
            log.exception("API request %s %s failed", request.method, request.path)
            return error_response(500, "Internal server error.", "server_error")

    async def _json(self, request: web.Request) -> dict[str, Any]:
        if request.content_length is not None and request.content_length > self.max_body:
            raise APIError(413, f"Request body is larger than {self.max_body} bytes.", code="request_too_large")
        data = bytearray()
        while True:
            chunk = await request.content.read(65536)
            if not chunk:
                break
            data += chunk
            if len(data) > self.max_body:
                raise APIError(413, f"Request body is larger than {self.max_body} bytes.", code="request_too_large")
        try:
            body = json.loads(bytes(data) or b"null")
        except ValueError as exc:
            raise APIError(400, f"Request body is not valid JSON: {exc}", code="invalid_json") from None
        if not isinstance(body, dict):
            raise APIError(400, "Request body must be a JSON object.", code="invalid_json")
        return body

    async def _session_key(self, request: web.Request) -> Optional[str]:
        name = request.headers.get(SESSION_HEADER, "").strip()
        if not name:
            return None
        if len(name) > 200 or not name.isprintable():
            raise APIError(400, f"{SESSION_HEADER} must be printable and at most 200 characters.",
                           param=SESSION_HEADER)
        key = f"api_server:session:{name}"
        if self.runner.live_state(key) is None:  # bound already when its session is live
            await asyncio.to_thread(self._adopt_existing, key, name)
        return key

    def _adopt_existing(self, key: str, name: str) -> None:
        """The header names an existing session id: continue it (the runner then shares that session's
        lock and agent with its other keys) unless a chat owns it: a chat's transcript stays private."""
        db = self.runner.db
        if db.get_session_for_key(key) is not None or db.get_session(name) is None:
            return
        if self.runner.sessions.owned_by_chat(name, self.runner.adapters):
            raise APIError(403, f"Session '{name}' belongs to a chat platform conversation; the API server "
                                "cannot continue it. Use another session name.",
                           code="session_not_allowed", param=SESSION_HEADER)
        db.bind_session_key(key, name)

    # -- routes ----------------------------------------------------------------------------------
    async def _health(self, _request: web.Request) -> web.Response:
        return web.json_response({"status": "ok" if self.runner.accepting else "draining", "platform": "hermes"})

    async def _models(self, _request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [
            {"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "hermes"}]})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await self._json(request)
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
            raise APIError(400, "'messages' must be a non-empty array of message objects.", param="messages")
        _check_roles(messages, "messages", required=True)
        if messages[-1].get("role") != "user":
            raise APIError(400, "The last message must have role 'user'.", param="messages")
        if body.get("stream_options") is not None and not isinstance(body["stream_options"], dict):
            raise APIError(400, "'stream_options' must be an object.", param="stream_options")
        system = "\n\n".join(_text_of(m.get("content")) for m in messages if m.get("role") in ("system", "developer"))
        history = [m for m in messages[:-1] if m.get("role") not in ("system", "developer")]
        user_text = _text_of(messages[-1].get("content"))
        key = await self._session_key(request)
        model = str(body.get("model") or MODEL_ID)
        kwargs = dict(system_message=system or None, conversation_history=None if key else history)
        if body.get("stream"):
            return await self._chat_stream(request, body, key, user_text, model, kwargs)
        outcome = await self.runner.run_turn(key, user_text, **kwargs)
        self._raise_for(outcome, key)
        prompt, completion = _usage(outcome.result)
        return web.json_response({
            "id": f"chatcmpl-{secrets.token_hex(12)}", "object": "chat.completion", "created": int(time.time()),
            "model": model, "choices": [{"index": 0, "message": {"role": "assistant", "content": outcome.text},
                                         "finish_reason": "stop", "logprobs": None}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
        }, headers={SESSION_HEADER: outcome.session_id})

    @staticmethod
    def _raise_for(outcome: Any, key: Optional[str]) -> None:
        if outcome.kind == "failed":
            raise APIError(500, outcome.text, "server_error", "agent_error")
        if outcome.kind == "exhausted" and key is None:
            raise APIError(400, outcome.text, code="context_length_exceeded", param="messages")
        if outcome.kind == "interrupted":
            raise APIError(503, INTERRUPTED, "server_error", "interrupted", headers={"Retry-After": "5"})

    @staticmethod
    def _stream_error(outcome: Any, key: Optional[str]) -> Optional[dict[str, Any]]:
        """The SSE error event for an outcome that is not an answer (the stream already said 200)."""
        if outcome.kind == "failed" or (outcome.kind == "exhausted" and key is None):
            return {"message": outcome.text, "type": "server_error", "code": "agent_error"}
        if outcome.kind == "interrupted":
            return {"message": INTERRUPTED, "type": "server_error", "code": "interrupted"}
        return None

    async def _chat_stream(self, request: web.Request, body: dict[str, Any], key: Optional[str], user_text: str,
                           model: str, kwargs: dict[str, Any]) -> web.StreamResponse:
        loop = asyncio.get_running_loop()
        deltas: asyncio.Queue[str] = asyncio.Queue()
        turn = asyncio.ensure_future(self.runner.run_turn(
            key, user_text, stream_callback=lambda d: loop.call_soon_threadsafe(deltas.put_nowait, d), **kwargs))
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        cid, created = f"chatcmpl-{secrets.token_hex(12)}", int(time.time())

        def chunk(delta: dict[str, Any], finish: Optional[str] = None) -> dict[str, Any]:
            return {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        async def send(obj: Any) -> None:
            await resp.write(b"data: " + (obj if isinstance(obj, bytes) else json.dumps(obj).encode()) + b"\n\n")

        streamed: list[str] = []
        try:
            await resp.prepare(request)
            await send(chunk({"role": "assistant", "content": ""}))
            while not (turn.done() and deltas.empty()):
                getter = asyncio.ensure_future(deltas.get())
                done, _ = await asyncio.wait({getter, turn}, timeout=15, return_when=asyncio.FIRST_COMPLETED)
                if getter in done:
                    streamed.append(getter.result())
                    await send(chunk({"content": streamed[-1]}))
                else:
                    getter.cancel()
                    if not done:
                        await resp.write(b": keep-alive\n\n")
            outcome = turn.result()
            failure = self._stream_error(outcome, key)
            if failure is not None:
                await send({"error": failure})
            else:
                # the answer usually streamed as the tail (after any text written before tool calls)
                if outcome.text and not "".join(streamed).endswith(outcome.text):
                    await send(chunk({"content": ("\n\n" if streamed else "") + outcome.text}))
                await send(chunk({}, "stop"))
                if (body.get("stream_options") or {}).get("include_usage"):
                    prompt, completion = _usage(outcome.result)
                    await send({"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                                "choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                                                         "total_tokens": prompt + completion}})
            await send(b"[DONE]")
            await resp.write_eof()
        except (ConnectionResetError, asyncio.CancelledError):
            log.info("stream client went away; the turn finishes and is saved anyway")
        except Exception:
            if not resp.prepared:
                raise  # nothing sent yet: the middleware answers with a normal error response
            log.exception("stream %s failed after it started", cid)
            try:  # the 200 is out: report in the stream, never with a second HTTP response
                await send({"error": {"message": "Internal server error.", "type": "server_error",
                                      "code": "internal_error"}})
                await send(b"[DONE]")
                await resp.write_eof()
            except Exception as exc:
                log.debug("could not report the failure in the stream: %s", exc)
        return resp

    async def _responses(self, request: web.Request) -> web.Response:
        body = await self._json(request)
        items = body.get("input")
        if isinstance(items, str):
            items = [{"role": "user", "content": items}]
        if not isinstance(items, list) or not items or not isinstance(items[-1], dict):
            raise APIError(400, "'input' must be a string or a non-empty array of input items.", param="input")
        if items[-1].get("role", "user") != "user":
            raise APIError(400, "The last input item must be a user message.", param="input")
        _check_roles([i for i in items if "role" in i], "input", required=False)
        if body.get("stream"):
            raise APIError(400, "Streaming is not supported on /v1/responses yet; use /v1/chat/completions.",
                           param="stream")
        prev, conv, store = _responses_fields(body)
        db, key, history = self.runner.db, None, None
        prior = [{"role": i.get("role", "user"), "content": _text_of(i.get("content"))} for i in items[:-1]]
        if prev:
            sid = await asyncio.to_thread(db.get_session_for_key, f"{RESPONSE_KEY_PREFIX}{prev}")
            if sid is None:
                raise APIError(404, f"Response '{prev}' not found.", code="response_not_found",
                               param="previous_response_id")
            if store:
                key = f"api_server:rsession:{sid}"
                if await asyncio.to_thread(db.get_session_for_key, key) is None:
                    await asyncio.to_thread(db.bind_session_key, key, sid)
            else:
                history = await asyncio.to_thread(_stored_history, db, sid)
        elif conv:
            if store:
                key = f"api_server:conversation:{conv}"
            else:
                sid = await asyncio.to_thread(db.get_session_for_key, f"api_server:conversation:{conv}")
                history = await asyncio.to_thread(_stored_history, db, sid) if sid else []
        if key is None and store:
            from gateway.sessions import new_session_id

            sid = await asyncio.to_thread(db.create_session, new_session_id(), source="api_server")
            key = f"api_server:rsession:{sid}"
            await asyncio.to_thread(db.bind_session_key, key, sid)
        if key is None:  # store: false -> a throwaway turn: no key bound, no response id kept
            history = (history or []) + prior
        elif prior:  # earlier input items seed a conversation that has nothing yet
            sid = await asyncio.to_thread(self.runner.sessions.get_or_create, key)
            if await asyncio.to_thread(db.max_message_id, sid) is None:
                await asyncio.to_thread(db.append_messages, sid, prior)
        outcome = await self.runner.run_turn(key, _text_of(items[-1].get("content")),
                                             system_message=body.get("instructions"), conversation_history=history)
        self._raise_for(outcome, key)
        rid = f"resp_{secrets.token_hex(16)}"
        if key is not None:
            await asyncio.to_thread(db.bind_session_key, f"{RESPONSE_KEY_PREFIX}{rid}", outcome.session_id)
        prompt, completion = _usage(outcome.result)
        return web.json_response({
            "id": rid, "object": "response", "created_at": int(time.time()), "status": "completed",
            "model": str(body.get("model") or MODEL_ID), "previous_response_id": prev,
            "conversation": {"id": conv} if conv else None, "instructions": body.get("instructions"),
            "output": [{"type": "message", "id": f"msg_{secrets.token_hex(12)}", "status": "completed",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": outcome.text, "annotations": []}]}],
            "usage": {"input_tokens": prompt, "output_tokens": completion, "total_tokens": prompt + completion},
            "error": None, "incomplete_details": None, "metadata": body.get("metadata") or {},
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "text": {"format": {"type": "text"}},
        }, headers={SESSION_HEADER: outcome.session_id})
