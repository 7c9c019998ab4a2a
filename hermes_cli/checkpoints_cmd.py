"""`hermes checkpoints list|diff|restore`, and the REPL's `/rollback` and `/ps` (issue 27).

Checkpoints are the working directory's snapshots taken before the agent's first change of each
turn (``tools.checkpoints``). A restore always shows what it would change first and asks (the
CLI: ``--yes`` skips the question; without a terminal it is required); the state before the
restore is saved, and the restore itself is a checkpoint, so a restore can be undone.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional

Confirm = Callable[[str, str], bool]


def add_parser(sub: Any) -> None:
    p = sub.add_parser("checkpoints", help="list, diff or restore the working directory's "
                                           "checkpoints (taken before the agent changes files)")
    cs = p.add_subparsers(dest="checkpoints_action", metavar="ACTION")
    for name, helptext in (("list", "the checkpoints, newest first"),
                           ("diff", "what restoring a checkpoint would change"),
                           ("restore", "make the directory what a checkpoint was")):
        a = cs.add_parser(name, help=helptext)
        if name != "list":
            a.add_argument("checkpoint", metavar="N|HASH", help="number from `list`, or a hash")
        a.add_argument("--dir", metavar="DIR", help="working directory (default: the current)")
        if name == "restore":
            a.add_argument("--yes", action="store_true", help="restore without asking")
        a.set_defaults(func=_in_repo(_list if name == "list" else _diff_or_restore))
    p.set_defaults(func=_in_repo(_list))  # bare `hermes checkpoints` lists


def repo(workdir: Path, cfg: Any = None) -> Any:
    from tools.checkpoints.hook import repo_for

    return repo_for(Path(workdir).resolve(), cfg)


def list_lines(items: list, workdir: Path) -> list[str]:
    """One line per checkpoint, numbered newest first (pure)."""
    if not items:
        return [f"No checkpoints of {workdir} yet: one is taken before the agent's first change "
                "of each turn."]
    lines = [f"Checkpoints of {workdir} (newest first):"]
    for n, c in enumerate(items, start=1):
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(c.when))
        lines.append(f"  {n:>3}  {c.short}  {when}  {c.message}")
    return lines


def rollback(workdir: Path, cfg: Any, arg: str, show: Callable[[str], None],
             confirm: Confirm) -> None:
    """`/rollback` lists; `/rollback N` shows what restoring N would change, asks, restores."""
    from tools.checkpoints.store import CheckpointError

    shadow = repo(workdir, cfg)
    try:
        if not arg.strip():
            lines = list_lines(shadow.list(), shadow.workdir)
            if len(lines) > 1:
                lines.append("/rollback N shows what restoring N would change, then asks.")
            for line in lines:
                show(line)
            return
        target = shadow.resolve(arg.strip())
        preview = shadow.diff(target.commit)
        if not preview:
            show(f"Nothing to restore: {shadow.workdir} already matches {target.short}.")
            return
        for line in preview.splitlines():
            show(line)
        if not confirm(f"restore checkpoint {target.short} ({target.message}) in "
                       f"{shadow.workdir}", "it rewrites the files in the diff above"):
            show("Not restored.")
            return
        before, _ = shadow.restore(target.commit)
        show(f"Restored {target.short}. The state before it is checkpoint {before.short}: "
             f"`/rollback {before.short}` undoes this.")
    except CheckpointError as exc:
        show(f"error: {exc}")


def ps_lines(session_id: Optional[str]) -> list[str]:
    """`/ps`: this session's background processes (pure apart from reading the manager)."""
    from tools.process.manager import MANAGER

    procs = MANAGER.list(str(session_id or "none"))
    if not procs:
        return ["No background processes in this session (terminal background=true or the "
                "process tool starts them)."]
    lines = ["Background processes of this session:"]
    for v in (p.view() for p in procs):
        state = "running" if v["status"] == "running" else f"exited {v['exit_code']}"
        lines.append(f"  {v['id']:<5} pid {v['pid']:<7} {state:<10} {v['seconds']:>7.1f}s  "
                     f"{v['output_bytes']:>8,} B  {v['command']}")
    lines.append(f"Output files: {procs[0].log.parent}")
    return lines


def _workdir(args: argparse.Namespace, cfg: Any) -> Path:
    raw = getattr(args, "dir", None) or getattr(cfg.terminal, "cwd", None) or os.getcwd()
    path = Path(raw).expanduser()
    if not path.is_dir():
        raise ValueError(f"{path} is not a directory; pass --dir DIR")
    return path


def _in_repo(action: Callable[[argparse.Namespace, Any], int]
             ) -> Callable[[argparse.Namespace], int]:
    """A ``hermes checkpoints`` action as an argparse handler: the working directory's shadow
    repository ready, a checkpoint error as one line."""
    def handler(args: argparse.Namespace) -> int:
        from hermes_core.config import load_config
        from tools.checkpoints.store import CheckpointError

        cfg = load_config()
        shadow = repo(_workdir(args, cfg), cfg)
        try:
            return action(args, shadow)
        except CheckpointError as exc:
            raise ValueError(str(exc)) from None
    return handler


def _list(args: argparse.Namespace, shadow: Any) -> int:
    print("\n".join(list_lines(shadow.list(), shadow.workdir)))
    return 0


def _diff_or_restore(args: argparse.Namespace, shadow: Any) -> int:
    target = shadow.resolve(args.checkpoint)
    preview = shadow.diff(target.commit)
    if args.checkpoints_action == "diff" or not preview:
        print(preview or f"Nothing to restore: {shadow.workdir} already matches {target.short}.")
        return 0
    print(preview, end="" if preview.endswith("\n") else "\n")
    if not args.yes and not _ask_yes(f"Restore {target.short} in {shadow.workdir}? [y/N] "):
        print("Not restored.")
        return 1
    before, _ = shadow.restore(target.commit)
    print(f"Restored {target.short}. The state before it is checkpoint {before.short}: "
          f"`hermes checkpoints restore {before.short}` undoes this.")
    return 0


def _ask_yes(question: str) -> bool:
    if not sys.stdin.isatty():
        raise ValueError("restore asks before it rewrites files; add --yes to restore "
                         "without a terminal")
    return input(question).strip().lower() in ("y", "yes")
