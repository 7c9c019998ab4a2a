"""The OS sandbox for local commands (``terminal.sandbox``): bubblewrap, kernel-enforced walls.

``workspace-write``: the working directory writable, the rest of the filesystem read-only (/tmp
included), plus a private scratch directory per session (``TMPDIR``, kept between commands);
``read-only``: nothing writable at all. Both hide HERMES_HOME (transcripts,
keys) and the home directory's credential stores (``tools.path_policy`` decides what is secret:
``~/.ssh`` and friends), and cut the network unless ``terminal.sandbox_network: true``.

Unset, the sandbox is off for the owner's own agents and ``workspace-write`` for confined ones
(the gateway's chat users) when bubblewrap works here. A mode that was asked for but cannot be
enforced refuses to run the command: nothing ever runs silently unsandboxed. A command that
fails on a wall can ask the user to run it again without the sandbox (``blame`` says which wall).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

MODES = ("workspace-write", "read-only", "off")
# credential stores beside what tools.path_policy already calls secret (~/.ssh, key files)
CREDENTIAL_PATHS = (".gnupg", ".aws", ".azure", ".config/gcloud", ".kube", ".docker", ".netrc",
                    ".git-credentials", ".pgpass", ".pypirc", ".npmrc", ".password-store")
INSTALL_HINT = "apt-get install bubblewrap"
_NO_NETWORK = re.compile(r"Network is unreachable|Could not resolve host|Temporary failure in name "
                         r"resolution|Name or service not known|nodename nor servname|getaddrinfo")
_READ_ONLY = re.compile(r"Read-only file system")


class SandboxUnavailable(Exception):
    """A sandbox mode was asked for and cannot be enforced here; the message says why and what
    to do."""


@dataclass(frozen=True)
class Policy:
    mode: str  # "workspace-write" or "read-only"
    writable: tuple[Path, ...]
    hidden: tuple[Path, ...]
    network: bool
    scratch: Optional[Path] = None  # TMPDIR inside (workspace-write)


def effective_mode(configured: Optional[str], confined: bool, available: bool) -> str:
    """The mode a command runs under: the configured one; unset, workspace-write for a confined
    agent where bubblewrap works, else off (pure)."""
    if configured:
        return configured
    return "workspace-write" if confined and available else "off"


def wrap(argv: list[str], policy: Policy, cwd: Path, bwrap: str = "bwrap") -> list[str]:
    """``argv`` as a bubblewrap command line (pure). Mounts apply shallow paths first, so a
    writable working dir inside a hidden HERMES_HOME (the gateway's workspace) stays reachable."""
    ops: list[tuple[int, int, list[str]]] = []
    for path in policy.hidden:
        hide = ["--tmpfs", str(path)] if path.is_dir() else ["--ro-bind", "/dev/null", str(path)]
        ops.append((len(path.parts), 0, hide))
    if policy.mode == "workspace-write":
        writable = policy.writable + ((policy.scratch,) if policy.scratch else ())
        ops += [(len(p.parts), 1, ["--bind", str(p), str(p)]) for p in writable]
    ops.sort(key=lambda op: (op[0], op[1]))
    cmd = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for _, _, op in ops:
        cmd += op
    if policy.mode == "workspace-write" and policy.scratch:
        cmd += ["--setenv", "TMPDIR", str(policy.scratch)]
    cmd += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            "--die-with-parent", "--chdir", str(cwd)]
    if not policy.network:
        cmd.append("--unshare-net")
    return cmd + ["--", *argv]


def blame(output: str, exit_code: Optional[int], policy: Policy) -> Optional[str]:
    """Which wall a failed command probably hit, or None (pure; a heuristic on its output)."""
    if exit_code in (0, None):
        return None
    if not policy.network and _NO_NETWORK.search(output):
        return "the sandbox has no network (terminal.sandbox_network is false)"
    if _READ_ONLY.search(output):
        if policy.mode == "read-only":
            return "the sandbox is read-only (terminal.sandbox: read-only)"
        return "the sandbox allows writes only inside the working directory"
    return None


