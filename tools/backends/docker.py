"""The Docker backend: one container per session from ``terminal.docker_image``, the working
directory mounted at /workspace, CPU/memory/pid limits, removed when the session ends.

Driven through the ``docker`` CLI (no SDK: the CLI honours the user's contexts and credentials).
The container's main process reads a pipe this process holds, and it runs with ``--rm``: when
Hermes exits (or dies), the pipe closes, the container stops and Docker removes it.
"""
from __future__ import annotations

import re
import secrets
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any, Optional

from tools.backends.remote import RemoteBackend
from tools.registry import ToolError

WORKSPACE = "/workspace"
START_TIMEOUT = 600  # a first `docker run` may pull the image
PIDS_LIMIT = 1024


def daemon_problem() -> Optional[str]:
    """Why containers cannot run here (no CLI, no daemon), or None."""
    if shutil.which("docker") is None:
        return "the docker CLI is not installed (https://docs.docker.com/engine/install/)"
    try:
        done = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"no Docker daemon: `docker info` failed: {exc}"
    if done.returncode != 0:
        lines = [ln for ln in (done.stderr or done.stdout).strip().splitlines() if ln.strip()]
        return f"no Docker daemon: `docker info` failed: {lines[-1] if lines else done.returncode}"
    return None


def run_argv(name: str, image: str, workspace: Path, cpus: float, memory_mb: int,
             session_id: str) -> list[str]:
    """The ``docker run`` command line of a session's container (pure)."""
    return ["docker", "run", "--rm", "-i", "--name", name,
            "--label", f"hermes.session={session_id}",
            "--cpus", f"{cpus:g}", "--memory", f"{memory_mb}m", "--pids-limit", str(PIDS_LIMIT),
            "-v", f"{workspace}:{WORKSPACE}", "-w", WORKSPACE, image, "sh", "-c", "cat > /dev/null"]


class DockerBackend(RemoteBackend):
    name = "docker"

    def __init__(self, term: Any, workspace: Path, session_id: Optional[str]) -> None:
        super().__init__()
        self.image = term.docker_image
        self.cpus, self.memory = term.container_cpu, term.container_memory
        self.workspace = Path(workspace).resolve()
        self.session_id = str(session_id or "none")
        safe = re.sub(r"[^A-Za-z0-9_.-]", "-", self.session_id)[:40]
        self.container = f"hermes-{safe}-{secrets.token_hex(3)}"
        self._proc: Optional[subprocess.Popen] = None

    def describe(self) -> str:
        return f"container {self.container} ({self.image})"

    def shell_argv(self, script: str) -> list[str]:
        return ["docker", "exec", "-i", self.container, "bash", "-c", script]

    def _initial_cwd(self) -> Optional[str]:
        return WORKSPACE

    def _connect(self) -> None:
        problem = daemon_problem()
        if problem:
            raise ToolError(f"terminal.backend is docker, but {problem}")
        argv = run_argv(self.container, self.image, self.workspace, self.cpus, self.memory,
                        self.session_id)
        self._proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT
        while not self._running():
            if self._proc.poll() is not None:
                raw = self._proc.stderr.read() if self._proc.stderr else b""
                lines = raw.decode(errors="replace").strip().splitlines()
                raise ToolError(f"the container did not start ({self.image}): "
                                f"{lines[-1] if lines else 'no error text'}")
            if time.monotonic() > deadline:
                self._disconnect()
                raise ToolError(f"the container ({self.image}) did not start within "
                                f"{START_TIMEOUT} s")
            time.sleep(0.2)

    def _running(self) -> bool:
        done = subprocess.run(["docker", "inspect", "-f", "{{.State.Running}}", self.container],
                              capture_output=True, text=True, timeout=30)
        return done.returncode == 0 and done.stdout.strip() == "true"

    def _alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _disconnect(self) -> None:
        proc, self._proc = self._proc, None
        subprocess.run(["docker", "rm", "-f", self.container], capture_output=True, timeout=60)
        if proc is not None:
            if proc.stdin is not None:
                proc.stdin.close()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
