"""The runs API: ``POST /v1/runs`` (start a turn, 202 with its id), ``GET /v1/runs/{id}``,
``GET /v1/runs/{id}/events`` (SSE), ``POST /v1/runs/{id}/approval``, ``POST /v1/runs/{id}/stop``.

A run outlives the request that started it: a client that goes away does not stop it (``stop``
does). Its session comes from the session headers (``X-Hermes-Session-Key`` / ``-Id``) or the
body's ``session_id``; without either it is a throwaway turn (nothing stored). Events are named
``message.delta``, ``tool.started``, ``tool.completed``, ``approval.requested``,
``approval.resolved``, then one of ``run.completed``, ``run.failed``, ``run.cancelled``; each SSE
record carries its sequence number as ``id:``, and ``Last-Event-ID`` (or ``?after=N``) resumes.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any, Optional

from aiohttp import web

from gateway.platforms.api_server import session_headers
from gateway.platforms.api_server.outcomes import ending, message_text
from gateway.platforms.api_server.run_book import Run, RunBook, parse_choice
from gateway.platforms.api_server.sse import KEEPALIVE_SECONDS, SSEWriter
from gateway.platforms.api_server.wire import APIError, check_roles, read_json, text_of, usage_of

log = logging.getLogger("gateway.api_server")
POLL_SECONDS = 0.5


def parse_run(body: dict[str, Any]) -> tuple[str, Optional[str], Optional[list[dict[str, Any]]]]:
    """(input text, instructions, conversation history) of a ``POST /v1/runs`` body (pure)."""
    raw = body.get("input")
    text = text_of(raw) if isinstance(raw, (str, list)) else ""
    if not text.strip():
        raise APIError(400, "'input' must be the message text (a non-empty string).", param="input")
    instructions = body.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise APIError(400, "'instructions' must be a string.", param="instructions")
    history = body.get("conversation_history")
    if history is not None:
        if not isinstance(history, list) or not all(isinstance(m, dict) for m in history):
            raise APIError(400, "'conversation_history' must be an array of message objects.",
                           param="conversation_history")
        check_roles(history, "conversation_history", required=True)
    return text, instructions or None, history


def status_of(outcome: Any) -> str:
    """A finished turn's run status (pure)."""
    if outcome.kind in ("ok", "deferred"):
        return "completed"
    return "cancelled" if outcome.kind == "interrupted" else "failed"


def start_run(runner: Any, book: RunBook, key: Optional[str], text: str,
              session_id: Optional[str] = None, instructions: Optional[str] = None,
              history: Optional[list[dict[str, Any]]] = None) -> Run:
    """Submit the turn and follow it in a task; call on the runner's loop. Raises what
    ``runner.submit`` raises (``TurnLimitReached``)."""
    run = Run(asyncio.get_running_loop(), session_id)
    run.handle = runner.submit(key, text, system_message=instructions,
                               conversation_history=None if key else history,
                               stream_callback=run.on_delta, tool_progress_callback=run.on_tool,
                               approval_callback=run.ask)
    book.add(run)
    run.set_status("running")
    run.add("run.started", {"session_id": session_id, "input": text})
    runner.spawn(_follow(run, key), None)
    return run


async def _follow(run: Run, key: Optional[str]) -> None:
    try:
        outcome = await run.handle.outcome()
    except Exception as exc:  # the runner already logged it; the run says what happened
        run.finish("failed", None, f"{type(exc).__name__}: {exc}", None, {})
        return
    status = status_of(outcome)
    _, hermes = ending(outcome, key)
    text = message_text(outcome)
    prompt, completion = usage_of(outcome.result or {})
    run.session_id = outcome.session_id if key else run.session_id
    run.finish(status, text if status != "failed" else None, text if status == "failed" else None,
               hermes, {"prompt_tokens": prompt, "completion_tokens": completion})


async def _session_of(runner: Any, key: Optional[str]) -> Optional[str]:
    if key is None:
        return None
    live = runner.live_state(key)
    if live is not None:
        return live.sid
    return await asyncio.to_thread(runner.sessions.get_or_create, key)


def _last_seen(request: web.Request) -> int:
    raw = request.headers.get("Last-Event-ID") or request.query.get("after") or "0"
    try:
        return max(0, int(raw))
    except ValueError:
        raise APIError(400, "'after' / Last-Event-ID must be an event number.",
                       param="after") from None


