"""The OS sandbox (``terminal.sandbox``): each wall proven from inside a real bubblewrap sandbox.

Skipped, with the reason, where bubblewrap cannot build its namespaces (``tools.sandbox.probe``).
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from hermes_core.config import parse_config
from tools import sandbox
from tools.registry import ToolContext, ToolError, dispatch

OK, WHY = sandbox.probe()
needs_bwrap = pytest.mark.skipif(not OK, reason=f"no sandbox here: {WHY}")


def ctx_for(cwd: Path, answers: list[str] | None = None, **terminal) -> ToolContext:
    asked: list[tuple[str, str]] = []

    def cb(command: str, reason: str) -> str:
        asked.append((command, reason))
        return answers.pop(0) if answers else "deny"

    ctx = ToolContext(cwd=cwd, config=parse_config({"terminal": terminal}), session_id="s",
                      approval_callback=cb if answers is not None else None)
    ctx.asked = asked  # type: ignore[attr-defined]
    return ctx


def run(ctx: ToolContext, command: str) -> dict:
    return json.loads(dispatch("terminal", {"command": command}, ctx))


# -- pure decisions ----------------------------------------------------------------------------

def test_mode_unset_is_off_for_the_owner_and_workspace_write_for_confined_agents():
    assert sandbox.effective_mode(None, confined=False, available=True) == "off"
    assert sandbox.effective_mode(None, confined=True, available=True) == "workspace-write"
    assert sandbox.effective_mode(None, confined=True, available=False) == "off"
    assert sandbox.effective_mode("read-only", confined=False, available=False) == "read-only"


def test_mounts_go_shallow_first_so_a_workspace_inside_a_hidden_home_stays_writable(tmp_path):
    home = tmp_path / "home"
    work = home / "workspace"
    work.mkdir(parents=True)
    policy = sandbox.Policy("workspace-write", (work,), (home,), network=False)
    argv = sandbox.wrap(["true"], policy, work)
    assert argv.index(str(home)) < argv.index(str(work))
    assert "--unshare-net" in argv and argv[-2:] == ["--", "true"]
    assert "--unshare-net" not in sandbox.wrap(["true"], policy.__class__(
        "read-only", (), (), network=True), work)


def test_blame_names_the_wall():
    p = sandbox.Policy("workspace-write", (), (), network=False)
    assert "no network" in sandbox.blame("curl: (6) Could not resolve host: x", 6, p)
    assert "only inside the working" in sandbox.blame("touch: Read-only file system", 1, p)
    assert sandbox.blame("Read-only file system", 0, p) is None
    assert sandbox.blame("some other error", 1, p) is None


def test_yaml_off_is_the_off_mode():
    assert parse_config({"terminal": {"sandbox": False}}).terminal.sandbox == "off"


# -- the walls, from inside ---------------------------------------------------------------------

@needs_bwrap
def test_workspace_write_writes_inside_only(tmp_path):
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    ctx = ctx_for(work, sandbox="workspace-write")
    out = run(ctx, f"echo a > inside.txt && echo b > {outside}/x.txt")
    assert (work / "inside.txt").read_text() == "a\n"
    assert out["exit_code"] != 0 and "Read-only file system" in out["output"]
    assert not (outside / "x.txt").exists()
    assert "not approved" in out["sandbox"]  # nobody to ask: the sandboxed result stands


@needs_bwrap
def test_read_only_writes_nowhere(tmp_path):
    out = run(ctx_for(tmp_path, sandbox="read-only"), "touch here.txt")
    assert out["exit_code"] != 0 and not (tmp_path / "here.txt").exists()


@needs_bwrap
def test_hermes_home_and_ssh_keys_are_hidden(tmp_path, monkeypatch, hermes_home):
    fake_home = tmp_path / "user"
    (fake_home / ".ssh").mkdir(parents=True)
    (fake_home / ".ssh" / "id_ed25519").write_text("PRIVATE")
    (fake_home / ".aws").mkdir()
    (fake_home / ".aws" / "credentials").write_text("AKIA")
    (hermes_home / ".env").write_text("OPENAI_API_KEY=sk-secret\n")
    monkeypatch.setenv("HOME", str(fake_home))
    work = tmp_path / "work"
    work.mkdir()
    ctx = ctx_for(work, sandbox="workspace-write")
    ctx.yolo = True  # past the approval the shell asks for these paths: the wall itself holds
    out = run(ctx, f"cat {fake_home}/.ssh/id_ed25519; cat {fake_home}/.aws/credentials; "
              f"cat {hermes_home}/.env; ls -A {fake_home}/.ssh | wc -l")
    assert "PRIVATE" not in out["output"] and "AKIA" not in out["output"]
    assert "sk-secret" not in out["output"]
    assert out["output"].strip().endswith("0")  # the directory is there, empty


class _Listener:
    """A TCP server on this host's loopback: reachable only with the network on."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(5)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.sendall(b"hello")
            conn.close()


