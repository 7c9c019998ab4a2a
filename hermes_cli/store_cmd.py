"""`hermes store migrate --to postgresql://…` and `hermes store status`: the session store
(SPEC §16).

`migrate` copies the SQLite store (every table, row ids kept, the search column built as rows
arrive) into PostgreSQL in one transaction and compares the row counts table by table. A target
that already holds Hermes rows is refused unless `--force`, which replaces them. URLs are shown
without their password; an unusable URL or unreachable server is one line on stderr, exit 2.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Callable


def add_parser(sub: Any) -> None:
    p = sub.add_parser("store", help="the session store: status, migrate SQLite to PostgreSQL")
    ss = p.add_subparsers(dest="store_action", metavar="ACTION")
    mg = ss.add_parser("migrate", help="copy the SQLite store into a PostgreSQL database")
    mg.add_argument("--to", required=True, metavar="URL", help="postgresql://user:pass@host/db")
    mg.add_argument("--from", dest="source", metavar="PATH",
                    help="the SQLite file (default: HERMES_HOME/state.db)")
    mg.add_argument("--force", action="store_true",
                    help="replace the Hermes data a non-empty target already holds")
    mg.set_defaults(func=_store_errors(_migrate))
    st = ss.add_parser("status", help="which store is configured, its schema and size")
    st.add_argument("--json", action="store_true")
    status = _store_errors(lambda args: _status(getattr(args, "json", False)))
    st.set_defaults(func=status)
    p.set_defaults(func=status)  # bare `hermes store` says which store


def _store_errors(action: Callable[[Any], int]) -> Callable[[Any], int]:
    """A ``hermes store`` action as an argparse handler: a store error is one line, exit 2."""
    def handler(args: Any) -> int:
        from hermes_state import SessionDBError

        try:
            return action(args)
        except SessionDBError as exc:
            print(f"hermes store: {' '.join(str(exc).split())}", file=sys.stderr)
            return 2
    return handler


def _migrate(args: Any) -> int:
    from hermes_core.config import hermes_home
    from hermes_state import redact_url
    from hermes_state.common import is_postgres_url
    from hermes_state.transfer import TransferError, copy_store

    if not is_postgres_url(args.to):
        print("hermes store: --to must be a postgresql:// URL", file=sys.stderr)
        return 2
    source = Path(args.source).expanduser() if args.source else hermes_home() / "state.db"
    print(f"copying {source} to {redact_url(args.to)}", flush=True)
    try:
        counts = copy_store(source, args.to, force=args.force,
                            progress=lambda line: print(f"  {line}", flush=True))
    except TransferError as exc:
        print(f"hermes store: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1 if "already holds" in str(exc) or "differ" in str(exc) else 2
    width = max(len(t) for t in counts)
    print("rows per table (source = target):")
    for table, (src, dst) in counts.items():
        print(f"  {table:<{width}}  {src:>9,}  {dst:>9,}")
    print(f"done: {sum(s for s, _ in counts.values()):,} rows copied, search built. To use it, set "
          "store.url in config.yaml (or HERMES_DATABASE_URL).")
    return 0


def _status(as_json: bool) -> int:
    from hermes_cli.agent_factory import open_db
    with open_db() as db:
        migrations = db.applied_migrations()
        info = {"backend": db.backend, "location": db.label, "schema_version": len(migrations),
                "migrations": migrations, "sessions": db.count_sessions(),
                "pool": db.pool_stats()}
    if as_json:
        print(json.dumps(info))
        return 0
    pool = info["pool"]
    extra = f", pool {pool['size']}/{pool['max_size']} ({pool['in_use']} in use)" if pool else ""
    print(f"{info['backend']} at {info['location']}: schema version {info['schema_version']}, "
          f"{info['sessions']} sessions{extra}")
    return 0
