"""Helpers for driving the real `hermes` command: subprocesses and a pseudo-terminal (pexpect)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Optional

import pytest

ROOT = Path(__file__).resolve().parents[2]
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]|\r")


def strip_ansi(text: str) -> str:
    return ANSI.sub("", text)


def hermes_env(fp=None, **extra: str) -> dict[str, str]:
    """The test's environment (HERMES_HOME from the autouse fixture) pointed at the fake provider."""
    env = os.environ.copy()
    if fp is not None:
        env["OPENAI_BASE_URL"] = fp.base_url
        env["OPENAI_API_KEY"] = "test"
    env.update({"TERM": "xterm", "NO_COLOR": "1", "PROMPT_TOOLKIT_NO_CPR": "1", "COLUMNS": "120",
                "PYTHONPATH": str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")})
    env.update(extra)
    return env


def run_hermes(*args: str, env: dict[str, str], input: Optional[str] = None,  # noqa: A002
               timeout: float = 90, cwd: Optional[Path] = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hermes_cli.main", *args], env=env, input=input or "",
                          capture_output=True, text=True, timeout=timeout, cwd=str(cwd or ROOT))


@pytest.fixture
def hermes(fake_provider):
    """run_hermes bound to the fake provider: hermes("-z", "hi")."""
    env = hermes_env(fake_provider)

    def run(*args: str, **kw) -> subprocess.CompletedProcess:
        return run_hermes(*args, env=kw.pop("env", env), **kw)

    run.env = env  # type: ignore[attr-defined]
    return run
