"""Destructive commands ask first; `--yes` answers for them (and is the only way through where
nobody can answer, i.e. without a terminal). One rule for `sessions delete|prune`, `skills remove`,
`cron remove`, so a script learns it once."""
from __future__ import annotations

import sys
from typing import TextIO


def confirm(question: str, out: TextIO) -> bool:
    """y/N on the terminal; anything but yes (end of input included) is no."""
    out.write(f"{question} [y/N] ")
    out.flush()
    try:
        return sys.stdin.readline().strip().lower() in ("y", "yes")
    except (EOFError, OSError):
        return False


def check_can_ask(yes: bool, what: str) -> None:
    """Raise CommandError(``what``: …) when there is no terminal to ask on and no --yes."""
    if not yes and not sys.stdin.isatty():
        from hermes_cli.agent_factory import CommandError

        raise CommandError(f"{what}: no terminal to confirm on; pass --yes to go ahead")


def go_ahead(yes: bool, what: str, question: str, out: TextIO) -> bool:
    """--yes, or a yes on the terminal; False (after saying so) when the user declined."""
    check_can_ask(yes, what)
    if yes or confirm(question, out):
        return True
    out.write("Nothing was changed.\n")
    return False
