"""terminal.backend: docker, one container per session (skipped where no Docker daemon runs)."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from hermes_core.config import parse_config
from tools import backends
from tools.backends.docker import daemon_problem, run_argv
from tools.registry import ToolContext, dispatch

PROBLEM = daemon_problem()


def test_the_container_is_limited_labelled_and_removed_with_its_session():
    argv = run_argv("hermes-s1-abc", "python:3.11-slim", Path("/w"), 1.5, 512, "s1")
    assert argv[:4] == ["docker", "run", "--rm", "-i"]  # --rm: gone when it stops
    assert argv[argv.index("--cpus") + 1] == "1.5" and argv[argv.index("--memory") + 1] == "512m"
    assert "--pids-limit" in argv and "hermes.session=s1" in argv
    assert argv[argv.index("-v") + 1] == "/w:/workspace"
    assert argv[-3:] == ["sh", "-c", "cat > /dev/null"]  # ends when Hermes closes the pipe


@pytest.mark.skipif(PROBLEM is not None, reason=str(PROBLEM))
def test_commands_and_files_run_in_the_sessions_container(tmp_path):
    cfg = parse_config({"terminal": {"backend": "docker", "docker_image": "python:3.11-slim"}})
    ctx = ToolContext(cwd=tmp_path, config=cfg, session_id="docker-test")
    try:
        out = json.loads(dispatch("terminal", {"command": "pwd; test -f /.dockerenv && echo in"},
                                  ctx))
        assert out["output"] == "/workspace\nin\n"
        dispatch("write_file", {"path": "a.txt", "content": "hi\n"}, ctx)
        assert (tmp_path / "a.txt").read_text() == "hi\n"  # the workspace is mounted
        name = backends.backend_for(ctx).container
    finally:
        backends.release("docker-test")
    gone = subprocess.run(["docker", "inspect", name], capture_output=True)
    assert gone.returncode != 0
