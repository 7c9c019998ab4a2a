"""`hermes memory show|edit|clear [user|memory]`: the person's view of what the agent remembers.

`edit` opens a copy in $VISUAL/$EDITOR and writes it back under the memory lock only if the file did
not change meanwhile (else the edited copy is kept and named); `clear` asks first unless --yes.
"""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Optional

from tools.memory import format as fmt
from tools.memory import store as store
from hermes_core.config import hermes_home, load_config
from hermes_core.injection import scan


def add_parser(sub: Any) -> None:
    p = sub.add_parser("memory",
                       help="show, edit or clear what the agent remembers (MEMORY.md, USER.md)")
    ms = p.add_subparsers(dest="memory_action", metavar="ACTION")
    for name, text in (("show", "print the entries with their ids and usage"),
                       ("edit", "open the file in $EDITOR "
                                "(entries separated by a line holding only §)"),
                       ("clear", "empty the store(s); asks first unless --yes")):
        a = ms.add_parser(name, help=text)
        a.add_argument("target", nargs="?", choices=("user", "memory"),
                       help="user (USER.md) or memory (MEMORY.md); both when left out"
                       + ("" if name != "edit" else " (edit: memory)"))
        if name == "show":
            a.add_argument("--json", action="store_true", help="machine-readable output")
        if name == "clear":
            a.add_argument("--yes", action="store_true", help="do not ask")
        a.set_defaults(func=_ACTIONS[name])
    p.set_defaults(func=_ACTIONS["show"])  # bare `hermes memory` shows both


def _targets(target: Optional[str]) -> list[str]:
    return [target] if target else ["memory", "user"]


def cmd_show(target: Optional[str], as_json: bool, out=sys.stdout) -> int:
    home, budgets = hermes_home(), store.limits(load_config())
    data: dict[str, dict] = {}
    failed = []
    for t in _targets(target):
        try:
            entries = store.load(home, t)
        except store.MemoryStoreError as exc:
            failed.append(f"{exc}; fix it with `hermes memory edit {t}`")
            continue
        data[t] = {"file": str(store.file_path(home, t)), "used": fmt.usage(entries),
                   "limit": budgets[t],
                   "entries": [{"id": fmt.entry_id(e), "text": e} for e in entries]}
    for line in failed:
        sys.stderr.write(f"hermes: error: {line}\n")
    if as_json:
        out.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
        return 1 if failed else 0
    for n, (t, d) in enumerate(data.items()):
        out.write(("\n" if n else "")
                  + f"{t} — {d['file']} ({d['used']:,}/{d['limit']:,} chars)\n")
        if not d["entries"]:
            out.write("  (empty)\n")
        for e in d["entries"]:
            body = e["text"].replace("\n", "\n         ")
            out.write(f"  [{e['id']}] {body}\n")
    return 1 if failed else 0


def _editor() -> list[str]:
    cmd = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    return shlex.split(cmd)


def cmd_edit(target: Optional[str], out=sys.stdout) -> int:
    from hermes_cli.agent_factory import CommandError

    home, budgets = hermes_home(), store.limits(load_config())
    t = target or "memory"
    path = store.file_path(home, t)
    path.parent.mkdir(parents=True, exist_ok=True)
    before = path.read_bytes() if path.exists() else b""
    fd, tmp_name = tempfile.mkstemp(prefix=f"{path.stem}-", suffix=".md", dir=path.parent)
    tmp = Path(tmp_name)
    with os.fdopen(fd, "wb") as fh:
        fh.write(before)
    try:
        status = subprocess.call([*_editor(), str(tmp)])
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise CommandError(f"cannot start the editor ({exc.strerror}); set $EDITOR") from None
    if status != 0:
        tmp.unlink(missing_ok=True)
        raise CommandError(f"the editor exited with status {status}; {path.name} is unchanged")
    try:
        text = tmp.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise CommandError(f"the edited text is not UTF-8; {path.name} is unchanged, "
                           "your edit is in "
                           f"{tmp}") from None
    trouble = fmt.problem(text)
    if trouble:
        raise CommandError(f"{trouble}; {path.name} is unchanged, your edit is in {tmp}")
    entries = fmt.parse(text)
    with store.locked(home):
        now = path.read_bytes() if path.exists() else b""
        if now != before:
            raise CommandError(f"{path.name} changed while you were editing "
                               "(the agent wrote to it); "
                               f"it is unchanged, your edit is in {tmp}")
        store.write(home, t, entries)
    tmp.unlink(missing_ok=True)
    used = fmt.usage(entries)
    out.write(f"{path.name}: {len(entries)} entries, {used:,}/{budgets[t]:,} chars\n")
    if used > budgets[t]:
        out.write("warning: over the budget; the prompt shows only the first entries that fit\n")
    for e in entries:
        reason = scan(e, strict=True)
        if reason:
            out.write(f"warning: [{fmt.entry_id(e)}] contains {reason}; it is kept in the file but "
                      f"held back from the prompt\n")
    return 0


def _describe(home: Path, target: str) -> Optional[str]:
    """'MEMORY.md (3 entries)', 'MEMORY.md (unreadable)', or None when there is nothing to clear."""
    try:
        n = len(store.load(home, target))
    except store.MemoryStoreError:
        return f"{store.FILES[target]} (unreadable; a copy is kept)"
    return f"{store.FILES[target]} ({n} entr{'y' if n == 1 else 'ies'})" if n else None


def cmd_clear(target: Optional[str], yes: bool, out=sys.stdout) -> int:
    from hermes_cli.agent_factory import CommandError

    home = hermes_home()
    found = {t: d for t in _targets(target) if (d := _describe(home, t))}
    if not found:
        out.write("Nothing to clear.\n")
        return 0
    what = " and ".join(found.values())
    if not yes:
        if not sys.stdin.isatty():
            raise CommandError(f"this would empty {what}; rerun with --yes to confirm")
        answer = input(f"Empty {what}? This cannot be undone. [y/N] ").strip().lower()
        if answer not in ("y", "yes"):
            out.write("Cancelled; nothing changed.\n")
            return 1
    with store.locked(home):
        for t, desc in found.items():
            if "unreadable" in desc:
                out.write(f"Kept a copy of the unreadable {store.FILES[t]} at "
                          f"{store.backup(store.file_path(home, t))}\n")
            store.write(home, t, [])
    out.write(f"Cleared {what}.\n")
    return 0


def _store_errors(action: Callable[[Any], int]) -> Callable[[Any], int]:
    """A ``hermes memory`` action as an argparse handler: a broken store is one line."""
    def handler(args: Any) -> int:
        from hermes_cli.agent_factory import CommandError

        try:
            return action(args)
        except store.MemoryStoreError as exc:
            raise CommandError(str(exc)) from None
    return handler


_ACTIONS = {
    "show": _store_errors(lambda a: cmd_show(getattr(a, "target", None),
                                             bool(getattr(a, "json", False)))),
    "edit": _store_errors(lambda a: cmd_edit(a.target)),
    "clear": _store_errors(lambda a: cmd_clear(a.target, bool(a.yes))),
}
