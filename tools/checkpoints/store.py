"""A working directory's checkpoints: a shadow git repository under HERMES_HOME.

``HERMES_HOME/checkpoints/<hash of the directory>/`` is a git directory whose work tree is the
user's directory (``GIT_DIR`` + ``GIT_WORK_TREE``), so the user's own ``.git`` is never read or
written (git skips any ``.git`` in a work tree) and ``.gitignore`` files are honoured as in any
repository. Each checkpoint is a commit; unchanged files cost nothing (git stores content once).
Hooks, signing and the user's git config are off for these commands.

A directory with more files than ``max_files`` or more bytes than ``max_bytes`` is not
checkpointed (``TooLarge``): copying a home directory or a dataset at every turn would cost more
than it saves.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

GIT_TIMEOUT = 300
LIST_TIMEOUT = 10.0  # seconds git may take to list what a checkpoint would hold
DEFAULT_EXCLUDES = ("node_modules/", ".venv/", "venv/", "__pycache__/", "*.pyc", ".mypy_cache/",
                    ".pytest_cache/", ".ruff_cache/", ".tox/")
WORKDIR_FILE = "hermes-workdir"  # which directory a shadow repository belongs to


class CheckpointError(Exception):
    """A checkpoint operation failed; the message says what and what to do."""


class TooLarge(CheckpointError):
    """The directory is not checkpointed: over checkpoints.max_files / max_bytes (or it is
    HERMES_HOME itself, whose secrets and repositories must not be copied into itself)."""


@dataclass(frozen=True)
class Checkpoint:
    commit: str
    when: int  # epoch seconds
    message: str

    @property
    def short(self) -> str:
        return self.commit[:8]


def repo_dir(home: Path, workdir: Path) -> Path:
    """Where the shadow repository of ``workdir`` lives (pure)."""
    digest = hashlib.sha256(str(workdir).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return home / "checkpoints" / digest


def exclude_lines(workdir: Path, home: Path) -> list[str]:
    """What a checkpoint leaves out besides .gitignore: caches, and HERMES_HOME (its secrets
    and these very repositories) when it lies inside the working directory (pure)."""
    lines = list(DEFAULT_EXCLUDES)
    if home != workdir and workdir in home.parents:
        lines.append("/" + home.relative_to(workdir).as_posix() + "/")
    return lines


def parse_log(text: str) -> list[Checkpoint]:
    """``git log --format=%H%x1f%ct%x1f%s`` output as checkpoints (pure)."""
    out = []
    for line in text.splitlines():
        parts = line.split("\x1f")
        if len(parts) == 3 and parts[1].isdigit():
            out.append(Checkpoint(parts[0], int(parts[1]), parts[2]))
    return out


class ShadowRepo:
    def __init__(self, home: Path, workdir: Path, max_files: int = 10_000,
                 max_bytes: int = 200_000_000) -> None:
        self.workdir = Path(workdir).resolve()
        self.home = Path(home).resolve()
        self.git_dir = repo_dir(self.home, self.workdir)
        self.max_files, self.max_bytes = max_files, max_bytes

    # -- git plumbing

    def git(self, *args: str, check: bool = True, env: Optional[dict] = None) -> str:
        base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C",
                "GIT_DIR": str(self.git_dir), "GIT_WORK_TREE": str(self.workdir),
                "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
                "GIT_TERMINAL_PROMPT": "0", "GIT_AUTHOR_NAME": "Hermes",
                "GIT_AUTHOR_EMAIL": "hermes@localhost", "GIT_COMMITTER_NAME": "Hermes",
                "GIT_COMMITTER_EMAIL": "hermes@localhost", "HOME": str(self.git_dir)}
        cmd = ["git", "-c", "core.hooksPath=/dev/null", "-c", "commit.gpgsign=false",
               "-c", "core.autocrlf=false", "-c", "core.quotepath=off", "-c", "gc.auto=6700",
               *args]
        try:
            done = subprocess.run(cmd, cwd=str(self.workdir), env={**base, **(env or {})},
                                  capture_output=True, text=True, errors="replace",
                                  timeout=GIT_TIMEOUT)
        except FileNotFoundError:
            raise CheckpointError("checkpoints need git (apt-get install git)") from None
        except subprocess.TimeoutExpired:
            raise CheckpointError(f"git {args[0]} took over {GIT_TIMEOUT} s") from None
        if check and done.returncode != 0:
            last = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
            raise CheckpointError(f"git {args[0]} failed in {self.workdir}: {last}")
        return done.stdout

    def exists(self) -> bool:
        return (self.git_dir / "HEAD").is_file()

    def _init(self) -> None:
        if self.exists():
            return
        from hermes_core.home import ensure_private_dir

        ensure_private_dir(self.git_dir.parent)
        ensure_private_dir(self.git_dir)
        self.git("init", "-q")
        info = self.git_dir / "info"
        info.mkdir(exist_ok=True)
        (info / "exclude").write_text("\n".join(exclude_lines(self.workdir, self.home)) + "\n",
                                      encoding="utf-8")
        (self.git_dir / WORKDIR_FILE).write_text(str(self.workdir), encoding="utf-8")

    # -- size guard

    def check_size(self) -> tuple[int, int]:
        """(files, bytes) that a checkpoint would hold; TooLarge past the limits. Stops reading
        git's list at max_files + 1, so a huge directory costs little to refuse."""
        if self.workdir == self.home:
            raise TooLarge(f"{self.workdir} is HERMES_HOME; it is not checkpointed")
        self._init()
        cmd = ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"]
        env = {**os.environ, "GIT_DIR": str(self.git_dir), "GIT_WORK_TREE": str(self.workdir),
               "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
        files = size = 0
        with subprocess.Popen(cmd, cwd=str(self.workdir), env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL) as proc:
            late = threading.Event()
            timer = threading.Timer(LIST_TIMEOUT, lambda: (late.set(), proc.kill()))
            timer.start()  # a home directory: git would walk all of it
            assert proc.stdout is not None
            tail = b""
            for chunk in iter(lambda: proc.stdout.read(65536), b""):
                names = (tail + chunk).split(b"\0")
                tail = names.pop()
                for name in names:
                    files += 1
                    size += _size(self.workdir, name)
                if files > self.max_files or size > self.max_bytes:
                    proc.kill()
                    break
            timer.cancel()
        if late.is_set() and files <= self.max_files and size <= self.max_bytes:
            raise TooLarge(f"listing {self.workdir} took over {LIST_TIMEOUT:.0f} s; it is not "
                           "checkpointed")
        if files > self.max_files:
            raise TooLarge(f"{self.workdir} has over {self.max_files:,} files "
                           "(checkpoints.max_files); it is not checkpointed")
        if size > self.max_bytes:
            raise TooLarge(f"{self.workdir} holds over {self.max_bytes:,} bytes "
                           "(checkpoints.max_bytes); it is not checkpointed")
        return files, size

    # -- checkpoints

    def snapshot(self, message: str) -> Checkpoint:
        """The working directory as a checkpoint; the latest one when nothing changed."""
        self.check_size()
        self.git("add", "-A", "--ignore-errors", "--", ".", check=False)
        tree = self.git("write-tree").strip()
        head = self.head()
        if head is not None and self.git("rev-parse", f"{head.commit}^{{tree}}").strip() == tree:
            return head
        parent = ["-p", head.commit] if head is not None else []
        commit = self.git("commit-tree", tree, *parent, "-m", message).strip()
        self.git("update-ref", "HEAD", commit)
        self.git("gc", "--auto", "--quiet", check=False)
        return self.head() or Checkpoint(commit, 0, message)

    def head(self) -> Optional[Checkpoint]:
        if not self.exists():
            return None
        found = parse_log(self.git("log", "-n", "1", "--format=%H%x1f%ct%x1f%s", "HEAD",
                                   check=False))
        return found[0] if found else None

    def list(self, limit: int = 50) -> list[Checkpoint]:
        """Newest first."""
        if self.exists() is False or self.head() is None:
            return []
        return parse_log(self.git("log", "-n", str(limit), "--format=%H%x1f%ct%x1f%s", "HEAD"))

    def resolve(self, ref: str) -> Checkpoint:
        """A checkpoint by its number in ``list`` (1 = newest) or a commit prefix."""
        items = self.list(limit=1000)
        if ref.isdigit() and 0 < int(ref) <= len(items) and len(ref) < 4:
            return items[int(ref) - 1]
        hits = [c for c in items if c.commit.startswith(ref.lower())] if len(ref) >= 4 else []
        if len(hits) == 1:
            return hits[0]
        what = "matches several checkpoints" if hits else "names no checkpoint"
        raise CheckpointError(f"{ref!r} {what} of {self.workdir}; list them with "
                              "`hermes checkpoints list` (use the number or the hash)")

    def diff(self, ref: str, max_chars: int = 20_000) -> str:
        """What restoring ``ref`` would change in the working directory now: stat, then patch."""
        target = self.resolve(ref)
        self.check_size()
        self.git("add", "-A", "--ignore-errors", "--", ".", check=False)
        now = self.git("write-tree").strip()
        stat = self.git("diff", "--stat", now, target.commit)
        patch = self.git("diff", now, target.commit)
        if not patch.strip():
            return ""
        if len(patch) > max_chars:
            patch = patch[:max_chars] + f"\n[... diff cut at {max_chars:,} characters ...]\n"
        return f"{stat.rstrip()}\n\n{patch}"

    def restore(self, ref: str, session: str = "") -> tuple[Checkpoint, Checkpoint]:
        """Make the working directory what ``ref`` was. The state before is saved first and the
        restore is itself a checkpoint: (the one saved before, the restore)."""
        target = self.resolve(ref)
        before = self.snapshot(f"before restoring {target.short}{_by(session)}")
        added = self.git("diff", "--cached", "--name-only", "-z", "--diff-filter=A", target.commit)
        for name in filter(None, added.split("\0")):
            _remove(self.workdir, name)
        if self.git("ls-tree", target.commit).strip():  # an empty tree has nothing to check out
            self.git("checkout", target.commit, "--", ".")
        after = self.snapshot(f"restored {target.short} ({target.message}){_by(session)}")
        if after.commit == before.commit:  # nothing differed: record the restore anyway
            tree = self.git("rev-parse", f"{target.commit}^{{tree}}").strip()
            commit = self.git("commit-tree", tree, "-p", before.commit, "-m",
                              f"restored {target.short} ({target.message}){_by(session)}").strip()
            self.git("update-ref", "HEAD", commit)
            after = self.head() or after
        return before, after


def _by(session: str) -> str:
    return f" [session {session}]" if session else ""


def _size(root: Path, name: bytes) -> int:
    try:
        return os.lstat(os.path.join(os.fsencode(root), name)).st_size
    except OSError:
        return 0


def _remove(root: Path, name: str) -> None:
    """Delete a file a restore does not keep, and the directories it leaves empty."""
    path = root / name
    try:
        path.unlink()
    except OSError:
        return
    parent = path.parent
    while parent != root and root in parent.parents:
        try:
            parent.rmdir()
        except OSError:
            break
        parent = parent.parent
