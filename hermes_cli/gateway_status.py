"""``hermes gateway status``: what ``gateway.json`` says, as lines for a person (or ``--json``).

Each platform is named with its state, so a platform that cannot connect (and is being retried,
``gateway.platform_start``) shows up here with its error instead of only in the log. The text is
made by pure functions of the status (``status_text``); ``gateway.status`` reads the file.
"""
from __future__ import annotations

import json
import sys
import time
from typing import Any, Optional

from hermes_core.config import hermes_home


def platforms_text(names: list[str], states: Optional[dict[str, Any]]) -> str:
    """``telegram (retrying: ConnectError: …; attempt 3, next try in 12s), api_server``."""
    out = []
    for name in names:
        st = (states or {}).get(name) or {}
        if st.get("state") in (None, "connected"):
            out.append(name)
            continue
        detail = f"{st['state']}: {st.get('error') or 'not connected'}"
        if st.get("state") == "retrying":
            detail += (f"; attempt {st.get('attempts', '?')}, "
                       f"next try in {st.get('next_try_in', 0):.0f}s")
        out.append(f"{name} ({detail})")
    return ", ".join(out)


def cron_status(cron: Optional[dict[str, Any]]) -> str:
    """``cron: last tick 12s ago, next: brief (ab12cd34) at 2026-12-01 08:00 CET, 0 running``."""
    if not cron:
        return "cron: not running"
    from cron.schedule import ScheduleError, format_time, get_zone

    last = cron.get("last_tick")
    parts = [f"last tick {int(time.time() - last)}s ago" if last else "no tick yet"]
    nxt = cron.get("next")
    if nxt:
        try:
            when = format_time(nxt.get("at"), get_zone(None))
        except ScheduleError:
            when = "?"
        parts.append(f"next: {nxt.get('name')} ({nxt.get('id')}) at {when}")
    else:
        parts.append("no job scheduled")
    parts.append(f"{cron.get('running', 0)} running")
    if cron.get("error"):
        parts.append(f"last error: {cron['error']}")
    return "cron: " + ", ".join(parts)


def turns_line(turns: Optional[dict[str, Any]]) -> str:
    """``turns: 12 in flight, 3 queued (limit 5,900); 1,204 refused``."""
    if not turns:
        return "turns: (no figures yet)"
    line = (f"turns: {turns.get('in_flight', 0)} in flight, {turns.get('queued', 0)} queued "
            f"(limit {turns.get('limit', 0):,}; peak {turns.get('peak_in_flight', 0)})")
    if turns.get("refused"):
        line += f"; {turns['refused']:,} refused"
    return line


def worker_lines(workers: list[dict[str, Any]]) -> list[str]:
    """One line per worker of a supervisor (as ``gateway.json`` lists them, with each worker's
    own figures merged in)."""
    lines = []
    for w in workers:
        line = f"worker {w.get('index')}: {w.get('state')} (pid {w.get('pid')})"
        turns = w.get("turns") or {}
        if w.get("state") == "running":
            line += (f", turns: {w.get('turns_completed', 0)} done, "
                     f"{turns.get('in_flight', 0)} in flight, {turns.get('queued', 0)} queued")
        if w.get("telegram"):
            line += f", telegram: {w['telegram']}"
        if w.get("restarts"):
            line += f", restarts: {w['restarts']} (last: {w.get('last_exit')})"
        lines.append(line)
    return lines


def _running_lines(data: dict[str, Any]) -> str:
    up = int(time.time() - float(data.get("started_at") or time.time()))
    names = data.get("platforms") or []
    line = (f", up {up}s, platforms: {platforms_text(names, data.get('platform_status'))}, "
            f"sessions: {data.get('sessions', 0)}, turns: {data.get('turns_completed', 0)}")
    if data.get("api_server"):
        line += f", API {data['api_server']}"
    if isinstance(data.get("workers"), list):
        return line + "".join("\n" + x for x in worker_lines(data["workers"]))
    return line + "\n" + turns_line(data.get("turns")) + "\n" + cron_status(data.get("cron"))


def status_text(data: dict[str, Any]) -> str:
    """The lines of ``hermes gateway status`` for a status that exists (pure)."""
    line = f"gateway: {data.get('state')} (pid {data.get('pid')})"
    if data.get("state") in ("running", "draining"):
        line += _running_lines(data)
    elif data.get("error"):
        line += f", last error: {data['error']}"
    return line


def print_status(as_json: bool) -> int:
    """0 when a gateway runs (or drains) here, else 1 with a hint on stderr."""
    from gateway.status import read_status

    data = read_status()
    if as_json:
        print(json.dumps(data or {"state": "never started"}))
    elif data is None:
        print("gateway: not running (never started here)")
    else:
        print(status_text(data))
        print(f"log: {hermes_home() / 'logs' / 'gateway.log'}")
    if data and data.get("state") in ("running", "draining"):
        return 0
    print(f"hermes gateway: not running ({(data or {}).get('state') or 'never started here'}); "
          "start it with `hermes gateway run`", file=sys.stderr)
    return 1