async def stream_events(request: web.Request, run: Run) -> web.StreamResponse:
    """Every event after the client's last one, then the live ones until the run ends."""
    seq = _last_seen(request)
    out = SSEWriter(request)
    await out.open()
    loop = asyncio.get_running_loop()
    quiet_since = loop.time()
    try:
        while True:
            while seq < len(run.events):
                event = run.events[seq]
                seq += 1
                await out.send(event, event=event["event"], event_id=event["seq"])
                quiet_since = loop.time()
            if run.done:
                break
            async with run.changed:
                if seq >= len(run.events) and not run.done:
                    try:
                        await asyncio.wait_for(run.changed.wait(), POLL_SECONDS)
                    except asyncio.TimeoutError:
                        pass
            if out.client_gone():
                return out.resp
            if loop.time() - quiet_since >= KEEPALIVE_SECONDS:
                quiet_since = loop.time()
                await out.comment()
        await out.close()
    except ConnectionResetError:
        log.debug("run %s: an events client went away (the run goes on)", run.id)
    return out.resp


def _find(book: RunBook, run_id: str) -> Run:
    run = book.get(run_id)
    if run is None:
        raise APIError(404, f"Run '{run_id}' not found (finished runs are kept for an hour).",
                       code="run_not_found")
    return run


def _listing(book: RunBook) -> web.Response:
    """The runs still going (the dashboard and MCP hosts look for pending approvals here)."""
    return web.json_response({"object": "list", "data": [r.view() for r in book.active()]})


def register(server: Any) -> None:
    runner = server.runner
    book: RunBook = getattr(server, "runs", None) or RunBook()
    server.runs = book

    def find(request: web.Request) -> Run:
        return _find(book, request.match_info["run_id"])

    async def create(request: web.Request) -> web.Response:
        body = await read_json(request, server.max_body)
        text, instructions, history = parse_run(body)
        key = await session_headers.resolve(runner, request)
        if key is None and isinstance(body.get("session_id"), str) and body["session_id"].strip():
            name = session_headers.parse_name(body["session_id"], "session_id")
            key = await session_headers.key_for_session_id(runner, name or "")
        sid = await _session_of(runner, key)
        run = start_run(runner, book, key, text, sid, instructions, history)
        return web.json_response({**run.view(), "status": run.status}, status=202,
                                 headers=session_headers.response_headers(sid, key))

    async def get(request: web.Request) -> web.Response:
        return web.json_response(find(request).view())

    async def events(request: web.Request) -> web.StreamResponse:
        return await stream_events(request, find(request))

    async def approval(request: web.Request) -> web.Response:
        run = find(request)
        body = await read_json(request, server.max_body)
        choice = parse_choice(body)
        if choice is None:
            raise APIError(400, "Send {\"choice\": \"once\" | \"always\" | \"deny\"} (or "
                                "{\"approved\": true|false}).", param="choice")
        wanted = body.get("approval_id") if isinstance(body.get("approval_id"), str) else None
        if run.answer(choice, wanted) is None:
            raise APIError(409, f"Run '{run.id}' has no pending approval"
                                f"{' ' + repr(wanted) if wanted else ''} (status {run.status}).",
                           code="no_pending_approval")
        return web.json_response({**run.view(), "answered": choice})

    async def stop(request: web.Request) -> web.Response:
        run = find(request)
        run.stop("stopped through the API")
        return web.json_response(run.view())

    async def listing(_request: web.Request) -> web.Response:
        return _listing(book)

    server.add_endpoint("runs_list", "GET", "/v1/runs", listing)
    server.add_endpoint("runs_create", "POST", "/v1/runs", create)
    server.add_endpoint("runs_get", "GET", "/v1/runs/{run_id}", get)
    server.add_endpoint("runs_events", "GET", "/v1/runs/{run_id}/events", events)
    server.add_endpoint("runs_approval", "POST", "/v1/runs/{run_id}/approval", approval)
    server.add_endpoint("runs_stop", "POST", "/v1/runs/{run_id}/stop", stop)
    server.features.update(run_submission=True, run_status=True, run_events_sse=True,
                           run_stop=True, run_approval=True)
