"""Where the file tools may reach, and what needs the user's approval first.

Paths resolve against ctx.cwd. Paths outside it are allowed (the user may ask for them), but the
result always says so, so neither the model nor the user is surprised; a gateway session
(`ctx.confine_to`) refuses them. Secrets and key files need the user's approval to be read or
written (`tools.path_policy`).
"""
from __future__ import annotations

import os
from pathlib import Path

from tools.context import ToolContext, ToolError
from tools.path_policy import (KEY_SNIFF_BYTES, is_private_key, outside_root, secret_reason,
                               system_write_reason)

BINARY_SNIFF_BYTES = 8192


def resolve_path(ctx: ToolContext, path: str) -> tuple[Path, str]:
    """Absolute path for `path`, plus a note ("" when inside the working directory).

    With ``ctx.confine_to`` set (gateway sessions), a path outside it is a ToolError instead.
    """
    if not isinstance(path, str) or not path.strip():
        raise ToolError("'path' is empty")
    p = Path(path).expanduser()
    base = Path(ctx.cwd).resolve()
    full = (p if p.is_absolute() else base / p).resolve()
    if ctx.confine_to is not None:
        root = Path(ctx.confine_to).resolve()
        if outside_root(full, root):
            raise ToolError(f"{full} is outside the working directory {root}; file tools in this "
                            "session only reach files inside it")
    if full == base or base in full.parents:
        return full, ""
    return full, f"(note: {full} is outside the working directory {base})"


def head(full: Path) -> bytes:
    try:
        with open(full, "rb") as fh:
            return fh.read(max(BINARY_SNIFF_BYTES, KEY_SNIFF_BYTES))
    except OSError:
        return b""


def protected_reason(full: Path, content: str | None = None) -> str | None:
    """Why `full` (resolved) or the text about to be written into it holds secrets, or None."""
    from hermes_core.config import hermes_home

    reason = secret_reason(full, Path.home().resolve(), hermes_home().resolve())
    if reason is None and full.is_file() and is_private_key(head(full)):
        reason = f"{full.name} holds a private key"
    if (reason is None and content is not None
            and is_private_key(content[:KEY_SNIFF_BYTES].encode())):
        reason = "the content is a private key"
    return reason


def guard(tool: str, full: Path, ctx: ToolContext, write: bool, content: str | None = None) -> None:
    """Secrets (read or write) and system areas (write) need the user's approval; where no one
    can be asked (the gateway, a one-shot run without a terminal) they are refused."""
    reason = protected_reason(full, content)
    if reason is None and write:
        reason = system_write_reason(full, Path.home().resolve())
    if reason is None:
        return
    from tools.approval import ask

    if not ask(f"{tool} {full}", reason, ctx):
        raise ToolError(f"{tool} {full} denied: {reason}; only the user at the terminal can allow "
                        "it. Choose another path or ask the user")


def display(ctx: ToolContext, full: Path) -> str:
    try:
        return str(full.relative_to(Path(ctx.cwd).resolve()))
    except ValueError:
        return str(full)


def with_note(text: str, note: str) -> str:
    return f"{note}\n{text}" if note else text


def missing_hint(full: Path) -> str:
    import difflib

    parent = full.parent
    if not parent.is_dir():
        ancestor = parent
        while not ancestor.is_dir() and ancestor != ancestor.parent:
            ancestor = ancestor.parent
        return (f"file not found: {full} (directory {parent} does not exist either; "
                f"nearest existing: {ancestor})")
    try:
        names = os.listdir(parent)
    except OSError:
        names = []
    close = difflib.get_close_matches(full.name, names, n=5, cutoff=0.5)
    hint = f"; similar names in {parent}: {', '.join(close)}" if close else ""
    return f"file not found: {full}{hint}"


def is_binary(full: Path) -> bool:
    with open(full, "rb") as fh:
        return b"\x00" in fh.read(BINARY_SNIFF_BYTES)
