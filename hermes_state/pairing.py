"""Chat pairing state (gateway/access.py keeps the rules): per platform three JSON documents,
``pending`` codes, ``approved`` users and per-user ``requests`` history, changed together in one
transaction (rows read ``FOR UPDATE`` on PostgreSQL), so every gateway worker and host and the
``hermes pairing`` command see one state."""
from __future__ import annotations

import json
import time
from typing import Any, Callable, TypeVar

from .backend import Tx, UsesBackend

T = TypeVar("T")

PAIRING_KINDS = ("pending", "approved", "requests")


def _load(text: Any) -> dict[str, Any]:
    try:
        data = json.loads(text) if text else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


class PairingMixin(UsesBackend):
    """Pairing state per platform."""

    def pairing_read(self, platform: str) -> dict[str, dict[str, Any]]:
        """``{"pending": {...}, "approved": {...}, "requests": {...}}`` of a platform."""
        rows = self._read("SELECT kind, data FROM pairing_state WHERE platform = ?", (platform,))
        state: dict[str, dict[str, Any]] = {kind: {} for kind in PAIRING_KINDS}
        state.update({r[0]: _load(r[1]) for r in rows if r[0] in PAIRING_KINDS})
        return state

    def pairing_update(self, platform: str, fn: Callable[[dict[str, dict[str, Any]]], T]) -> T:
        """Run ``fn(state)`` on the platform's state (a dict as ``pairing_read`` returns, changed
        in place) and store what it changed, all in one transaction; returns ``fn``'s result."""
        def tx(c: Tx) -> T:
            now = time.time()
            for kind in PAIRING_KINDS:  # the rows exist, so FOR UPDATE has something to lock
                c.execute("INSERT INTO pairing_state (platform, kind, data, updated_at)"
                          " VALUES (?, ?, '{}', ?) ON CONFLICT (platform, kind) DO NOTHING",
                          (platform, kind, now))
            rows = c.execute("SELECT kind, data FROM pairing_state WHERE platform = ?"
                             " ORDER BY kind" + self._b.FOR_UPDATE, (platform,)).fetchall()
            before = {r[0]: r[1] for r in rows}
            state = {kind: _load(before.get(kind)) for kind in PAIRING_KINDS}
            result = fn(state)
            for kind in PAIRING_KINDS:
                text = json.dumps(state[kind], sort_keys=True)
                if text != before.get(kind):
                    c.execute("UPDATE pairing_state SET data = ?, updated_at = ?"
                              " WHERE platform = ? AND kind = ?", (text, now, platform, kind))
            return result
        return self._write(tx)

    def pairing_import(self, platform: str, kind: str, data: dict[str, Any]) -> bool:
        """Seed one document (from the old ``pairing/`` files) unless the store has it already."""
        if kind not in PAIRING_KINDS:
            return False
        return self._write(lambda c: c.execute(
            "INSERT INTO pairing_state (platform, kind, data, updated_at) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (platform, kind) DO UPDATE SET data = excluded.data,"
            " updated_at = excluded.updated_at WHERE pairing_state.data = '{}'",
            (platform, kind, json.dumps(data, sort_keys=True), time.time())).rowcount > 0)

    def pairing_platforms(self) -> list[str]:
        return [r[0] for r in self._read("SELECT DISTINCT platform FROM pairing_state"
                                         " ORDER BY platform")]
