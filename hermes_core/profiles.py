"""Profiles (issue 25): separate agents under one install, Hermes' layout and names.

A profile NAME lives in ``<root>/profiles/NAME/`` (its own config.yaml, .env, memories, skills,
sessions, gateway); ``default`` is the root itself (``HERMES_HOME`` or ``~/.hermes``). Which one a
command uses: ``hermes -p NAME`` > ``HERMES_PROFILE`` > the sticky default ``hermes profile use``
wrote to ``<root>/active_profile`` > the root. ``apply`` points ``HERMES_HOME`` at it before
anything reads the home, so every module and every subprocess (the gateway, cron jobs, subagents)
sees the profile without knowing about profiles; ``HERMES_PROFILE_ROOT`` keeps the root, so a
command run inside a profile still finds the others.

Name checks, the argv scan and the choice are pure; the rest touches only the profile folders.
"""
from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping, MutableMapping
from pathlib import Path
from typing import Optional

DEFAULT = "default"
STICKY_FILE = "active_profile"
ROOT_VAR, PROFILE_VAR = "HERMES_PROFILE_ROOT", "HERMES_PROFILE"
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
# top-level flags of `hermes` that take a value: their value is never a profile flag
_VALUED = {"-q", "--query", "-m", "--model", "--provider", "--base-url", "--api-key", "-t",
           "--toolsets", "-r", "--resume", "--max-turns", "--image", "-z"}
CLONED = ("config.yaml", ".env", "SOUL.md")


class ProfileError(Exception):
    """A profile that cannot be used, made or removed; the message says what to do."""


def check_name(name: str) -> str:
    name = (name or "").strip()
    if not _NAME.match(name):
        raise ProfileError(f"invalid profile name {name!r}: use lower-case letters, digits, "
                           "- and _ (at most 64, starting with a letter or digit)")
    return name


def take_flag(argv: list[str]) -> tuple[Optional[str], list[str]]:
    """``-p NAME`` / ``--profile NAME`` / ``--profile=NAME`` among the options before the command
    (``hermes -p work chat``), and argv without it. Later ``-p`` belong to subcommands."""
    out, i, found = [], 0, None
    while i < len(argv):
        tok = argv[i]
        if tok in ("-p", "--profile"):
            if i + 1 >= len(argv):
                raise ProfileError(f"{tok} needs a profile name")
            found, i = argv[i + 1], i + 2
            continue
        if tok.startswith("--profile="):
            found, i = tok.partition("=")[2], i + 1
            continue
        if tok.startswith("-p") and len(tok) > 2 and not tok.startswith("--"):
            found, i = tok[2:], i + 1
            continue
        if not tok.startswith("-") or tok == "--":
            return found, out + argv[i:]  # the command: the rest is its own
        out.append(tok)
        if tok in _VALUED and i + 1 < len(argv):
            out.append(argv[i + 1])
            i += 1
        i += 1
    return found, out


def root(env: Mapping[str, str] = os.environ) -> Path:
    """The install's root home (where ``profiles/`` is), whichever profile is active."""
    raw = env.get(ROOT_VAR) or env.get("HERMES_HOME") or str(Path.home() / ".hermes")
    return Path(raw).expanduser()


def folder(base: Path, name: str) -> Path:
    return base if name == DEFAULT else base / "profiles" / check_name(name)


def sticky(base: Path) -> Optional[str]:
    """The default ``hermes profile use`` set (None: the root)."""
    try:
        name = (base / STICKY_FILE).read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return name if name and name != DEFAULT and _NAME.match(name) else None


def choose(flag: Optional[str], env: Mapping[str, str], base: Path) -> str:
    """The profile of this command: flag > HERMES_PROFILE > sticky default > ``default``."""
    return flag or env.get(PROFILE_VAR) or sticky(base) or DEFAULT


def names(base: Path) -> list[str]:
    """``default`` and every profile folder, sorted."""
    found = sorted(p.name for p in (base / "profiles").glob("*")
                   if p.is_dir() and _NAME.match(p.name))
    return [DEFAULT, *found]


def apply(flag: Optional[str], env: MutableMapping[str, str] = os.environ) -> str:
    """Point ``HERMES_HOME`` at the chosen profile (it must exist); returns its name."""
    base = root(env)
    name = choose(flag, env, base)
    if name == DEFAULT and not flag and not env.get(PROFILE_VAR):
        return DEFAULT  # nothing asked for: HERMES_HOME stays exactly as it was
    where = folder(base, check_name(name) if name != DEFAULT else name)
    if name != DEFAULT and not where.is_dir():
        raise ProfileError(f"profile {name!r} does not exist; create it with "
                           f"`hermes profile create {name}` (`hermes profile list` shows them)")
    env[ROOT_VAR], env["HERMES_HOME"], env[PROFILE_VAR] = str(base), str(where), name
    return name


def create(base: Path, name: str, clone_from: Optional[Path] = None) -> Path:
    """A new profile folder (0700); ``clone_from`` copies that home's config.yaml, .env, SOUL.md."""
    from hermes_core.home import ensure_private_dir, tighten

    name = check_name(name)
    if name == DEFAULT:
        raise ProfileError("`default` is the root home itself; pick another name")
    where = folder(base, name)
    if where.exists():
        raise ProfileError(f"profile {name!r} exists already ({where})")
    ensure_private_dir(where)
    for file in CLONED if clone_from is not None else ():
        if (clone_from / file).is_file():
            shutil.copy2(clone_from / file, where / file)
            tighten(where / file)
    return where


def use(base: Path, name: str) -> None:
    """Make ``name`` the default of later commands (``default``: the root again)."""
    from hermes_core.files import atomic_write
    from hermes_core.home import ensure_private_dir

    if name != DEFAULT and not folder(base, name).is_dir():
        raise ProfileError(f"profile {name!r} does not exist; `hermes profile list` shows them")
    ensure_private_dir(base)
    atomic_write(base / STICKY_FILE, name + "\n")


def delete(base: Path, name: str) -> Path:
    """Remove a profile and everything in it; the sticky default falls back to the root."""
    if name == DEFAULT:
        raise ProfileError("the default profile is the root home; it cannot be deleted")
    where = folder(base, name)
    if not where.is_dir():
        raise ProfileError(f"profile {name!r} does not exist; `hermes profile list` shows them")
    shutil.rmtree(where)
    if sticky(base) == name:
        (base / STICKY_FILE).unlink(missing_ok=True)
    return where
