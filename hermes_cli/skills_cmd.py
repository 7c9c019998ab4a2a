"""`hermes skills list|show|install|remove|history|revert`: the skills under HERMES_HOME/skills
(and the read-only skills.external_dirs) from the command line. Plain text on stdout; skills that
do not load are listed on stderr with the reason (`hermes doctor` reports them too)."""
from __future__ import annotations

import json
import sys
import time
from typing import Any, Callable, TextIO

from hermes_cli.agent_factory import CommandError


def _home_and_config() -> tuple[Any, Any]:
    from hermes_core.config import hermes_home, load_config
    from tools.skills.bundled import ensure_installed

    home = hermes_home()
    ensure_installed(home)  # the first use of HERMES_HOME may be this command
    return home, load_config()


def _flags(skill: Any, reason: str = "") -> str:
    marks = [m for m, on in (("bundled", skill.bundled), ("read-only", not skill.writable)) if on]
    if reason:
        marks.append(reason)
    return f" [{', '.join(marks)}]" if marks else ""


def _list(home: Any, cfg: Any, args: Any, out: TextIO) -> int:
    from tools.skills import format as fmt
    from tools.skills import loader

    cat = loader.load(home, cfg)
    rows = [(s, "") for s in cat.skills] + list(cat.skipped)
    if args.category:
        rows = [(s, why) for s, why in rows if s.category == args.category]
    rows.sort(key=lambda r: (r[0].category or "", r[0].name))
    if args.json:  # a JSON array, like every listing's --json; broken folders go to stderr as below
        out.write(json.dumps([{"name": s.name, "category": s.category, "description": s.description,
                               "path": str(s.path), "bundled": s.bundled, "writable": s.writable,
                               "enabled": not why, "reason": why or None} for s, why in rows],
                             indent=2) + "\n")
        for p in cat.problems:
            sys.stderr.write(f"skipped: {p.line()}\n")
        return 0
    if not rows:
        out.write(f"No skills yet. They live in {loader.skills_dir(home)}; the agent writes them "
                  "as it works, or `hermes skills install PATH` adds one.\n")
    width = max([len(s.name) for s, _ in rows] + [4])
    current = None
    for skill, why in rows:
        if skill.category != current or current is None:
            current = skill.category
            out.write(f"{current or '(no category)'}:\n")
        out.write(f"  {skill.name.ljust(width)}  {fmt.one_line(skill.description, 90)}"
                  f"{_flags(skill, why)}\n")
    for p in cat.problems:
        sys.stderr.write(f"skipped: {p.line()}\n")
    return 0


def _show(home: Any, cfg: Any, args: Any, out: TextIO) -> int:
    from tools.skills import loader
    from tools.skills.store import SkillStore

    skill = SkillStore(home, cfg, actor="cli").find(args.name)
    out.write(loader.read_text(skill.skill_md).rstrip("\n") + "\n")
    files = skill.files()
    out.write(f"\n-- {skill.path}" + (f"; files: {', '.join(files)}" if files else "") + "\n")
    return 0


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def _history(home: Any, cfg: Any, args: Any, out: TextIO) -> int:
    from tools.skills import history, loader

    versions = history.versions(loader.skills_dir(home), args.name)
    if args.json:
        out.write(json.dumps([v.to_dict() for v in versions], indent=2) + "\n")
        return 0
    if not versions:
        exists = loader.load(home, cfg).get(args.name) is not None
        if not exists:
            raise CommandError(f"no skill named {args.name!r} and no saved versions of one")
        out.write(f"{args.name} has no saved versions yet (one is kept before every change).\n")
        return 0
    out.write(f"Versions of {args.name} "
              "(each is the state before the change named; newest last):\n")
    for v in versions:
        state = "(did not exist)" if v.absent else v.folder
        out.write(f"  {v.number:>3}  {_when(v.time)}  before {v.action} by {v.by}  {state}\n")
    out.write(f"Restore one with `hermes skills revert {args.name} N` (default: the newest).\n")
    return 0


