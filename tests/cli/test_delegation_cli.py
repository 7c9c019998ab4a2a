"""Delegation from the command line: `hermes -z`, `sessions show --children`, Ctrl+C in the REPL."""
from __future__ import annotations

import json

from hermes_state import SessionDB
from tests.cli.test_repl import PROMPT, Repl
from tests.fake_provider import slow, text
from tests.subagent_script import Router, delegate, goal_of, is_child


def test_hermes_z_delegates_and_uses_the_childrens_answers(hermes, fake_provider):
    fake_provider.handler = Router(
        parent=[delegate("count the apples", "count the pears"),
                lambda body: text("Total: " + " and ".join(
                    r["answer"] for r in json.loads(body["messages"][-1]["content"])["results"]))],
        children={"count the apples": [text("7 apples")], "count the pears": [text("3 pears")]})

    proc = hermes("-z", "How much fruit is there? Use subagents.")

    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "Total: 7 apples and 3 pears"
    assert sorted(goal_of(b) for b in fake_provider.requests if is_child(b)) == [
        "count the apples", "count the pears"]
    assert "subagent" not in proc.stderr  # -z keeps stderr for what needs attention

    with SessionDB() as db:
        [parent] = db.list_sessions(source="cli")
    shown = hermes("sessions", "show", parent["id"], "--children")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.lstrip().startswith("#"))
    rows = lines[header + 1:]
    assert "completed" in rows[0] and "count the apples" in rows[0]
    assert "completed" in rows[1] and "count the pears" in rows[1]
    child_id = rows[0].split()[5]
    assert hermes("sessions", "show", child_id).stdout.count("7 apples") == 1
    nothing = hermes("sessions", "show", child_id, "--children")
    assert "never delegated" in nothing.stdout


def test_chat_q_shows_one_line_per_child_as_it_starts_and_ends(hermes, fake_provider):
    fake_provider.handler = Router(parent=[delegate("look around"), text("done")],
                                   children={"look around": [text("saw things")]})
    proc = hermes("chat", "-q", "delegate it")
    assert proc.returncode == 0, proc.stderr
    assert "subagent 1/1 started: look around" in proc.stderr
    assert "subagent 1/1 completed in" in proc.stderr


def test_ctrl_c_in_the_repl_interrupts_every_child(fake_provider):
    fake_provider.handler = Router(parent=[delegate("wait a", "wait b"), text("after the stop")],
                                   children={"wait a": [slow(text("never a"), 60)],
                                             "wait b": [slow(text("never b"), 60)]})
    repl = Repl(fake_provider, HERMES_APPROVAL_TIMEOUT="20")
    try:
        repl.child.send("split the work\r")
        repl.wait("subagent 2/2 started")
        assert fake_provider.wait_for_requests(3, timeout=20)  # both children are waiting on the model
        repl.child.sendintr()
        out = repl.wait(PROMPT)
        assert "subagent 1/2 interrupted" in out and "subagent 2/2 interrupted" in out
        assert "Interrupted" in out
        assert len(fake_provider.requests) == 3

        fake_provider.handler = None
        fake_provider.queue(text("still here"))
        repl.say("are you there?", until="still here")
        assert repl.quit() == 0
    finally:
        if repl.child.isalive():
            repl.child.terminate(force=True)
    with SessionDB() as db:
        [parent] = db.list_sessions(source="cli")
        assert [c["status"] for c in db.list_children(parent["id"])] == ["interrupted", "interrupted"]


def test_a_status_line_does_not_stop_the_spinner_of_a_running_tool():
    import io
    import time

    from hermes_cli.render import Renderer

    out = io.StringIO()
    r = Renderer(out=out, spinner=True, markdown=False)
    r.on_tool({"type": "tool_start", "name": "delegate_task", "args": {}})
    r.on_status("info", "subagent 1/1 started: x")
    deadline = time.monotonic() + 10
    while "running delegate_task…" not in out.getvalue().split("started: x")[-1]:
        assert time.monotonic() < deadline, out.getvalue()
        time.sleep(0.02)
    r.spinner_stop()
