"""terminal.backend: ssh against a real OpenSSH server on a loopback port (tests/exec/ssh_server).
"""
from __future__ import annotations

import json
import os

import pytest

from hermes_core.config import parse_config
from tests.exec import ssh_server
from tests.waiting import wait_until
from tools import backends
from tools.registry import ToolContext, ToolError, dispatch

pytestmark = pytest.mark.skipif(ssh_server.missing() is not None,
                                reason=str(ssh_server.missing()))


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    server = ssh_server.SSHServer(tmp_path_factory.mktemp("sshd")).start()
    yield server
    server.stop()


@pytest.fixture
def ctx(sshd, tmp_path, request):
    cfg = parse_config({"terminal": {"backend": "ssh", "ssh": sshd.config()}})
    c = ToolContext(cwd=tmp_path / "local", config=cfg, session_id=f"ssh-{request.node.name}")
    yield c
    backends.release(c.session_id)


def term(ctx, command, **kw) -> dict:
    return json.loads(dispatch("terminal", {"command": command, **kw}, ctx))


def test_commands_run_over_ssh_and_keep_their_directory(ctx, tmp_path):
    remote = tmp_path / "remote"
    remote.mkdir()
    out = term(ctx, 'echo "$SSH_CONNECTION"; echo err >&2; exit 3')
    assert out["exit_code"] == 3 and out["output"].startswith("127.0.0.1 ")
    assert out["output"].endswith("err\n")
    assert term(ctx, f"cd {remote}")["exit_code"] == 0
    assert term(ctx, "pwd")["output"] == f"{remote}\n"  # a cd carries over
    (remote / "sub").mkdir()
    assert term(ctx, "pwd", workdir="sub")["output"] == f"{remote}/sub\n"
    assert term(ctx, "pwd")["output"] == f"{remote}\n"  # an explicit workdir does not move it


def test_one_persistent_connection_per_session(ctx, sshd, tmp_path, hermes_home):
    term(ctx, "true")
    assert "ssh-ed25519" in (hermes_home / "known_hosts").read_text()  # trust on first use, ours
    backend = backends.backend_for(ctx)
    master = backend._master.pid  # noqa: SLF001 - the connection under test
    for _ in range(3):
        term(ctx, "true")
    assert backends.backend_for(ctx) is backend and backend._master.pid == master  # noqa: SLF001
    other = ToolContext(cwd=tmp_path, config=ctx.config, session_id=ctx.session_id + "-2")
    term(other, "true")
    assert backends.backend_for(other) is not backend
    backends.release(other.session_id)
    assert backend._master.poll() is None  # noqa: SLF001 - releasing one leaves the other


def test_file_tools_act_on_the_remote_host(ctx, tmp_path):
    remote = tmp_path / "remote"
    remote.mkdir()
    term(ctx, f"cd {remote}")
    wrote = dispatch("write_file", {"path": "notes/a.txt", "content": "one\ntwo\n"}, ctx)
    assert "created" in wrote
    assert (remote / "notes" / "a.txt").read_text() == "one\ntwo\n"
    assert not (tmp_path / "local" / "notes").exists()  # the local working dir is untouched
    assert dispatch("read_file", {"path": "notes/a.txt"}, ctx) == "    1|one\n    2|two"
    patched = dispatch("patch", {"path": "notes/a.txt", "old_string": "two", "new_string": "2"},
                       ctx)
    assert "--- a/notes/a.txt" in patched and str(tmp_path) not in patched.replace(str(remote), "")
    assert (remote / "notes" / "a.txt").read_text() == "one\n2\n"
    assert dispatch("search_files", {"pattern": "^2$"}, ctx) == "notes/a.txt:2:2"
    assert dispatch("search_files", {"pattern": "a.txt", "target": "files"}, ctx) == "notes/a.txt"
    with pytest.raises(ToolError, match="file not found on"):
        dispatch("read_file", {"path": "missing.txt"}, ctx)


def test_a_timeout_kills_the_remote_command(ctx, tmp_path):
    pidfile = tmp_path / "remote.pid"
    out = term(ctx, f"echo $$ > {pidfile}; sleep 60", timeout=1)
    assert out["exit_code"] is None and "timed out" in out["status"]
    pid = int(pidfile.read_text())
    wait_until(lambda: not os.path.exists(f"/proc/{pid}"), timeout=20)


def test_background_processes_run_remotely_and_are_killed_there(ctx, tmp_path):
    pidfile = tmp_path / "bg.pid"
    started = json.loads(dispatch("process", {"action": "start",
                                              "command": f"echo $$ > {pidfile}; echo up; sleep 60"},
                                  ctx))
    assert "runs on" in started["note"]
    poll = lambda: json.loads(dispatch("process", {"action": "poll", "id": started["id"],  # noqa
                                                   "offset": 0}, ctx))
    wait_until(lambda: poll()["output"] == "up\n", timeout=20)
    pid = int(pidfile.read_text())
    dispatch("process", {"action": "kill", "id": started["id"]}, ctx)
    wait_until(lambda: not os.path.exists(f"/proc/{pid}"), timeout=20)


def test_a_host_that_refuses_is_one_clear_error(tmp_path, sshd):
    cfg = parse_config({"terminal": {"backend": "ssh", "ssh": {
        **sshd.config(), "port": ssh_server.free_port(), "connect_timeout": 3}}})
    ctx = ToolContext(cwd=tmp_path, config=cfg, session_id="refused")
    with pytest.raises(ToolError, match="cannot connect to .* over SSH: .*refused"):
        dispatch("terminal", {"command": "true"}, ctx)
    backends.release("refused")
    nohost = parse_config({"terminal": {"backend": "ssh"}})
    with pytest.raises(ToolError, match="terminal.ssh.host is not set"):
        dispatch("terminal", {"command": "true"},
                 ToolContext(cwd=tmp_path, config=nohost, session_id="nohost"))