def _install(home: Any, cfg: Any, args: Any, out: TextIO) -> int:
    from tools.skills.store import SkillStore

    path = SkillStore(home, cfg, actor="cli").install(args.path, category=args.category,
                                                      force=args.force)
    out.write(f"installed {path.name} at {path}\n")
    return 0


def _remove(home: Any, cfg: Any, args: Any, out: TextIO) -> int:
    from hermes_cli.confirm import go_ahead
    from tools.skills.store import SkillStore

    store = SkillStore(home, cfg, actor="cli")
    skill = store.find(args.name)
    question = f"Remove skill {skill.name} ({skill.path})?"
    if not go_ahead(args.yes, f"not removing skill {skill.name}", question, out):
        return 0
    path = store.delete(args.name)
    out.write(f"removed {args.name} ({path}); bring it back with "
              f"`hermes skills revert {args.name}`\n")
    return 0


def _revert(home: Any, cfg: Any, args: Any, out: TextIO) -> int:
    from tools.skills.store import SkillStore

    v = SkillStore(home, cfg, actor="cli").revert(args.name, args.version)
    what = "removed it (it did not exist then)" if v.absent else f"restored it to {v.folder}"
    out.write(f"{args.name}: back to version {v.number} (before its {v.action} on "
              f"{_when(v.time)}); {what}. The replaced state is kept as the newest version.\n")
    return 0


def _in_home(action: Callable[[Any, Any, Any, TextIO], int]) -> Callable[..., int]:
    """A ``hermes skills`` action as an argparse handler: HERMES_HOME's skills and the config
    ready, a store error as one line."""
    def handler(args: Any, out: TextIO = sys.stdout) -> int:
        from tools.skills.store import SkillStoreError

        home, cfg = _home_and_config()
        try:
            return action(home, cfg, args, out)
        except SkillStoreError as exc:
            raise CommandError(str(exc)) from None
    return handler


def add_parser(sub: Any) -> None:
    """`hermes skills ...` subcommands."""
    p = sub.add_parser("skills",
                       help="list, show, install, remove skills; history and revert of changes")
    ss = p.add_subparsers(dest="skills_action", metavar="ACTION")
    pl = ss.add_parser("list", help="the skills by category (broken ones on stderr)")
    pl.add_argument("--json", action="store_true", help="machine-readable output")
    pl.add_argument("--category", help="only this category")
    pl.set_defaults(func=_in_home(_list))
    ps = ss.add_parser("show", help="print a skill's SKILL.md and list its files")
    ps.add_argument("name", metavar="NAME")
    ps.set_defaults(func=_in_home(_show))
    pi = ss.add_parser("install",
                       help="copy a skill folder (with its SKILL.md) into HERMES_HOME/skills")
    pi.add_argument("path", metavar="PATH")
    pi.add_argument("--category", help="the category folder to put it in")
    pi.add_argument("--force", action="store_true", help="replace an installed skill of that name")
    pi.set_defaults(func=_in_home(_install))
    pr = ss.add_parser("remove", help="delete a skill (kept in its history: revert brings it back)")
    pr.add_argument("name", metavar="NAME")
    pr.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    pr.set_defaults(func=_in_home(_remove))
    ph = ss.add_parser("history", help="the saved versions of a skill")
    ph.add_argument("name", metavar="NAME")
    ph.add_argument("--json", action="store_true", help="machine-readable output")
    ph.set_defaults(func=_in_home(_history))
    pv = ss.add_parser("revert", help="restore a saved version (default: undo the last change)")
    pv.add_argument("name", metavar="NAME")
    pv.add_argument("version", metavar="VERSION", type=int, nargs="?")
    pv.set_defaults(func=_in_home(_revert))
    # bare `hermes skills` lists
    p.set_defaults(skills_action=None, json=False, category=None, func=_in_home(_list))
