"""The session store: every conversation, its messages, full-text search, locks, cron, records.

Two backends side by side (SPEC §16): ``sqlite_backend`` (the zero-config default,
``HERMES_HOME/state.db``) and ``postgres_backend`` (``store.url`` / ``HERMES_DATABASE_URL``,
several processes and hosts). ``store.SessionDB`` is the one interface; its logic lives once in
the mixins (``sessions``, ``messages``, ``search``, ``locks``, ``cron_store``, ``records``,
``pairing``). This module keeps the names the rest of Hermes imports.
"""
from __future__ import annotations

from .common import (PREVIEW_CHARS, CompressionLockLost, LeaseLost, SessionDBError, env_url,
                     holder_is_dead, machine_id, new_session_id, redact_url)
from .sqlite_schema import MIGRATIONS
from .store import SessionDB

__all__ = ["SessionDB", "SessionDBError", "CompressionLockLost", "LeaseLost",
           "MIGRATIONS", "PREVIEW_CHARS",
           "holder_is_dead", "machine_id", "new_session_id", "env_url", "redact_url"]
