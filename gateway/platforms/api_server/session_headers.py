"""Which persistent session a request continues: ``X-Hermes-Session-Key`` / ``X-Hermes-Session-Id``.

- ``X-Hermes-Session-Key: NAME`` is a stable name the client chose. It maps to the session's current
  id, which changes when the session is reset (e.g. compression exhausted); the response says which
  id served it in ``X-Hermes-Session-Id``. A name never seen before starts a conversation.
- ``X-Hermes-Session-Id: VALUE`` (the older header) works as before: a name like the key, or the id
  of an existing session, which is then continued (a chat platform's session excepted: its
  transcript is private to that chat, so it is visible in the sessions API but never adoptable).
Both share one namespace (``api_server:session:<name>``), so a client may switch headers.
- Both together (Hermes 0.22): the key names the conversation (the runner key, so its lock and
  agent), the id its current transcript: the key is bound to that id first, and an id the store
  does not know starts that transcript under that id. Responses carry both headers.
"""
from __future__ import annotations

import asyncio
from typing import Any, Optional

from aiohttp import web

from gateway.platforms.api_server.wire import APIError

SESSION_ID_HEADER = "X-Hermes-Session-Id"
SESSION_KEY_HEADER = "X-Hermes-Session-Key"
KEY_PREFIX = "api_server:session:"
MAX_NAME = 200


def parse_name(value: Optional[str], header: str) -> Optional[str]:
    """The header's name, or None when absent; 400 when too long or not printable (pure)."""
    if value is None:
        return None
    name = value.strip()
    if not name:
        return None
    if len(name) > MAX_NAME or not name.isprintable():
        raise APIError(400, f"{header} must be printable text of at most {MAX_NAME} characters.",
                       code="invalid_session_key", param=header)
    return name


def session_key_of(request: web.Request) -> tuple[Optional[str], Optional[str]]:
    """(runner key, header used) from the request headers; (None, None) for a stateless request."""
    key_name = parse_name(request.headers.get(SESSION_KEY_HEADER), SESSION_KEY_HEADER)
    id_name = parse_name(request.headers.get(SESSION_ID_HEADER), SESSION_ID_HEADER)
    if key_name:
        return KEY_PREFIX + key_name, SESSION_KEY_HEADER
    if id_name:
        return KEY_PREFIX + id_name, SESSION_ID_HEADER
    return None, None


async def resolve(runner: Any, request: web.Request) -> Optional[str]:
    """The runner key for this request (binding an adopted session id first), or None
    (stateless)."""
    key, header = session_key_of(request)
    if key is None:
        return None
    transcript = parse_name(request.headers.get(SESSION_ID_HEADER), SESSION_ID_HEADER)
    if header == SESSION_KEY_HEADER and transcript:
        if await asyncio.to_thread(_bind_transcript, runner, key, transcript):
            runner.forget_key(key)  # its cached session id is stale now
        return key
    if header == SESSION_ID_HEADER:
        return await key_for_session_id(runner, key[len(KEY_PREFIX):])
    return key


async def key_for_session_id(runner: Any, name: str) -> str:
    """The runner key continuing session ``name`` as ``X-Hermes-Session-Id: name`` would (a body's
    ``session_id`` too): an existing session is adopted, another name is a named conversation."""
    key = KEY_PREFIX + name
    if runner.live_state(key) is None:  # live: bound already
        await asyncio.to_thread(_adopt_existing, runner, key, name)
    return key


def _adopt_existing(runner: Any, key: str, name: str) -> None:
    """The header names an existing session id: continue it (the runner then shares that session's
    lock and agent with its other keys) unless a chat owns it."""
    db = runner.db
    bound, exists = db.key_and_session(key, name)
    if bound is not None or not exists:
        return
    if runner.sessions.owned_by_chat(name, runner.adapters):
        raise APIError(403, f"Session '{name}' belongs to a chat platform conversation; the API "
                            "server cannot continue it. Use another session name.",
                       code="session_not_allowed", param=SESSION_ID_HEADER)
    db.bind_session_key(key, name)


def _bind_transcript(runner: Any, key: str, session_id: str) -> bool:
    """Point the conversation ``key`` at transcript ``session_id`` (created when unknown); True
    when the binding changed. A chat's transcript is refused as with the id header alone."""
    db = runner.db
    if db.get_session_for_key(key) == session_id:
        return False
    if db.get_session(session_id) is None:
        db.create_session(session_id, source="api_server")
    elif runner.sessions.owned_by_chat(session_id, runner.adapters):
        raise APIError(403, f"Session '{session_id}' belongs to a chat platform conversation; the "
                            "API server cannot continue it. Use another session id.",
                       code="session_not_allowed", param=SESSION_ID_HEADER)
    db.bind_session_key(key, session_id)
    return True


def response_headers(session_id: Optional[str], key: Optional[str]) -> dict[str, str]:
    """What a turn's response says about its session (nothing for a stateless turn): the id
    that served it and, for a named conversation, its name (both headers, as Hermes 0.22)."""
    if key is None or not session_id:
        return {}
    out = {SESSION_ID_HEADER: session_id}
    if key.startswith(KEY_PREFIX):
        out[SESSION_KEY_HEADER] = key[len(KEY_PREFIX):]
    return out
