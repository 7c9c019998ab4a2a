"""Server processes never outlive Hermes: not at exit, not on SIGTERM, not even on SIGKILL."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap

import pytest

from tests.cli.conftest import ROOT
from tests.mcp.conftest import SERVER, pid_alive, wait_for

pytestmark = pytest.mark.timeout(120)

# A stand-in for a Hermes process: starts the manager, reports the server's pid and the pid of
# the helper the server spawned, then waits to be killed (or exits by itself with "exit").
HOST = textwrap.dedent(f"""
    import sys, time
    from types import SimpleNamespace
    from tools.mcp.manager import start_servers
    from tools import registry
    start_servers(SimpleNamespace(mcp_servers={{"s": {{"command": sys.executable,
        "args": [{SERVER!r}, "--spawn-child"], "connect_timeout": 30}}}}))
    registry.settle()
    pid = registry.dispatch("mcp__s__pid", {{}}, registry.ToolContext(cwd="."))
    print("PIDS", pid, flush=True)
    if sys.argv[1:] == ["exit"]:
        sys.exit(0)
    time.sleep(600)
""")


def _grandchild(home) -> int:
    log = (home / "logs" / "mcp" / "s.log").read_text()
    return int(re.findall(r"GRANDCHILD (\d+)", log)[-1])


@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM", "exit"])
def test_server_and_its_helpers_die_with_the_host(how, hermes_home):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    host = subprocess.Popen([sys.executable, "-c", HOST, *(["exit"] if how == "exit" else [])], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(ROOT))
    try:
        line = host.stdout.readline()
        assert line.startswith("PIDS"), host.stderr.read() if host.poll() is not None else line
        server = int(line.split()[1])
        helper = _grandchild(hermes_home)
        assert pid_alive(server) and pid_alive(helper)
        if how != "exit":
            host.send_signal(getattr(signal, how))
        host.wait(30)
        wait_for(lambda: not pid_alive(server), 10, f"the server to die after {how}")
        wait_for(lambda: not pid_alive(helper), 10, f"the server's helper to die after {how}")
    finally:
        if host.poll() is None:
            host.kill()
