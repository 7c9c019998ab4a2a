"""Who may talk to the agent through a chat platform: deny by default, allowlists, one-time pairing
codes.

Decisions are pure functions of (environment, stored approvals, clock) so they are testable without
a platform. Pairing state lives in the session store (``SessionDB.pairing_*``), shared by every
gateway worker and the ``hermes pairing`` command; every change is one read-modify-write
transaction.
"""
from __future__ import annotations

import json
import os
import secrets
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

from hermes_core.config import hermes_home

CODE_TTL_SECONDS = 3600
CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O/1/I: codes are read aloud and retyped
CODE_LENGTH = 8
MAX_PENDING_PER_PLATFORM = 50  # strangers cannot grow the file without bound
MAX_CODES_PER_USER = 3  # new codes one user may get per CODES_WINDOW_SECONDS
CODES_WINDOW_SECONDS = 86400
REPLY_INTERVAL_SECONDS = 600  # an unknown user hears from the bot at most this often


def _split_ids(value: Optional[str]) -> set[str]:
    return {part.strip() for part in (value or "").split(",") if part.strip()}


def allowlisted(platform: str, user_id: str, env: Mapping[str, str] | None = None,
                extra: Optional[set[str]] = None) -> bool:
    """True when ``<PLATFORM>_ALLOWED_USERS`` or ``GATEWAY_ALLOWED_USERS`` (comma lists, ``*`` =
    all) names the user."""
    env = os.environ if env is None else env
    ids = (_split_ids(env.get(f"{platform.upper()}_ALLOWED_USERS"))
           | _split_ids(env.get("GATEWAY_ALLOWED_USERS")))
    ids |= extra or set()
    return "*" in ids or str(user_id) in ids


