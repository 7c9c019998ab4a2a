"""The file tools through the session's backend (``terminal.backend``), plus the checkpoint
taken before the first file change of a turn.

Locally the tools run as they are. On a remote backend (ssh, docker) ``read_file``,
``write_file`` and ``patch`` work on a private local mirror of the one file: it is fetched,
the very same tool code runs on it (numbering, paging, binary and key checks, exact-match
patching with its diff), a changed file is sent back, and the mirror's prefix is taken out of
the answer. So a remote file reads and patches exactly like a local one, from one
implementation. ``search_files`` runs ``grep``/``find`` over there instead (a tree is not
fetched): its regex is grep's extended syntax.
"""
from __future__ import annotations

import dataclasses
import posixpath
import shlex
import tempfile
from pathlib import Path
from typing import Any, Callable

from tools.registry import ToolContext, ToolError

Handler = Callable[[dict, ToolContext], str]
WRITERS = ("write_file", "patch")
MAX_REMOTE_BYTES = 10_000_000  # a remote file larger than this is read in part, never patched
SKIP_DIRS = (".git", "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache", ".tox")


def routed(name: str, handler: Handler) -> Handler:
    """``handler`` (a file tool) acting where this session's commands act."""
    def run(args: dict, ctx: ToolContext) -> str:
        from tools.backends import backend_for

        backend = backend_for(ctx)
        if backend.name == "local":
            if name in WRITERS:
                from tools.checkpoints.hook import before_file_change

                before_file_change(ctx, args.get("path"))
            return handler(args, ctx)
        if name == "search_files":
            return _remote_search(args, ctx, backend)
        return _mirrored(name, handler, args, ctx, backend)

    run.__doc__ = handler.__doc__
    return run


def remote_path(path: str, cwd: str, home: str) -> str:
    """An absolute path on the backend for what the model wrote (pure)."""
    if not isinstance(path, str) or not path.strip():
        raise ToolError("'path' is empty")
    if path == "~" or path.startswith("~/"):
        path = home.rstrip("/") + path[1:]
    return posixpath.normpath(path if path.startswith("/") else posixpath.join(cwd, path))


def _guard(name: str, target: str, backend: Any, ctx: ToolContext) -> None:
    """Remote secrets (``~/.ssh`` over there, key files) ask like local ones."""
    from tools.approval import ask
    from tools.path_policy import secret_reason

    reason = secret_reason(Path(target), Path(backend.home()), Path("/nonexistent-hermes-home"))
    if reason and not ask(f"{name} {target} on {backend.describe()}", reason, ctx):
        raise ToolError(f"{name} {target} denied: {reason}; only the user at the terminal can "
                        "allow it. Choose another path or ask the user")


def _mirrored(name: str, handler: Handler, args: dict, ctx: ToolContext, backend: Any) -> str:
    cwd, home = backend.cwd(ctx), backend.home()
    target = remote_path(args.get("path"), cwd, home)
    _guard(name, target, backend, ctx)
    try:
        kind = backend.stat(target)
        if kind is None and name != "write_file":
            raise ToolError(f"file not found on {backend.describe()}: {target}")
        with tempfile.TemporaryDirectory(prefix="hermes-remote-") as tmp:
            root = Path(tmp)
            local = root / target.lstrip("/")
            before = _fetch(name, backend, target, kind, local)
            work = root / cwd.lstrip("/")
            work.mkdir(parents=True, exist_ok=True)
            sub = dataclasses.replace(ctx, cwd=work, confine_to=work if ctx.confine_to else None)
            out = handler({**args, "path": str(local)}, sub)
            if name in WRITERS and local.is_file() and local.read_bytes() != before:
                backend.write_bytes(target, local.read_bytes())
            return out.replace(str(root), "")
    except OSError as exc:
        raise ToolError(str(exc)) from None


def _fetch(name: str, backend: Any, target: str, kind: Any, local: Path) -> bytes | None:
    """Put the remote file (or an empty stand-in for one write_file replaces) in the mirror."""
    if kind == "dir":
        local.mkdir(parents=True)
        return None
    if kind is None:
        return None
    data = b"" if name == "write_file" else backend.read_bytes(target, MAX_REMOTE_BYTES + 1)
    if len(data) > MAX_REMOTE_BYTES:
        if name == "patch":
            raise ToolError(f"{target} is over {MAX_REMOTE_BYTES:,} bytes; patch it with terminal")
        data = data[:MAX_REMOTE_BYTES]
    local.parent.mkdir(parents=True, exist_ok=True)
    local.write_bytes(data)
    return data


def search_script(root: str, args: dict, limit: int) -> str:
    """The grep (content) or find (names) command line of a remote search_files (pure)."""
    pattern, glob = str(args["pattern"]), args.get("glob")
    if (args.get("target") or "content") == "files":
        if not any(c in pattern for c in "*?["):
            pattern = f"*{pattern}*"
        prune = " -o ".join(f"-name {shlex.quote(d)}" for d in SKIP_DIRS)
        return (f"find {shlex.quote(root)} \\( {prune} \\) -prune -o -name {shlex.quote(pattern)}"
                f" -print 2>/dev/null | head -n {limit + 1}")
    flags = "-rnIE" + ("i" if args.get("ignore_case") else "")
    skip = " ".join(f"--exclude-dir={shlex.quote(d)}" for d in SKIP_DIRS)
    include = f" --include={shlex.quote(glob)}" if glob else ""
    return (f"grep {flags} {skip}{include} -e {shlex.quote(pattern)} -- {shlex.quote(root)} "
            f"2>/dev/null | cut -c1-400 | head -n {limit + 1}")


def _remote_search(args: dict, ctx: ToolContext, backend: Any) -> str:
    cwd = backend.cwd(ctx)
    root = remote_path(args.get("path") or ".", cwd, backend.home())
    if ctx.confine_to is not None and not (root == cwd or root.startswith(cwd.rstrip("/") + "/")):
        raise ToolError(f"{root} is outside the working directory {cwd}")
    _guard("search_files", root, backend, ctx)
    limit = max(int(args.get("max_results") or 100), 1)
    result = backend.run(search_script(root, args, limit), ctx, None, None)
    lines = [ln for ln in str(result.get("output") or "").splitlines() if ln.strip()]
    prefix = cwd.rstrip("/") + "/"
    hits = [ln[len(prefix):] if ln.startswith(prefix) else ln for ln in lines]
    what = "files" if args.get("target") == "files" else "matches"
    if not hits:
        return f"no {what} for {args['pattern']!r} in {root} on {backend.describe()}"
    body = "\n".join(hits[:limit])
    if len(hits) > limit:
        body += f"\n[stopped at {limit} {what}; narrow the pattern, path or glob to see the rest]"
    return body
