"""``HERMES_HOME/gateway.json``: what a running gateway says about itself, for
``hermes gateway status`` (and the pid file beside it).

A supervisor (``--workers N``) lists its workers there; each worker writes its own figures to
``gateway-workers/<i>.json``, merged in when the status is read. Writing is a report, never a
reason to stop: a failure is logged once a minute per kind and the next refresh tries again.
"""
from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any, Optional

from hermes_core.config import hermes_home
from hermes_core.files import atomic_write

log = logging.getLogger("gateway")

WORKER_FIELDS = ("turns", "turns_completed", "sessions", "cached_agents", "telegram", "cron")


def status_path() -> Path:
    return hermes_home() / "gateway.json"


def pid_path() -> Path:
    return hermes_home() / "gateway.pid"


def worker_status_path(index: int) -> Path:
    """Where worker ``index`` of ``--workers N`` writes its own status (gateway.json lists them)."""
    return hermes_home() / "gateway-workers" / f"{index}.json"


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_status() -> Optional[dict[str, Any]]:
    """The last status written here (None: never started); ``dead`` when its process is gone."""
    try:
        data = json.loads(status_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if data.get("state") not in ("stopped", None) and not pid_alive(int(data.get("pid") or 0)):
        data["state"] = "dead"  # killed without a chance to say so
    if isinstance(data.get("workers"), list):
        _merge_workers(data)
    return data


def _merge_workers(data: dict[str, Any]) -> None:
    """A supervisor's status lists its workers; each worker's own file adds its figures."""
    totals = {"turns_completed": 0, "sessions": 0, "cached_agents": 0}
    for w in data["workers"]:
        try:
            path = worker_status_path(int(w.get("index", -1)))
            own = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if own.get("pid") != w.get("pid"):
            continue  # a previous incarnation's file
        for name in WORKER_FIELDS:
            if name in own:
                w[name] = own[name]
        for name in totals:
            totals[name] += int(own.get(name) or 0)
    data.update(totals)


_status_failures: dict[str, float] = {}  # what went wrong writing the status -> when last logged


def write_status(path: Optional[Path] = None, **fields: Any) -> None:
    """Refresh the status file (``gateway.json`` unless ``path``). A failure (out of file
    descriptors, a full disk) is logged once a minute per kind; the next refresh tries again."""
    target = path or status_path()
    data = {"pid": os.getpid(), "updated_at": time.time(), **fields}
    try:
        atomic_write(target, json.dumps(data, indent=1, default=str))
    except (OSError, ValueError, TypeError) as exc:
        kind = f"{type(exc).__name__}:{getattr(exc, 'errno', '')}"
        if time.monotonic() - _status_failures.get(kind, -1e9) >= 60:
            _status_failures[kind] = time.monotonic()
            log.warning("could not write %s (%s); retrying at the next refresh", target, exc)
