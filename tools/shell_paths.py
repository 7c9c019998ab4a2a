"""Which protected files a shell command names, so the terminal asks before it reads them the way
the file tools do (``tools.path_policy``: HERMES_HOME secrets, ``~/.ssh``, private keys).

Heuristic by design, like the dangerous-command patterns: every word of every simple command
(``$(…)`` and ``bash -c`` bodies included) is expanded (``~``, ``$HOME``, ``$HERMES_HOME``, any
``$VAR``; globs) and resolved against the working directory and the directories the command
``cd``s to. A missed spelling still meets the second line of defence: private key blocks and URL
passwords are masked in every tool result (``agent.redact``).
"""
from __future__ import annotations

import glob
import os
from pathlib import Path
from typing import Iterator

MAX_WORDS = 200  # words looked at per command (a generated one-liner can be huge)
MAX_GLOB = 50  # paths one glob may add


def _expand(word: str, home: str = "") -> list[str]:
    """The paths a word may stand for: ``$HERMES_HOME`` (``home``), other variables and ``~``
    expanded, globs listed."""
    if home:
        word = word.replace("${HERMES_HOME}", home).replace("$HERMES_HOME", home)
    text = os.path.expandvars(os.path.expanduser(word))
    if any(c in text for c in "*?["):
        found = glob.glob(text)[:MAX_GLOB]
        return found or [text]
    return [text]


def _words(argvs: list[list[str]]) -> Iterator[str]:
    for argv in argvs:
        for word in argv[1:]:
            if "=" in word:  # --file=~/.ssh/key, if=/path
                word = word.rsplit("=", 1)[1]
            if word and not word.startswith("-"):
                yield word


def _bases(argvs: list[list[str]], cwd: Path) -> list[Path]:
    """The working directory and every directory the command changes to (``cd`` alone: home)."""
    bases = [cwd]
    for argv in argvs:
        if os.path.basename(argv[0]) in ("cd", "pushd"):
            target = argv[1] if len(argv) > 1 else "~"
            bases += [cwd / p for p in _expand(target)]
    return bases


def protected_paths_reason(command: str, cwd: Path) -> str | None:
    """Why running ``command`` would touch protected files (each distinct reason), or None."""
    from hermes_core.config import hermes_home
    from tools.approval import simple_commands
    from tools.file_access import protected_reason

    cwd = Path(cwd)
    argvs = simple_commands(command)
    bases = _bases(argvs, cwd)
    reasons: list[str] = []
    home = str(hermes_home())
    for n, word in enumerate(_words(argvs)):
        if n >= MAX_WORDS:
            break
        for text in _expand(word, home):
            for base in bases if not os.path.isabs(text) else [cwd]:
                try:
                    reason = protected_reason((base / text).resolve())
                except (OSError, ValueError, RuntimeError):
                    continue
                if reason and reason not in reasons:
                    reasons.append(reason)
    return "; ".join(reasons) if reasons else None
