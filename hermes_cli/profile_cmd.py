"""`hermes profile list|create|use|delete|show`: separate agents under one install (issue 25).

The profile a command runs in is chosen by ``hermes -p NAME``, ``HERMES_PROFILE`` or ``hermes
profile use NAME`` (``hermes_core.profiles``); these commands work on the install's root whichever
profile is active.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from hermes_core import profiles


def setup(p: argparse.ArgumentParser) -> None:
    """The arguments of `hermes profile` (registered by hermes_cli.cli_plugin)."""
    ps = p.add_subparsers(dest="profile_action", metavar="ACTION")
    ls = ps.add_parser("list", help="every profile; * marks the one in use, (default) the "
                                    "sticky one")
    ls.add_argument("--json", action="store_true", help="machine-readable output")
    c = ps.add_parser("create", help="a new, empty profile")
    c.add_argument("name", metavar="NAME")
    c.add_argument("--clone", action="store_true",
                   help="copy config.yaml, .env and SOUL.md of the profile in use")
    u = ps.add_parser("use", help="make NAME the default of later commands (default: the root)")
    u.add_argument("name", metavar="NAME")
    d = ps.add_parser("delete", help="remove a profile and everything in it (asks unless --yes)")
    d.add_argument("name", metavar="NAME")
    d.add_argument("--yes", action="store_true", help="do not ask")
    s = ps.add_parser("show", help="where a profile lives and what it runs")
    s.add_argument("name", metavar="NAME", nargs="?")


def _active() -> str:
    return os.environ.get(profiles.PROFILE_VAR) or profiles.DEFAULT


def _model_of(home: Path) -> str:
    from hermes_core.config import ConfigError, load_config

    try:
        cfg = load_config(home / "config.yaml")
    except ConfigError as exc:
        return f"config.yaml unusable: {exc}"
    m = cfg.model
    return f"{m.provider or 'auto'} / {m.default or 'not set'}"


def cmd_list(base: Path, as_json: bool) -> int:
    sticky, active = profiles.sticky(base) or profiles.DEFAULT, _active()
    rows = [{"name": n, "path": str(profiles.folder(base, n)), "active": n == active,
             "default": n == sticky} for n in profiles.names(base)]
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return 0
    for r in rows:
        mark = "*" if r["active"] else " "
        note = " (default)" if r["default"] else ""
        sys.stdout.write(f"{mark} {r['name']:<16} {r['path']}{note}\n")
    return 0


def cmd_show(base: Path, name: str) -> int:
    where = profiles.folder(base, name)
    if not where.is_dir():
        raise profiles.ProfileError(f"profile {name!r} does not exist; `hermes profile list` "
                                    "shows them")
    sessions = where / "state.db"
    lines = [f"profile:  {name}{' (in use)' if name == _active() else ''}",
             f"path:     {where}", f"model:    {_model_of(where)}",
             f"sessions: {'state.db' if sessions.exists() else 'none yet'}",
             f"run it:   hermes -p {name}" if name != profiles.DEFAULT else "run it:   hermes"]
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def _confirm(name: str, where: Path) -> bool:
    if not sys.stdin.isatty():
        raise profiles.ProfileError(f"deleting profile {name!r} removes {where} and everything in "
                                    "it; rerun with --yes")
    answer = input(f"Delete profile {name!r} and everything in {where}? [y/N] ")
    return answer.strip().lower() in ("y", "yes")


def run(args: argparse.Namespace) -> int:
    base = profiles.root()
    action = args.profile_action
    try:
        if action in (None, "list"):
            return cmd_list(base, bool(getattr(args, "json", False)))
        if action == "show":
            return cmd_show(base, args.name or _active())
        if action == "create":
            clone = Path(os.environ["HERMES_HOME"]) if args.clone and \
                os.environ.get("HERMES_HOME") else (base if args.clone else None)
            where = profiles.create(base, args.name, clone)
            sys.stdout.write(f"Created profile {args.name} at {where}; use it with "
                             f"`hermes -p {args.name}` or `hermes profile use {args.name}`.\n")
            return 0
        if action == "use":
            profiles.use(base, args.name)
            sys.stdout.write(f"Commands now use profile {args.name} unless -p or HERMES_PROFILE "
                             "says otherwise.\n")
            return 0
        where = profiles.folder(base, args.name)
        if not args.yes and where.is_dir() and not _confirm(args.name, where):
            sys.stdout.write("Nothing deleted.\n")
            return 1
        profiles.delete(base, args.name)
        sys.stdout.write(f"Deleted profile {args.name} ({where}).\n")
        return 0
    except profiles.ProfileError as exc:
        sys.stderr.write(f"hermes: error: {exc}\n")
        return 2