@needs_bwrap
def test_no_network_unless_sandbox_network(tmp_path):
    srv = _Listener()
    try:
        probe = (f"{sys.executable} -c \"import socket; s=socket.create_connection(('127.0.0.1', "
                 f"{srv.port}), timeout=5); print(s.recv(5).decode())\"")
        closed = run(ctx_for(tmp_path, sandbox="workspace-write"), probe)
        assert closed["exit_code"] != 0 and "hello" not in closed["output"]
        opened = run(ctx_for(tmp_path, sandbox="workspace-write", sandbox_network=True), probe)
        assert opened["exit_code"] == 0 and "hello" in opened["output"]
    finally:
        srv.sock.close()


@needs_bwrap
def test_a_command_the_sandbox_stopped_runs_unsandboxed_only_when_approved(tmp_path):
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    ctx = ctx_for(work, answers=["once"], sandbox="workspace-write")
    out = run(ctx, f"touch {outside}/made")
    assert (outside / "made").exists() and out["exit_code"] == 0
    assert "the user approved" in out["sandbox"]
    question, reason = ctx.asked[0]  # type: ignore[attr-defined]
    assert "without the sandbox" in question and "only inside the working directory" in reason
    denied = ctx_for(work, answers=["deny"], sandbox="workspace-write")
    assert run(denied, f"touch {outside}/again")["exit_code"] != 0
    assert not (outside / "again").exists()


@needs_bwrap
def test_confined_agents_are_sandboxed_by_default(tmp_path):
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    ctx = ToolContext(cwd=work, config=parse_config({}), confine_to=work)
    out = run(ctx, f"touch {outside}/x")
    assert out["exit_code"] != 0 and not (outside / "x").exists()
    owner = ToolContext(cwd=work, config=parse_config({}))  # the owner at the terminal: off
    assert run(owner, f"touch {outside}/y")["exit_code"] == 0


def test_an_explicit_mode_that_cannot_be_enforced_refuses_to_run(tmp_path):
    """A child whose PATH has bash and python but no bwrap: the sandbox is unavailable there."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("bash", "touch"):
        os.symlink(subprocess.check_output(["which", tool], text=True).strip(), bindir / tool)
    code = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from hermes_core.config import parse_config\n"
        "from tools.registry import ToolContext, ToolError, dispatch\n"
        "ctx = ToolContext(cwd=Path(sys.argv[1]), config=parse_config("
        "{'terminal': {'sandbox': 'workspace-write'}}))\n"
        "try:\n"
        "    dispatch('terminal', {'command': 'touch ran'}, ctx)\n"
        "except ToolError as exc:\n"
        "    print('REFUSED', exc)\n"
    )
    env = {**os.environ, "PATH": str(bindir)}
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=60)
    assert "REFUSED" in done.stdout, done.stderr
    assert "bubblewrap is not installed" in done.stdout and "terminal.sandbox: off" in done.stdout
    assert not (tmp_path / "ran").exists()


def test_probe_reason_is_clear_when_unavailable():
    ok, why = sandbox.probe()
    assert ok or ("bubblewrap" in why or "bwrap" in why)


@pytest.mark.parametrize("mode", ["workspace-write"])
@needs_bwrap
def test_background_processes_and_scripts_run_sandboxed_too(tmp_path, mode):
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    ctx = ctx_for(work, sandbox=mode)
    started = json.loads(dispatch("process", {"action": "start",
                                              "command": f"touch {outside}/bg && echo done"}, ctx))
    waited = json.loads(dispatch("process", {"action": "wait", "id": started["id"]}, ctx))
    assert waited["exit_code"] != 0 and not (outside / "bg").exists()
    script = f"open({str(outside / 'py')!r}, 'w').write('x')"
    out = json.loads(dispatch("execute_code", {"code": script}, ctx))
    assert out["exit_code"] != 0 and "Read-only file system" in out["output"]
    with pytest.raises(ToolError):  # ToolError import is used by the refusal test's child too
        dispatch("process", {"action": "poll", "id": "nope"}, ctx)
