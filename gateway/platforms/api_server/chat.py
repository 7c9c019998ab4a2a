"""``POST /v1/chat/completions``: plain JSON and SSE.

Stateless by default: the client sends the whole history and the last user message is the turn's
input (nothing is stored). With ``X-Hermes-Session-Key`` (or ``-Id``) the server keeps the history.
"""
from __future__ import annotations

import asyncio
import logging
import secrets
import time
from typing import Any, Callable, Optional

from aiohttp import web

from gateway.platforms.api_server import session_headers
from hermes_core import wire_json
from hermes_core.images import chat_parts
from gateway.platforms.api_server.outcomes import (ending, error_code, failure_message,
                                                   message_text, raise_for, tool_progress)
from gateway.platforms.api_server.sse import SSEWriter, TurnFeed
from gateway.platforms.api_server.wire import (MODEL_ID, APIError, check_roles, read_json, text_of,
                                               usage_of)

log = logging.getLogger("gateway.api_server")


def parse_chat(body: dict[str, Any]) -> tuple[Any, Optional[str], list[dict[str, Any]]]:
    """(user message, system text, prior history) of a chat completions body; 400 on bad fields.
    The user message is its text, or its text and ``image_url`` parts when it has images."""
    messages = body.get("messages")
    if (not isinstance(messages, list) or not messages
            or not all(isinstance(m, dict) for m in messages)):
        raise APIError(400, "'messages' must be a non-empty array of message objects.",
                       param="messages")
    check_roles(messages, "messages", required=True)
    if messages[-1].get("role") != "user":
        raise APIError(400, "The last message must have role 'user'.", param="messages")
    if body.get("stream_options") is not None and not isinstance(body["stream_options"], dict):
        raise APIError(400, "'stream_options' must be an object.", param="stream_options")
    system = "\n\n".join(text_of(m.get("content")) for m in messages
                         if m.get("role") in ("system", "developer"))
    history = [m for m in messages[:-1] if m.get("role") not in ("system", "developer")]
    return chat_parts(messages[-1].get("content")), system or None, history


