"""``hermes pairing approve|list|revoke``: admit chat users who sent a pairing code.

``list`` is tab-separated lines for people and ``--json`` for scripts, like every listing.
"""
from __future__ import annotations

import json
import sys
import time
from typing import Any, Optional


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


def _list(store: Any, as_json: bool) -> int:
    rows = pairing_rows(store.list(), time.time())
    if as_json:
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


def pairing_main(argv: Optional[list[str]] = None) -> int:
    from gateway.access import PairingStore
    from hermes_cli.parsing import OneLineParser

    parser = OneLineParser(prog="hermes pairing",
                           description="Admit chat users who sent a pairing code.")
    sub = parser.add_subparsers(dest="cmd", required=True)
    ap = sub.add_parser("approve", help="admit the user behind a pairing code")
    ap.add_argument("platform")
    ap.add_argument("code")
    ls = sub.add_parser("list", help="pending codes and approved users")
    ls.add_argument("--json", action="store_true", help="a JSON array of objects")
    rv = sub.add_parser("revoke", help="remove an approved user")
    rv.add_argument("platform")
    rv.add_argument("user_id")
    args = parser.parse_args(argv)
    from hermes_core.config import load_config
    from hermes_state import SessionDB

    store = PairingStore(db=SessionDB.from_config(load_config()))
    if args.cmd == "list":
        return _list(store, args.json)
    if args.cmd == "approve":
        entry = store.approve(args.platform.lower(), args.code)
        if entry is None:
            print(f"No live pairing code {args.code.upper()} for {args.platform} (codes work once "
                  "and expire after 1 hour). Ask the user to message the bot again for a new one.",
                  file=sys.stderr)
            return 1
        who = f"{entry.get('user_name') or 'user'} ({entry['user_id']})"
        print(f"Approved {who} on {args.platform}.")
        return 0
    if store.revoke(args.platform.lower(), args.user_id):
        print(f"Revoked {args.user_id} on {args.platform}.")
        return 0
    print(f"{args.user_id} is not approved on {args.platform}.", file=sys.stderr)
    return 1