def hidden_paths(home: Path, hermes_home: Path) -> list[Path]:
    """What a sandboxed command must not see: HERMES_HOME, the home directory's entries that
    ``tools.path_policy`` calls secret, and the known credential stores that exist."""
    from tools.path_policy import secret_reason

    found = [hermes_home]
    try:
        entries = list(home.iterdir())
    except OSError:
        entries = []
    found += [e for e in entries if secret_reason(e, home, hermes_home) is not None]
    found += [home / rel for rel in CREDENTIAL_PATHS if (home / rel).exists()]
    unique: list[Path] = []
    for p in found:
        p = p.resolve() if p.exists() else p
        if p.exists() and p not in unique:
            unique.append(p)
    return unique


_probe: dict[str, tuple[bool, str]] = {}
_probe_lock = threading.Lock()


def probe() -> tuple[bool, str]:
    """Can bubblewrap build its namespaces on this machine? (ok, why not); asked once per process
    with the flags ``wrap`` uses, because containers often forbid them."""
    with _probe_lock:
        if "bwrap" not in _probe:
            _probe["bwrap"] = _run_probe()
        return _probe["bwrap"]


def _run_probe() -> tuple[bool, str]:
    exe = shutil.which("bwrap")
    if exe is None:
        return False, f"bubblewrap is not installed ({INSTALL_HINT})"
    policy = Policy("read-only", (), (), network=False)
    try:
        proc = subprocess.run(wrap(["true"], policy, Path("/"), exe), capture_output=True,
                              text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"bwrap could not start: {exc}"
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no error text"])[-1]
        return False, f"bwrap cannot create namespaces here: {last}"
    return True, ""


def policy_for(ctx: Any) -> Optional[Policy]:
    """The sandbox a local command of this tool context runs under (None: unsandboxed).
    Raises SandboxUnavailable when the configured mode cannot be enforced."""
    term = getattr(getattr(ctx, "config", None), "terminal", None)
    configured = getattr(term, "sandbox", None)
    if configured == "off":
        return None
    confined = getattr(ctx, "confine_to", None) is not None
    ok, why = probe() if (configured or confined) else (False, "")
    mode = effective_mode(configured, confined, ok)
    if mode == "off":
        return None
    if not ok:
        raise SandboxUnavailable(
            f"terminal.sandbox is {mode}, but the sandbox cannot run here: {why}. Nothing was run. "
            f"Fix it ({INSTALL_HINT}) or set terminal.sandbox: off to run commands unsandboxed")
    from hermes_core.config import hermes_home

    writable = (Path(ctx.cwd).resolve(),) if mode == "workspace-write" else ()
    hidden = tuple(hidden_paths(Path.home(), hermes_home().resolve()))
    scratch = scratch_dir(getattr(ctx, "session_id", None)) if writable else None
    return Policy(mode, writable, hidden, bool(getattr(term, "sandbox_network", False)), scratch)


_scratch_made: list[Path] = []


def scratch_dir(session: Optional[str]) -> Path:
    """The session's private temporary directory for sandboxed commands (removed at exit)."""
    import hashlib
    import tempfile

    tag = hashlib.sha256(str(session or "none").encode()).hexdigest()[:12]
    path = Path(tempfile.gettempdir()) / f"hermes-sandbox-{os.getuid()}-{tag}"
    if not path.is_dir():
        path.mkdir(mode=0o700, exist_ok=True)
        if not _scratch_made:
            import atexit

            atexit.register(lambda: [shutil.rmtree(p, ignore_errors=True) for p in _scratch_made])
        _scratch_made.append(path)
    return path.resolve()


def wrap_for(argv: list[str], ctx: Any, cwd: Path) -> tuple[list[str], Optional[Policy]]:
    """``argv`` as it must run for this context: (command line, the policy or None)."""
    policy = policy_for(ctx)
    if policy is None:
        return argv, None
    return wrap(argv, policy, cwd, shutil.which("bwrap") or "bwrap"), policy


def environment_note(policy: Optional[Policy]) -> str:
    """One line for results of sandboxed commands, so the model knows why a write failed."""
    if policy is None:
        return ""
    net = "network on" if policy.network else "no network"
    return f"sandbox {policy.mode}, {net}"


__all__ = ["MODES", "Policy", "SandboxUnavailable", "blame", "effective_mode", "environment_note",
           "hidden_paths", "policy_for", "probe", "scratch_dir", "wrap", "wrap_for"]

if os.name != "posix":  # pragma: no cover - bubblewrap is Linux only
    _probe["bwrap"] = (False, "the sandbox needs Linux (bubblewrap)")