class PairingStore:
    """Pending codes and approved users per platform, kept in the session store (table
    ``pairing_state``; SQLite or PostgreSQL), so every gateway worker and host and the
    ``hermes pairing`` command share them. Files an older Hermes left in ``<home>/pairing/`` are
    imported once (then renamed ``*.imported``)."""

    def __init__(self, home: Optional[Path] = None, clock: Callable[[], float] = time.time,
                 db: Any = None) -> None:
        self.dir = (home or hermes_home()) / "pairing"
        self.clock = clock
        self._db = db
        self._owns_db = db is None
        self._explicit_home = home is not None

    @property
    def db(self) -> Any:
        """The SessionDB (opened on first use: the configured store, else ``<home>/state.db``)."""
        if self._db is None:
            from hermes_state import SessionDB, env_url
            if self._explicit_home and not env_url():
                self._db = SessionDB(self.dir.parent / "state.db")
            else:
                self._db = SessionDB()
            self._import_files()
        return self._db

    def close(self) -> None:
        """Close the store this object opened itself (one passed in stays open)."""
        if self._db is not None and self._owns_db:
            self._db.close()
            self._db = None

    def _import_files(self) -> None:
        """Move the JSON files of the file-based store into the table, once."""
        if not self.dir.is_dir():
            return
        for path in sorted(self.dir.glob("*-*.json")):
            platform, kind = path.stem.rsplit("-", 1)
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue  # unreadable: left where it is, as the old store would have ignored it
            if isinstance(data, dict):
                self._db.pairing_import(platform, kind, data)
            try:
                os.replace(path, path.with_name(path.name + ".imported"))
            except OSError:
                pass  # another process imported it at the same moment

    @staticmethod
    def _platform(platform: str) -> str:
        return "".join(c for c in platform.lower() if c.isalnum() or c in "-_") or "unknown"

    def _live(self, pending: dict[str, Any]) -> dict[str, Any]:
        now = self.clock()
        return {c: e for c, e in pending.items()
                if now - float(e.get("created_at", 0)) < CODE_TTL_SECONDS}

    # -- decisions -----------------------------------------------------------------------------
    def is_approved(self, platform: str, user_id: str) -> bool:
        return str(user_id) in self.db.pairing_read(self._platform(platform))["approved"]

    def request_code(self, platform: str, user_id: str, user_name: str = "",
                     chat_id: str = "") -> Optional[str]:
        """The user's live code (reused so repeated messages do not mint new ones), or a new one.

        None when too many strangers are already waiting on this platform, or this user already got
        ``MAX_CODES_PER_USER`` codes in the last ``CODES_WINDOW_SECONDS``.
        """
        return self.request(platform, user_id, user_name, chat_id, throttle_replies=False)[0]

    def request(self, platform: str, user_id: str, user_name: str = "", chat_id: str = "",
                throttle_replies: bool = True) -> tuple[Optional[str], str]:
        """(code or None, what to tell the user): ``"code"``, ``"busy"`` (platform cap), ``"limit"``
        (this user's cap) or ``"quiet"`` (answered less than ``REPLY_INTERVAL_SECONDS`` ago: a user
        who keeps messaging gets no reply per message)."""
        uid, now = str(user_id), self.clock()

        def change(state: dict[str, dict[str, Any]]) -> tuple[Optional[str], str]:
            pending = self._live(state["pending"])
            history = {u: h for u, h in state["requests"].items()
                       if now - max([float(h.get("replied_at", 0)),
                                     *map(float, h.get("codes", []))])
                       < CODES_WINDOW_SECONDS}
            state["requests"] = history
            mine = history.setdefault(uid, {"codes": [], "replied_at": 0})
            mine["codes"] = [t for t in mine.get("codes", [])
                             if now - float(t) < CODES_WINDOW_SECONDS]
            if throttle_replies and now - float(mine.get("replied_at", 0)) < REPLY_INTERVAL_SECONDS:
                return None, "quiet"
            code, verdict = next((c for c, e in pending.items() if e.get("user_id") == uid),
                                 None), "code"
            if code is None:
                if len(pending) >= MAX_PENDING_PER_PLATFORM:
                    verdict = "busy"
                elif len(mine["codes"]) >= MAX_CODES_PER_USER:
                    verdict = "limit"
                else:
                    code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
                    pending[code] = {"user_id": uid, "user_name": user_name,
                                     "chat_id": str(chat_id), "created_at": now}
                    mine["codes"].append(now)
                    state["pending"] = pending
            if throttle_replies:
                mine["replied_at"] = now
            return code, verdict

        result: tuple[Optional[str], str] = self.db.pairing_update(self._platform(platform), change)
        return result

    def approve(self, platform: str, code: str) -> Optional[dict[str, Any]]:
        """Admit the user behind a live code; the code is consumed. None if unknown or expired."""
        code = code.strip().upper()

        def change(state: dict[str, dict[str, Any]]) -> Optional[dict[str, Any]]:
            pending = self._live(state["pending"])
            entry = pending.pop(code, None)
            state["pending"] = pending  # also drops expired codes
            if entry is None:
                return None
            state["approved"][entry["user_id"]] = {"user_name": entry.get("user_name", ""),
                                                   "approved_at": self.clock()}
            state["requests"].pop(entry["user_id"], None)  # admitted: a later revoke starts afresh
            return entry

        return self.db.pairing_update(self._platform(platform), change)

    def revoke(self, platform: str, user_id: str) -> bool:
        return self.db.pairing_update(self._platform(platform),
                                      lambda state: (state["approved"].pop(str(user_id), None)
                                                     is not None))

    def platforms(self) -> list[str]:
        return self.db.pairing_platforms()

    def list(self) -> dict[str, dict[str, Any]]:
        """``{platform: {"pending": {code: entry}, "approved": {user_id: entry}}}`` (live codes
        only)."""
        out: dict[str, dict[str, Any]] = {}
        for platform in self.platforms():
            state = self.db.pairing_read(platform)
            out[platform] = {"pending": self._live(state["pending"]), "approved": state["approved"]}
        return out


def pairing_message(platform: str, code: Optional[str], verdict: str = "code") -> str:
    if verdict == "limit":
        return ("You have asked for pairing codes too often today. Ask the owner of this bot to "
                "add you, or try again tomorrow.")
    if code is None:
        return "I can't take new pairing requests right now. Ask the owner of this bot to add you."
    return ("Hi! I don't know you yet, so I can't answer. Ask the owner of this bot to run:\n\n"
            f"    hermes pairing approve {platform} {code}\n\n"
            "The code works once and expires in 1 hour.")


class AccessControl:
    """The gateway's gate for chat platforms: allowlist or approved pairing, else a pairing code."""

    def __init__(self, store: Optional[PairingStore] = None, env: Mapping[str, str] | None = None,
                 config_allowed: Optional[dict[str, set[str]]] = None) -> None:
        self.store = store or PairingStore()
        self.env = env
        self.config_allowed = config_allowed or {}

    def is_allowed(self, platform: str, user_id: str) -> bool:
        extra = self.config_allowed.get(platform, set()) | self.config_allowed.get("*", set())
        return (allowlisted(platform, user_id, self.env, extra)
                or self.store.is_approved(platform, user_id))

    def refusal(self, platform: str, user_id: str, user_name: str = "",
                chat_id: str = "") -> Optional[str]:
        """The message an unknown user gets (a one-time pairing code), or None: answered
        recently."""
        code, verdict = self.store.request(platform, user_id, user_name, chat_id)
        return None if verdict == "quiet" else pairing_message(platform, code, verdict)