def register(server: Any) -> None:
    runner = server.runner

    async def chat(request: web.Request) -> web.StreamResponse:
        body = await read_json(request, server.max_body)
        user_text, system, history = parse_chat(body)
        key = await session_headers.resolve(runner, request)
        model = str(body.get("model") or MODEL_ID)
        kwargs = dict(system_message=system, conversation_history=None if key else history)
        if body.get("stream"):
            return await _stream(runner, request, body, key, user_text, model, kwargs)
        outcome = await runner.run_turn(key, user_text, **kwargs)
        raise_for(outcome, key)
        finish, hermes = ending(outcome, key)
        prompt, completion = usage_of(outcome.result)
        reply = {"id": f"chatcmpl-{secrets.token_hex(12)}", "object": "chat.completion",
                 "created": int(time.time()), "model": model,
                 "choices": [{"index": 0, "message": {"role": "assistant", "content": outcome.text},
                              "finish_reason": finish, "logprobs": None}],
                 "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                           "total_tokens": prompt + completion}}
        if hermes is not None:
            reply["hermes"] = hermes
        return web.json_response(
            reply, headers=session_headers.response_headers(outcome.session_id, key),
            dumps=wire_json.dumps_text)

    server.add_endpoint("chat_completions", "POST", "/v1/chat/completions", chat)
    server.features.update(chat_completions=True, chat_completions_streaming=True,
                           tool_progress_events=True, session_key_header=True)


async def _stream(runner: Any, request: web.Request, body: dict[str, Any], key: Optional[str],
                  user_text: str, model: str, kwargs: dict[str, Any]) -> web.StreamResponse:
    """Content chunks with ``hermes.tool.progress`` events between them; the last chunk carries the
    finish reason (and the ``hermes`` member); then ``[DONE]``. A client that goes away stops the
    turn."""
    sid = await _session_id(runner, key)
    feed = TurnFeed(asyncio.get_running_loop())
    handle = runner.submit(key, user_text, stream_callback=feed.on_delta,
                           tool_progress_callback=feed.on_tool, **kwargs)
    turn = asyncio.ensure_future(handle.outcome())
    out = SSEWriter(request, session_headers.response_headers(sid, key), hold_headers=True)
    cid, created = f"chatcmpl-{secrets.token_hex(12)}", int(time.time())
    wire = ChunkWire(cid, created, model)
    chunk = wire.chunk
    streamed: list[str] = []
    try:
        await out.open()
        # held: the headers and the role chunk go out in one write with the first record
        await out.send(chunk({"role": "assistant", "content": ""}), flush=False)
        async for kind, value in feed.events(turn, out):
            if kind == "delta":
                value += feed.more_text()  # deltas queued behind it go out as one chunk
                streamed.append(value)
                await out.send_record(wire.content(value), flush=not feed.more())
            elif kind == "tool":
                await out.send(tool_progress(value), event="hermes.tool.progress",
                               flush=not feed.more())
            elif kind == "keepalive":
                await out.comment()
            elif kind == "gone":
                raise ConnectionResetError("client went away")
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        await _send_ending(out, turn.result(), key, chunk, streamed, include_usage)
        await out.close()
    except (ConnectionResetError, asyncio.CancelledError) as exc:
        if handle.stop("the API client disconnected"):
            log.info("stream client went away; its turn was interrupted (what it said is kept)")
        if isinstance(exc, asyncio.CancelledError):
            raise
    except Exception:
        if not out.prepared:
            raise  # nothing sent yet: the middleware answers with a normal error response
        log.exception("stream %s failed after it started", cid)
        try:  # the 200 is out: report in the stream, never with a second HTTP response
            await out.send({"error": {"message": "Internal server error.", "type": "server_error",
                                      "code": "internal_error"}}, event="error")
            await out.send(b"[DONE]")
            await out.close()
        except Exception as exc:
            log.debug("could not report the failure in the stream: %s", exc)
    return out.resp


class ChunkWire:
    """The ``chat.completion.chunk`` records of one stream. A text delta, nearly every record,
    is encoded once: the stream's constant head and tail around the JSON string of its text
    (no dict per chunk, no re-encoding of the envelope)."""

    def __init__(self, cid: str, created: int, model: str) -> None:
        self.base = {"id": cid, "object": "chat.completion.chunk", "created": created,
                     "model": model}
        mark = secrets.token_hex(8)  # where the text goes, whatever the encoder's spacing
        head = wire_json.dumps(self.chunk({"content": mark}))
        cut = head.rindex(wire_json.dumps(mark))
        self._head, self._tail = b"data: " + head[:cut], head[cut + len(mark) + 2:] + b"\n\n"

    def chunk(self, delta: dict[str, Any], finish: Optional[str] = None) -> dict[str, Any]:
        return {**self.base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    def content(self, text: str) -> bytes:
        """The SSE record of one text delta."""
        return self._head + wire_json.dumps(text) + self._tail


async def _send_ending(out: SSEWriter, outcome: Any, key: Optional[str],
                       chunk: Callable[..., dict[str, Any]], streamed: list[str],
                       include_usage: bool) -> None:
    """The answer's tail when it did not stream, the last chunk (finish reason, ``hermes``), the
    usage chunk when asked, and for a failed turn the error event the OpenAI SDKs raise; then
    ``[DONE]``."""
    text = message_text(outcome)
    # the answer usually streamed as the tail (after any text written before tool calls)
    if text and not "".join(streamed).endswith(text):
        await out.send(chunk({"content": ("\n\n" if streamed else "") + text}), flush=False)
    finish, hermes = ending(outcome, key)
    last = chunk({}, finish)
    if hermes is not None:
        last["hermes"] = hermes
    await out.send(last, flush=False)  # the tail goes out in one write with the stream's end
    if include_usage:
        prompt, completion = usage_of(outcome.result)
        await out.send({**chunk({}), "choices": [], "usage": {
            "prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}}, flush=False)
    if outcome.kind == "failed":
        await out.send({"error": {"message": failure_message(outcome, key), "type": "server_error",
                                  "param": None, "code": error_code(outcome)}}, event="error",
                       flush=False)
    await out.send(b"[DONE]", flush=False)


async def _session_id(runner: Any, key: Optional[str]) -> Optional[str]:
    """The session a keyed stream continues, for its ``X-Hermes-Session-Id`` header (sent before the
    turn ends: after an exhausted-session reset the final chunk's ``hermes.session_id`` has the new
    one)."""
    if key is None:
        return None
    live = runner.live_state(key)
    return (live.sid if live is not None
            else await asyncio.to_thread(runner.sessions.get_or_create, key))
