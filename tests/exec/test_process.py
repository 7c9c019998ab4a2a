"""Background processes: the process tool, terminal(background=true), /ps, and no orphans."""
from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from hermes_core.config import parse_config
from tools.process.manager import decode_slice
from tools.registry import ToolContext, ToolError, dispatch
from tests.fake_provider import text, tool_calls
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def ctx(tmp_path):
    return ToolContext(cwd=tmp_path, config=parse_config({}), session_id=f"s-{tmp_path.name}")


def proc(ctx, **args) -> dict:
    return json.loads(dispatch("process", args, ctx))


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead for our purposes
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def test_start_poll_with_offsets_wait_write_kill(ctx, hermes_home):
    started = json.loads(dispatch("terminal", {"command": "echo one; read line; echo got:$line; "
                                                          "sleep 60", "background": True}, ctx))
    pid_id = started["id"]
    wait_until(lambda: "one" in proc(ctx, action="poll", id=pid_id, offset=0)["output"])
    first = proc(ctx, action="poll", id=pid_id, offset=0)
    assert first["status"] == "running" and first["output"] == "one\n" and first["offset"] == 4
    assert proc(ctx, action="poll", id=pid_id)["output"] == ""  # nothing new since
    assert proc(ctx, action="write", id=pid_id, data="hi\n")["written_bytes"] == 3
    wait_until(lambda: "got:hi" in proc(ctx, action="poll", id=pid_id, offset=0)["output"])
    assert proc(ctx, action="poll", id=pid_id, offset=4)["output"] == "got:hi\n"
    assert proc(ctx, action="wait", id=pid_id, timeout=1)["note"] == "still running after 1 s"
    killed = proc(ctx, action="kill", id=pid_id)
    assert killed["status"] == "killed" and killed["exit_code"] is not None
    log = hermes_home / "sessions" / ctx.session_id / "processes" / f"{pid_id}.log"
    assert log.read_text() == "one\ngot:hi\n" and (log.stat().st_mode & 0o777) == 0o600
    listed = proc(ctx, action="list")["processes"]
    assert [p["id"] for p in listed] == [pid_id] and listed[0]["status"] == "exited"


def test_poll_is_bounded_and_pages_by_offset(ctx):
    started = proc(ctx, action="start", command="head -c 25000 /dev/zero | tr '\\0' x")
    assert proc(ctx, action="wait", id=started["id"], timeout=30)["status"] == "exited"
    page = proc(ctx, action="poll", id=started["id"], offset=0)
    assert len(page["output"]) == 10_000 and page["more_bytes"] == 15_000
    rest = proc(ctx, action="poll", id=started["id"])
    rest2 = proc(ctx, action="poll", id=started["id"])
    assert len(rest["output"]) + len(rest2["output"]) == 15_000 and "more_bytes" not in rest2


def test_a_utf8_character_cut_by_a_page_is_kept_whole():
    text_, used = decode_slice("aé".encode()[:2], at_end=False)
    assert (text_, used) == ("a", 1)
    assert decode_slice("aé".encode(), at_end=False) == ("aé", 3)
    assert decode_slice(b"\x1b[31mred\x1b[0m\r\n", at_end=True) == ("red\n", 14)


def test_processes_belong_to_their_session(ctx, tmp_path):
    started = proc(ctx, action="start", command="sleep 30")
    other = ToolContext(cwd=tmp_path, config=parse_config({}), session_id="another")
    with pytest.raises(ToolError, match="no background process"):
        proc(other, action="poll", id=started["id"])
    assert proc(other, action="list")["processes"] == []
    proc(ctx, action="kill", id=started["id"])


def test_start_goes_through_the_terminal_checks(ctx):
    with pytest.raises(ToolError, match="denied"):  # dangerous, nobody to ask
        proc(ctx, action="start", command="rm -rf ./build")
    with pytest.raises(ToolError, match="blocked"):
        proc(ctx, action="start", command="rm -rf /")
    assert proc(ctx, action="list")["processes"] == []


def test_the_session_limit(tmp_path):
    ctx = ToolContext(cwd=tmp_path, config=parse_config({"terminal": {"max_processes": 1}}),
                      session_id="limited")
    first = proc(ctx, action="start", command="sleep 30")
    with pytest.raises(ToolError, match="max_processes"):
        proc(ctx, action="start", command="sleep 30")
    proc(ctx, action="kill", id=first["id"])


def test_processes_survive_turns_and_slash_ps_lists_them(make_agent, fake_provider):
    from hermes_cli.checkpoints_cmd import ps_lines

    fake_provider.queue(tool_calls([("terminal", {"command": "echo ready; sleep 60",
                                                  "background": True})]), text("started"))
    agent = make_agent()
    agent.run_conversation("start a server")
    pid_id = json.loads(agent.messages[2]["content"])["id"]
    wait_until(lambda: hermes_home_log(agent, pid_id).read_bytes() == b"ready\n")
    fake_provider.queue(tool_calls([("process", {"action": "poll", "id": pid_id, "offset": 0})]),
                        text("ok"))
    agent.run_conversation("is it up?")
    polled = json.loads(agent.messages[-2]["content"])
    assert polled["status"] == "running" and polled["output"] == "ready\n"
    lines = ps_lines(agent.session_id)
    assert any(pid_id in ln and "running" in ln and "sleep 60" in ln for ln in lines)
    from hermes_cli.chat import ChatSession
    from hermes_cli.render import Renderer

    out = io.StringIO()
    ChatSession(lambda sid: agent, Renderer(out=out, spinner=False)).handle_line("/ps")
    assert pid_id in out.getvalue() and "sleep 60" in out.getvalue()
    assert "No background processes" in ps_lines("another-session")[0]
    fake_provider.queue(tool_calls([("process", {"action": "kill", "id": pid_id})]), text("done"))
    agent.run_conversation("stop it")
    assert json.loads(agent.messages[-2]["content"])["status"] == "killed"


def hermes_home_log(agent, pid_id: str) -> Path:
    from tools.process.tool import folder_for

    return folder_for(agent.session_id) / f"{pid_id}.log"


OWNER = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    from hermes_core.config import parse_config
    from tools.registry import ToolContext, dispatch
    ctx = ToolContext(cwd=Path(sys.argv[1]), config=parse_config({}), session_id="owner")
    cmd = "sleep 300 & echo $! > child.pid; sleep 300"
    out = json.loads(dispatch("process", {"action": "start", "command": cmd}, ctx))
    pidfile = Path(sys.argv[1], "child.pid")
    while not (pidfile.exists() and pidfile.read_text().strip()):
        time.sleep(0.05)
    print(out["pid"], flush=True)
    sys.stdin.readline()  # the test has seen the child alive
    if sys.argv[2] == "exit":
        sys.exit(0)
    time.sleep(300)
""")


@pytest.mark.parametrize("how", ["exit", "sigkill"])
def test_processes_die_with_their_owner(tmp_path, how):
    """The owner exits normally (atexit) or is SIGKILLed (the guard sees its pipe close): the
    background command, and the child it started in its group, are gone either way."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    owner = subprocess.Popen([sys.executable, "-c", OWNER, str(tmp_path), how], cwd=str(ROOT),
                             env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    guard_pid = int(owner.stdout.readline())
    grandchild = int((tmp_path / "child.pid").read_text())
    assert alive(grandchild) and alive(guard_pid)
    owner.stdin.write("go\n")
    owner.stdin.flush()
    if how == "sigkill":
        owner.send_signal(signal.SIGKILL)
    owner.wait(timeout=30)
    wait_until(lambda: not alive(grandchild) and not alive(guard_pid), timeout=20)
