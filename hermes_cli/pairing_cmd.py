"""``hermes pairing approve|list|revoke``: admit chat users who sent a pairing code.

``list`` is tab-separated lines for people and ``--json`` for scripts, like every listing. The
codes live in the session store (``gateway.access.PairingStore``), shared with every gateway.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser("pairing", help="approve, list or revoke chat users who asked for access",
                       description="Admit chat users who sent a pairing code.")
    acts = p.add_subparsers(dest="cmd", required=True)
    ap = acts.add_parser("approve", help="admit the user behind a pairing code")
    ap.add_argument("platform")
    ap.add_argument("code")
    ap.set_defaults(func=cmd_approve)
    ls = acts.add_parser("list", help="pending codes and approved users")
    ls.add_argument("--json", action="store_true", help="a JSON array of objects")
    ls.set_defaults(func=cmd_list)
    rv = acts.add_parser("revoke", help="remove an approved user")
    rv.add_argument("platform")
    rv.add_argument("user_id")
    rv.set_defaults(func=cmd_revoke)


def pairing_rows(data: dict[str, Any], now: float) -> list[dict[str, Any]]:
    """One object per pending code and per approved user, platform by platform. Pure."""
    from gateway.access import CODE_TTL_SECONDS

    rows: list[dict[str, Any]] = []
    for platform, groups in data.items():
        for code, e in sorted(groups["pending"].items()):
            left = int((CODE_TTL_SECONDS - (now - float(e.get("created_at", now)))) // 60)
            rows.append({"platform": platform, "state": "pending", "code": code,
                         "user_id": str(e.get("user_id")), "user_name": e.get("user_name", ""),
                         "expires_in_minutes": left})
        for uid, e in sorted(groups["approved"].items()):
            rows.append({"platform": platform, "state": "approved", "user_id": str(uid),
                         "user_name": e.get("user_name", "")})
    return rows


def _store() -> Any:
    from gateway.access import PairingStore
    from hermes_core.config import load_config
    from hermes_state import SessionDB

    return PairingStore(db=SessionDB.from_config(load_config()))


def cmd_list(args: argparse.Namespace) -> int:
    rows = pairing_rows(_store().list(), time.time())
    if args.json:
        print(json.dumps(rows, indent=1, ensure_ascii=False))
        return 0
    if not rows:
        print("No pending pairing codes and no approved users.")
    for r in rows:
        if r["state"] == "pending":
            print(f"{r['platform']}\tpending\t{r['code']}\t{r['user_id']}\t{r['user_name']}\t"
                  f"expires in {r['expires_in_minutes']} min")
        else:
            print(f"{r['platform']}\tapproved\t{r['user_id']}\t{r['user_name']}")
    return 0


def cmd_approve(args: argparse.Namespace) -> int:
    entry = _store().approve(args.platform.lower(), args.code)
    if entry is None:
        print(f"No live pairing code {args.code.upper()} for {args.platform} (codes work once "
              "and expire after 1 hour). Ask the user to message the bot again for a new one.",
              file=sys.stderr)
        return 1
    who = f"{entry.get('user_name') or 'user'} ({entry['user_id']})"
    print(f"Approved {who} on {args.platform}.")
    return 0


def cmd_revoke(args: argparse.Namespace) -> int:
    if _store().revoke(args.platform.lower(), args.user_id):
        print(f"Revoked {args.user_id} on {args.platform}.")
        return 0
    print(f"{args.user_id} is not approved on {args.platform}.", file=sys.stderr)
    return 1
