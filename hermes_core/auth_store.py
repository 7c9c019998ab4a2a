"""Stored API keys of the credential pools: ``HERMES_HOME/auth.json`` (0600), Hermes' file.

``hermes auth add|remove`` write it; provider resolution reads it after the environment and
config.yaml, so every key a provider has (``OPENAI_API_KEY``, ``OPENAI_API_KEYS=k1,k2``,
``model.api_keys``, these) forms one pool. Other sections of the file (Hermes Agent's OAuth
state...) are kept as they are.
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Optional

from hermes_core.config import hermes_home

FILE_NAME = "auth.json"
POOL = "credential_pool"


class AuthStoreError(Exception):
    """auth.json cannot be read or changed; the message says what to do."""


def auth_path(home: Optional[Path] = None) -> Path:
    return Path(home or hermes_home()) / FILE_NAME


def _read(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise AuthStoreError(f"{path} cannot be read ({exc}); fix or move it aside") from None
    if not isinstance(data, dict):
        raise AuthStoreError(f"{path} is not a JSON object; fix or move it aside")
    return data


def entries(provider: str, home: Optional[Path] = None) -> list[dict]:
    """The stored credentials of ``provider`` (each ``{label, auth_type, source, api_key}``)."""
    try:
        pool = _read(auth_path(home)).get(POOL) or {}
    except AuthStoreError:
        return []  # a run never fails over this file; `hermes auth list` says what is wrong
    rows = pool.get(provider) if isinstance(pool, dict) else None
    return [r for r in rows or [] if isinstance(r, dict) and r.get("api_key")]


def stored_keys(provider: str, home: Optional[Path] = None) -> list[str]:
    return [str(r["api_key"]) for r in entries(provider, home)]


def _write(path: Path, data: dict) -> None:
    from hermes_core.files import atomic_write
    from hermes_core.home import ensure_private_dir

    ensure_private_dir(path.parent)
    atomic_write(path, json.dumps(data, indent=2) + "\n")


def _change(home: Optional[Path], change: Any) -> Any:
    from hermes_core.locks import dir_lock

    path = auth_path(home)
    with dir_lock(path.parent, 10.0, AuthStoreError):
        data = _read(path)
        pool = data.setdefault(POOL, {})
        if not isinstance(pool, dict):
            raise AuthStoreError(f"{path}: `{POOL}` is not an object; fix or move the file aside")
        result = change(pool)
        _write(path, data)
    return result


def add_key(provider: str, key: str, label: Optional[str] = None,
            home: Optional[Path] = None) -> dict:
    """Store one more key for ``provider``; refused when it is stored already."""
    key = key.strip()
    if not key:
        raise AuthStoreError("the key is empty")

    def change(pool: dict) -> dict:
        rows = pool.setdefault(provider, [])
        if any(r.get("api_key") == key for r in rows if isinstance(r, dict)):
            raise AuthStoreError(f"that key is stored for {provider} already")
        row = {"label": label or f"key-{len(rows) + 1}", "auth_type": "api_key",
               "source": "manual", "api_key": key, "added_at": int(time.time())}
        rows.append(row)
        return row

    return _change(home, change)


def remove_key(provider: str, ref: str, home: Optional[Path] = None) -> dict:
    """Drop a stored key of ``provider`` by its number in ``hermes auth list`` or its label."""

    def change(pool: dict) -> dict:
        rows = [r for r in pool.get(provider) or [] if isinstance(r, dict)]
        found = next((r for r in rows if str(r.get("label")) == ref), None)
        if found is None and ref.isdigit() and 1 <= int(ref) <= len(rows):
            found = rows[int(ref) - 1]
        if found is None:
            raise AuthStoreError(f"no stored key {ref!r} for {provider}; `hermes auth list "
                                 f"{provider}` shows them")
        pool[provider] = [r for r in rows if r is not found]
        return found

    return _change(home, change)
