"""The OpenAI Responses API: ``POST /v1/responses`` (plain or ``stream: true``), ``GET`` and
``DELETE /v1/responses/{id}``.

A conversation continues through ``previous_response_id``, a named ``conversation`` or the
``X-Hermes-Session-Key`` header; stored responses (``store`` defaults to true) live in the session
store. ``store: false`` is a throwaway turn that writes nothing (it may read the history it
continues).
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, Optional

from aiohttp import web

from gateway.platforms.api_server import session_headers
from gateway.platforms.api_server.outcomes import (ending, failure_message, message_text,
                                                   raise_for)
from gateway.platforms.api_server.response_events import ResponseBuilder
from gateway.platforms.api_server.sse import SSEWriter, TurnFeed
from hermes_core.images import chat_parts
from gateway.platforms.api_server.wire import (MODEL_ID, APIError, check_roles, read_json,
                                               text_of, usage_of)
from gateway.sessions import RESPONSE_KEY_PREFIX, new_session_id

log = logging.getLogger("gateway.api_server")


@dataclass
class ResponsesRequest:
    user_text: Any  # its text, or text and image parts (hermes_core.images.chat_parts)
    prior: list[dict[str, Any]]  # earlier input items
    previous: Optional[str]
    conversation: Optional[str]
    store: bool
    instructions: Optional[str]
    stream: bool
    model: str
    metadata: Optional[dict[str, Any]]


def parse_request(body: dict[str, Any]) -> ResponsesRequest:
    """The validated fields of a /v1/responses body; 400 naming the bad one (pure)."""
    items = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    if not isinstance(items, list) or not items or not all(isinstance(i, dict) for i in items):
        raise APIError(400, "'input' must be a string or a non-empty array of input items.",
                       param="input")
    if items[-1].get("role", "user") != "user":
        raise APIError(400, "The last input item must be a user message.", param="input")
    check_roles([i for i in items if "role" in i], "input", required=False)
    if body.get("instructions") is not None and not isinstance(body["instructions"], str):
        raise APIError(400, "'instructions' must be a string.", param="instructions")
    prev, conv, store = (body.get("previous_response_id"), body.get("conversation"),
                         body.get("store", True))
    bad_conv = APIError(400, "'conversation' must be a string or an object with a string 'id'.",
                        param="conversation")
    if isinstance(conv, dict):
        conv = conv.get("id")
        if not isinstance(conv, str) or not conv:
            raise bad_conv
    if conv is not None and not isinstance(conv, str):
        raise bad_conv
    if prev is not None and not isinstance(prev, str):
        raise APIError(400, "'previous_response_id' must be a string.",
                       param="previous_response_id")
    store = True if store is None else store
    if not isinstance(store, bool):
        raise APIError(400, "'store' must be a boolean.", param="store")
    if prev and conv:
        raise APIError(400, "Use either 'previous_response_id' or 'conversation', not both.",
                       param="previous_response_id")
    prior = [{"role": i.get("role", "user"),
              "content": text_of(i.get("content"))} for i in items[:-1]]
    metadata = body.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise APIError(400, "'metadata' must be an object.", param="metadata")
    user = chat_parts(items[-1].get("content"))
    return ResponsesRequest(user, prior, prev or None, conv or None, store,
                            body.get("instructions"), bool(body.get("stream")),
                            str(body.get("model") or MODEL_ID), metadata)


def _stored_history(db: Any, sid: str) -> list[dict[str, Any]]:
    """A stored conversation as read-only history for a ``store: false`` continuation."""
    return [m for m in db.get_active_messages(sid) if m.get("role") != "system"]


def _session_of_response(db: Any, response_id: str) -> Optional[str]:
    row = db.get_response(response_id)
    if row is not None:
        return row["session_id"]
    # made before responses were kept
    return db.get_session_for_key(f"{RESPONSE_KEY_PREFIX}{response_id}")


async def _prepare(runner: Any, req: ResponsesRequest, header_key: Optional[str]
                   ) -> tuple[Optional[str], Optional[list[dict[str, Any]]]]:
    """(runner key, history for a throwaway turn) for this request."""
    db, key, history = runner.db, None, None
    if header_key and (req.previous or req.conversation):
        raise APIError(400, "Use either the X-Hermes-Session-Key header or 'previous_response_id' "
                            "/ 'conversation', not both.", param="previous_response_id")
    if header_key:
        if req.store:
            key = header_key
        else:
            sid = await asyncio.to_thread(db.get_session_for_key, header_key)
            history = await asyncio.to_thread(_stored_history, db, sid) if sid else []
    elif req.previous:
        sid = await asyncio.to_thread(_session_of_response, db, req.previous)
        if sid is None:
            raise APIError(404, f"Response '{req.previous}' not found.", code="response_not_found",
                           param="previous_response_id")
        if req.store:
            key = f"api_server:rsession:{sid}"
            if await asyncio.to_thread(db.get_session_for_key, key) is None:
                await asyncio.to_thread(db.bind_session_key, key, sid)
        else:
            history = await asyncio.to_thread(_stored_history, db, sid)
    elif req.conversation:
        if req.store:
            key = f"api_server:conversation:{req.conversation}"
        else:
            sid = await asyncio.to_thread(db.get_session_for_key,
                                          f"api_server:conversation:{req.conversation}")
            history = await asyncio.to_thread(_stored_history, db, sid) if sid else []
    if key is None and req.store:
        sid = await asyncio.to_thread(db.create_session, new_session_id(), source="api_server")
        key = f"api_server:rsession:{sid}"
        await asyncio.to_thread(db.bind_session_key, key, sid)
    if key is None:  # store: false -> a throwaway turn: no key bound, no response kept
        history = (history or []) + req.prior
    elif req.prior:  # earlier input items seed a conversation that has nothing yet
        sid = await asyncio.to_thread(runner.sessions.get_or_create, key)
        if await asyncio.to_thread(db.max_message_id, sid) is None:
            await asyncio.to_thread(db.append_messages, sid, req.prior)
    return key, history


def _status(finish: str, hermes: Optional[dict[str, Any]]) -> str:
    if finish == "error":
        return "failed"
    return "completed" if hermes is None else "incomplete"


def _finish(builder: ResponseBuilder, outcome: Any,
            key: Optional[str]) -> tuple[dict[str, Any], list[Any]]:
    finish, hermes = ending(outcome, key)
    status, text = _status(finish, hermes), message_text(outcome)
    prompt, completion = usage_of(outcome.result)
    usage = {"input_tokens": prompt, "output_tokens": completion,
             "total_tokens": prompt + completion}
    error = {"code": (hermes or {}).get("error_code") or "agent_error",
             "message": failure_message(outcome, key) if outcome.kind == "failed" else text} \
        if status == "failed" else None
    return builder.finish(text, status, usage, error, hermes)


def register(server: Any) -> None:
    runner = server.runner

    async def create(request: web.Request) -> web.StreamResponse:
        body = await read_json(request, server.max_body)
        req = parse_request(body)
        header_key = await session_headers.resolve(runner, request)
        key, history = await _prepare(runner, req, header_key)
        builder = ResponseBuilder(model=req.model, previous=req.previous,
                                  conversation=req.conversation, instructions=req.instructions,
                                  metadata=req.metadata, store=req.store)
        if req.stream:
            return await _stream(runner, request, req, key, history, builder)
        outcome = await runner.run_turn(key, req.user_text, system_message=req.instructions,
                                        conversation_history=history)
        raise_for(outcome, key)
        final, _ = _finish(builder, outcome, key)
        await _keep(runner, key, outcome.session_id, final)
        return web.json_response(
            final, headers=session_headers.response_headers(outcome.session_id, key))

    async def get(request: web.Request) -> web.Response:
        rid = request.match_info["response_id"]
        row = await asyncio.to_thread(runner.db.get_response, rid)
        if row is None or row["body"] is None:
            raise APIError(
                404, f"Response '{rid}' not found (it was never stored, or was deleted).",
                           code="response_not_found")
        return web.json_response(row["body"])

    async def delete(request: web.Request) -> web.Response:
        rid = request.match_info["response_id"]
        gone = await asyncio.to_thread(runner.db.delete_response, rid)
        gone = await asyncio.to_thread(runner.db.unbind_session_key,
                                       f"{RESPONSE_KEY_PREFIX}{rid}") or gone
        if not gone:
            raise APIError(404, f"Response '{rid}' not found.", code="response_not_found")
        return web.json_response({"id": rid, "object": "response", "deleted": True})

    server.add_endpoint("responses", "POST", "/v1/responses", create)
    server.add_endpoint("responses_get", "GET", "/v1/responses/{response_id}", get)
    server.add_endpoint("responses_delete", "DELETE", "/v1/responses/{response_id}", delete)
    server.features.update(responses_api=True, responses_streaming=True, responses_get_delete=True)


async def _keep(runner: Any, key: Optional[str], session_id: str, final: dict[str, Any]) -> None:
    if key is not None and final.get("store"):
        await asyncio.to_thread(runner.db.save_response, final["id"], session_id, final)


async def _stream(runner: Any, request: web.Request, req: ResponsesRequest, key: Optional[str],
                  history: Optional[list[dict[str, Any]]],
                  builder: ResponseBuilder) -> web.StreamResponse:
    """Responses API events; a client that goes away stops the turn (what it said is kept)."""
    sid = None
    if key is not None:
        live = runner.live_state(key)
        sid = (live.sid if live is not None
               else await asyncio.to_thread(runner.sessions.get_or_create, key))
    feed = TurnFeed(asyncio.get_running_loop())
    handle = runner.submit(key, req.user_text, system_message=req.instructions,
                           conversation_history=history, stream_callback=feed.on_delta,
                           tool_progress_callback=feed.on_tool)
    turn = asyncio.ensure_future(handle.outcome())
    out = SSEWriter(request, session_headers.response_headers(sid, key), hold_headers=True)
    try:
        await out.open()
        for name, data in builder.start():  # the headers and these go out in one write
            await out.send(data, event=name, flush=False)
        await out.flush()
        async for kind, value in feed.events(turn, out):
            events = (builder.delta(value) if kind == "delta"
                      else builder.tool(value) if kind == "tool" else [])
            for name, data in events:  # one write for what one report makes, and what is queued
                await out.send(data, event=name, flush=False)
            if not feed.more():
                await out.flush()
            if kind == "keepalive":
                await out.comment()
            elif kind == "gone":
                raise ConnectionResetError("client went away")
        outcome = turn.result()
        final, events = _finish(builder, outcome, key)
        await _keep(runner, key, outcome.session_id, final)
        for name, data in events:
            await out.send(data, event=name, flush=False)
        await out.close()  # the held records go out with the stream's end
    except (ConnectionResetError, asyncio.CancelledError) as exc:
        if handle.stop("the API client disconnected"):
            log.info("responses stream client went away; its turn was interrupted")
        if isinstance(exc, asyncio.CancelledError):
            raise
    except Exception:
        if not out.prepared:
            raise
        log.exception("responses stream %s failed after it started", builder.id)
        try:
            await out.send({"type": "error", "sequence_number": builder.seq,
                            "code": "internal_error", "message": "Internal server error.",
                            "param": None}, event="error")
            await out.close()
        except Exception as exc:
            log.debug("could not report the failure in the stream: %s", exc)
    return out.resp
