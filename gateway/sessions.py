"""Which session a chat is in: session keys (SPEC §7) mapped to session ids through the SessionDB.

The mapping lives in the store (``bind_session_key``), not in memory, so a restarted gateway keeps
every chat's conversation, and a reset is just binding the key to a fresh id: the old session is
never deleted and stays searchable.
"""
from __future__ import annotations

import logging
from typing import Any, Optional

from gateway.platforms.base import MessageEvent

log = logging.getLogger("gateway.sessions")


def _clean(part: Any) -> str:
    # ':' separates key fields; ids never contain it on the supported platforms, but be safe.
    return str(part).replace(":", "_")


def session_key(platform: str, chat_type: str, chat_id: str, user_id: Optional[str] = None,
                thread_id: Optional[str] = None) -> str:
    """``<platform>:dm:<chat>``; groups are keyed per user so people in one group never share a
    context: ``<platform>:group:<chat>:<user>`` (``<platform>:thread:<chat>:<thread>:<user>`` in
    topics)."""
    p, chat = _clean(platform), _clean(chat_id)
    if chat_type == "dm":
        return f"{p}:dm:{chat}"
    if chat_type == "channel":
        return f"{p}:channel:{chat}"
    user = _clean(user_id if user_id is not None else "unknown")
    if thread_id:
        return f"{p}:thread:{chat}:{_clean(thread_id)}:{user}"
    return f"{p}:group:{chat}:{user}"


def key_for_event(event: MessageEvent) -> str:
    return session_key(event.platform, event.chat_type, event.chat_id, event.user_id,
                       event.thread_id)


RESPONSE_KEY_PREFIX = "api_server:response:"


def platform_of(key: str) -> str:
    return key.split(":", 1)[0]


def owner_for(platform: str, user_id: Optional[str]) -> Optional[str]:
    """Whose data a chat user's sessions, memory and jobs are: ``"<platform>:<user id>"``; None
    for the API server (its key holder is the owner, who sees everything, like the CLI)."""
    if platform == "api_server":
        return None
    return f"{_clean(platform)}:{user_id if user_id not in (None, '') else 'unknown'}"


def owner_of(origin: Optional[dict[str, Any]]) -> Optional[str]:
    """The owner a chat turn acts for, from its origin (``{platform, chat_id, user_id, …}``)."""
    if not origin:
        return None
    return owner_for(str(origin.get("platform")), origin.get("user_id"))


def new_session_id() -> str:
    from hermes_state import new_session_id as _new

    return _new()


FRESH_LIMIT = 10_000  # new sessions remembered as empty until their first turn (take_fresh)


class SessionMap:
    """Session key -> current session id, persisted in the SessionDB."""

    def __init__(self, db: Any, fresh_limit: int = FRESH_LIMIT) -> None:
        from gateway.lease import is_shared

        self.db = db
        self.shared = is_shared(db)  # other processes write the store too (PostgreSQL)
        self._fresh: set[str] = set()  # made here by ``_bind_new`` and not yet taken
        self._fresh_limit = fresh_limit

    def lookup(self, key: str) -> Optional[str]:
        return self.db.get_session_for_key(key)

    def get_or_create(self, key: str, user_id: Optional[str] = None) -> str:
        sid = self.db.live_session_for_key(key)
        return sid if sid else self._bind_new(key, user_id)

    def rotate(self, key: str, reason: str, user_id: Optional[str] = None,
               old: Optional[str] = None) -> tuple[Optional[str], str]:
        """Start a fresh session for the key; the old one is ended (kept, searchable). Every other
        key that continued the old session (an API header naming it, a response chain) moves along,
        so no key is left pointing at an ended conversation. -> (old, new)."""
        old = old or self.lookup(key)
        new = self._bind_new(key, user_id, parent=old)
        if old:
            for other in self.keys_for(old):
                # a response id records where it was made
                if not other.startswith(RESPONSE_KEY_PREFIX):
                    self.db.bind_session_key(other, new)
            try:
                self.db.end_session(old, reason)
            except Exception as exc:  # ending is bookkeeping; the reset itself already happened
                log.warning("could not mark session %s ended: %s", old, exc)
        return old, new

    def keys_for(self, session_id: str) -> list[str]:
        """Every key bound to the session."""
        try:
            return self.db.keys_for_session(session_id)
        except Exception as exc:
            log.warning("could not list the keys of session %s: %s", session_id, exc)
            return []

    def owned_by_chat(self, session_id: str, chat_platforms: Any = ()) -> bool:
        """True when a chat platform key is bound to the session, or a chat platform made it: such a
        transcript is private to that chat and the API server must not continue it."""
        if any(platform_of(k) != "api_server" for k in self.keys_for(session_id)):
            return True
        row = self.db.get_session(session_id) or {}
        return row.get("source") in set(chat_platforms)

    def _bind_new(self, key: str, user_id: Optional[str], parent: Optional[str] = None) -> str:
        platform = platform_of(key)
        sid = self.db.create_session_for_key(key, new_session_id(), source=platform,
                                             user_id=user_id, parent_session_id=parent,
                                             owner=owner_for(platform, user_id))
        if len(self._fresh) >= self._fresh_limit:  # made, never turned (refused): forget all,
            self._fresh.clear()  # which costs each of them one read
        self._fresh.add(sid)
        log.info("session key %s -> %s", key, sid)
        return sid

    def take_fresh(self, session_id: str, held_mark: Optional[int] = None) -> bool:
        """True once for a session this process just made: its row exists and holds no message,
        so its first turn need not read it (its agent, ``AIAgent.start_empty``, and the mark).
        On a shared store only when the store, read under the session's lease, holds no row of
        it (``held_mark`` 0): nobody else can write it until the lease is given back."""
        try:
            self._fresh.remove(session_id)
        except KeyError:
            return False
        return not self.shared or held_mark == 0

    def mark(self, session_id: str) -> int:
        """A position in the session's rows; ``ensure_user_message`` looks only after it."""
        try:
            return int(self.db.max_message_id(session_id) or 0)
        except Exception:
            return 0

    def turn_mark(self, session_id: str, fresh: bool, held_mark: Optional[int]) -> int:
        """Where a turn's own rows will start: the mark read under the session's lease, else
        none for a fresh session, else one read."""
        if held_mark is not None:
            return held_mark
        return 0 if fresh else self.mark(session_id)

    def position(self, key: str, session_id: str) -> tuple[Optional[str], int]:
        """(the session ``key`` leads to now, ``mark(session_id)``) in one store round trip."""
        return self.db.key_position(key, session_id)

    def ensure_user_message(self, session_id: str, text: str, after_id: int = 0) -> bool:
        """Persist ``text`` as a user message unless a row after ``after_id`` already holds it (the
        agent normally persists its own turn). Returns True when it had to write it."""
        self._fresh.discard(session_id)  # it may hold a message now: the next turn reads it
        rows = self.db.get_messages(session_id, include_inactive=True)
        if any(r.get("id", 0) > after_id and r.get("role") == "user"
               and r.get("content") == text for r in rows):
            return False
        self.db.append_message(session_id, "user", text)
        return True
