"""``POST /v1/responses`` (the OpenAI Responses API).

Responses chain through ``previous_response_id`` or a named ``conversation``, both kept in the store;
``store: false`` is a throwaway turn that writes nothing.
"""
from __future__ import annotations

import asyncio
import secrets
import time
from dataclasses import dataclass
from typing import Any, Optional

from aiohttp import web

from gateway.platforms.api_server import session_headers
from gateway.platforms.api_server.outcomes import raise_for
from gateway.platforms.api_server.wire import MODEL_ID, APIError, check_roles, read_json, text_of, usage_of
from gateway.sessions import RESPONSE_KEY_PREFIX, new_session_id


@dataclass
class ResponsesRequest:
    user_text: str
    prior: list[dict[str, Any]]  # earlier input items
    previous: Optional[str]
    conversation: Optional[str]
    store: bool
    instructions: Optional[str]
    stream: bool


def parse_request(body: dict[str, Any]) -> ResponsesRequest:
    """The validated fields of a /v1/responses body; 400 naming the bad one (pure)."""
    items = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    if not isinstance(items, list) or not items or not all(isinstance(i, dict) for i in items):
        raise APIError(400, "'input' must be a string or a non-empty array of input items.", param="input")
    if items[-1].get("role", "user") != "user":
        raise APIError(400, "The last input item must be a user message.", param="input")
    check_roles([i for i in items if "role" in i], "input", required=False)
    if body.get("instructions") is not None and not isinstance(body["instructions"], str):
        raise APIError(400, "'instructions' must be a string.", param="instructions")
    prev, conv, store = body.get("previous_response_id"), body.get("conversation"), body.get("store", True)
    bad_conv = APIError(400, "'conversation' must be a string or an object with a string 'id'.",
                        param="conversation")
    if isinstance(conv, dict):
        conv = conv.get("id")
        if not isinstance(conv, str) or not conv:
            raise bad_conv
    if conv is not None and not isinstance(conv, str):
        raise bad_conv
    if prev is not None and not isinstance(prev, str):
        raise APIError(400, "'previous_response_id' must be a string.", param="previous_response_id")
    store = True if store is None else store
    if not isinstance(store, bool):
        raise APIError(400, "'store' must be a boolean.", param="store")
    if prev and conv:
        raise APIError(400, "Use either 'previous_response_id' or 'conversation', not both.",
                       param="previous_response_id")
    prior = [{"role": i.get("role", "user"), "content": text_of(i.get("content"))} for i in items[:-1]]
    return ResponsesRequest(text_of(items[-1].get("content")), prior, prev or None, conv or None, store,
                            body.get("instructions"), bool(body.get("stream")))


def _stored_history(db: Any, sid: str) -> list[dict[str, Any]]:
    """A stored conversation as read-only history for a ``store: false`` continuation."""
    return [m for m in db.get_active_messages(sid) if m.get("role") != "system"]


async def _prepare(runner: Any, req: ResponsesRequest, header_key: Optional[str]
                   ) -> tuple[Optional[str], Optional[list[dict[str, Any]]]]:
    """(runner key, history for a throwaway turn) for this request."""
    db, key, history = runner.db, None, None
    if req.previous:
        sid = await asyncio.to_thread(db.get_session_for_key, f"{RESPONSE_KEY_PREFIX}{req.previous}")
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
            sid = await asyncio.to_thread(db.get_session_for_key, f"api_server:conversation:{req.conversation}")
            history = await asyncio.to_thread(_stored_history, db, sid) if sid else []
    if key is None and req.store:
        sid = await asyncio.to_thread(db.create_session, new_session_id(), source="api_server")
        key = f"api_server:rsession:{sid}"
        await asyncio.to_thread(db.bind_session_key, key, sid)
    if key is None:  # store: false -> a throwaway turn: no key bound, no response id kept
        history = (history or []) + req.prior
    elif req.prior:  # earlier input items seed a conversation that has nothing yet
        sid = await asyncio.to_thread(runner.sessions.get_or_create, key)
        if await asyncio.to_thread(db.max_message_id, sid) is None:
            await asyncio.to_thread(db.append_messages, sid, req.prior)
    return key, history


def register(server: Any) -> None:
    runner = server.runner

    async def create(request: web.Request) -> web.Response:
        body = await read_json(request, server.max_body)
        req = parse_request(body)
        if req.stream:
            raise APIError(400, "Streaming is not supported on /v1/responses yet; use /v1/chat/completions.",
                           param="stream")
        key, history = await _prepare(runner, req, None)
        outcome = await runner.run_turn(key, req.user_text, system_message=req.instructions,
                                        conversation_history=history)
        raise_for(outcome, key)
        rid = f"resp_{secrets.token_hex(16)}"
        if key is not None:
            await asyncio.to_thread(runner.db.bind_session_key, f"{RESPONSE_KEY_PREFIX}{rid}", outcome.session_id)
        prompt, completion = usage_of(outcome.result)
        return web.json_response({
            "id": rid, "object": "response", "created_at": int(time.time()), "status": "completed",
            "model": str(body.get("model") or MODEL_ID), "previous_response_id": req.previous,
            "conversation": {"id": req.conversation} if req.conversation else None,
            "instructions": req.instructions,
            "output": [{"type": "message", "id": f"msg_{secrets.token_hex(12)}", "status": "completed",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": outcome.text, "annotations": []}]}],
            "usage": {"input_tokens": prompt, "output_tokens": completion, "total_tokens": prompt + completion},
            "error": None, "incomplete_details": None, "metadata": body.get("metadata") or {},
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "text": {"format": {"type": "text"}},
        }, headers=session_headers.response_headers(outcome.session_id, key))

    server.add_endpoint("responses", "POST", "/v1/responses", create)
    server.features.update(responses_api=True, responses_streaming=False)
