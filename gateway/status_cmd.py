"""``hermes gateway status``: what ``gateway.json`` says, as lines for a person (or ``--json``).

Each platform is named with its state, so a platform that cannot connect (and is being retried,
``gateway.platform_start``) shows up here with its error instead of only in the log.
"""
from __future__ import annotations

import argparse
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


def _running_lines(data: dict[str, Any]) -> str:
    up = int(time.time() - float(data.get("started_at") or time.time()))
    names = data.get("platforms") or []
    line = (f", up {up}s, platforms: {platforms_text(names, data.get('platform_status'))}, "
            f"sessions: {data.get('sessions', 0)}, turns: {data.get('turns_completed', 0)}")
    if data.get("api_server"):
        line += f", API {data['api_server']}"
    from gateway.health import status_line

    if isinstance(data.get("workers"), list):
        from gateway.supervisor import worker_lines

        return line + "".join("\n" + x for x in worker_lines(data["workers"]))
    return line + "\n" + status_line(data.get("turns")) + "\n" + cron_status(data.get("cron"))


def cmd_status(args: argparse.Namespace) -> int:
    from gateway.cli import read_status

    data = read_status()
    if args.json:
        print(json.dumps(data or {"state": "never started"}))
    elif data is None:
        print("gateway: not running (never started here)")
    else:
        line = f"gateway: {data.get('state')} (pid {data.get('pid')})"
        if data.get("state") in ("running", "draining"):
            line += _running_lines(data)
        elif data.get("error"):
            line += f", last error: {data['error']}"
        print(line)
        print(f"log: {hermes_home() / 'logs' / 'gateway.log'}")
    if data and data.get("state") in ("running", "draining"):
        return 0
    print(f"hermes gateway: not running ({(data or {}).get('state') or 'never started here'}); "
          "start it with `hermes gateway run`", file=sys.stderr)
    return 1
