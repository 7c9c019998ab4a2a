"""delegate_task end to end: a real parent AIAgent and children, the loopback provider, SQLite."""
from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from hermes_core.config import parse_config
from agent.delegation import CHILD_IDENTITY
from hermes_state import SessionDB
from tests.fake_provider import FakeProvider, Reply, error, slow, text, tool_calls
from tests.subagent_script import Router, calls_of, delegate, goal_of, is_child

def tool_result(result: dict) -> dict:
    """The last tool result of the turn (the delegate_task call's)."""
    content = [m["content"] for m in result["messages"] if m["role"] == "tool"][-1]
    return json.loads(content)


def config(**delegation: Any):
    return parse_config({"delegation": delegation})


# ---- parallel children, isolation, the store ---------------------------------------------------


def test_three_children_run_in_parallel_and_answer_in_task_order(fake_provider, make_agent, hermes_home):
    (hermes_home / "SOUL.md").write_text("PERSONA-MARKER: you are a pirate.")
    barrier = threading.Barrier(3, timeout=15)  # sequential children would break it: each waits alone

    def meet_then_work(body: dict) -> Reply:
        barrier.wait()
        return slow(tool_calls([("todo", {})], content=f"working on {goal_of(body)}"), 0.2)

    goals = ["alpha task", "beta task", "gamma task"]
    fake_provider.handler = Router(
        parent=[delegate(*goals), text("All three reported back.")],
        children={g: [meet_then_work, text(f"{g.split()[0]} answer")] for g in goals})
    statuses: list[tuple[str, str]] = []
    agent = make_agent(status_callback=lambda kind, msg: statuses.append((kind, msg)))

    result = agent.run_conversation("Split this up")

    assert result["completed"] and result["final_response"] == "All three reported back."
    out = tool_result(result)
    assert out["summary"] == "3 completed"
    assert [(r["task"], r["status"], r["answer"]) for r in out["results"]] == [
        (1, "completed", "alpha answer"), (2, "completed", "beta answer"), (3, "completed", "gamma answer")]
    assert all(r["api_calls"] == 2 and r["tokens"]["prompt"] > 0 for r in out["results"])

    # the request log: every child's first call came in before any child's second call
    kinds = [("child" if is_child(b) else "parent", calls_of(b)) for b in fake_provider.requests]
    assert kinds[0] == ("parent", 0) and kinds[-1] == ("parent", 1)
    firsts = [i for i, k in enumerate(kinds) if k == ("child", 0)]
    seconds = [i for i, k in enumerate(kinds) if k == ("child", 1)]
    assert len(firsts) == len(seconds) == 3 and max(firsts) < min(seconds)
    # the parent's second request carries the children's answers
    assert "beta answer" in json.dumps(fake_provider.requests[-1]["messages"][-1])

    # isolation: no persona, no memory, no delegation; the task is in the child's own prompt
    for body in fake_provider.requests:
        names = {t["function"]["name"] for t in body.get("tools") or []}
        if is_child(body):
            assert "PERSONA-MARKER" not in body["messages"][0]["content"]
            assert "## Task\n" + goal_of(body) in body["messages"][0]["content"]
            assert "delegate_task" not in names and {"terminal", "read_file", "todo"} <= names
        else:
            assert "PERSONA-MARKER" in body["messages"][0]["content"] and "delegate_task" in names

    # one line per child as it starts and ends, through the parent's status callback
    lines = [m for _, m in statuses if m.startswith("subagent ")]
    assert sum("started" in m for m in lines) == 3 and sum(" completed in " in m for m in lines) == 3
    assert lines.index(next(m for m in lines if m.startswith("subagent 1/3 started"))) < \
        lines.index(next(m for m in lines if m.startswith("subagent 1/3 completed")))

    # the store: each child a session of its own, with the parent's id and a delegation record
    db = SessionDB()
    children = db.list_children(agent.session_id)
    assert [c["task_index"] for c in children] == [1, 2, 3]
    assert [c["session_id"] for c in children] == [r["session_id"] for r in out["results"]]
    for child, goal in zip(children, goals):
        s = db.get_session(child["session_id"])
        assert s["parent_session_id"] == agent.session_id and s["source"] == "subagent"
        assert s["system_prompt"].startswith(CHILD_IDENTITY) and s["ended_at"] is not None
        assert child["status"] == "completed" and child["goal"] == goal and child["api_calls"] == 2
        msgs = db.get_active_messages(child["session_id"])
        assert msgs[0] == {"role": "user", "content": goal} and msgs[-1]["content"].endswith("answer")
    db.close()


def test_a_long_answer_is_cut_and_the_full_text_stays_in_the_child_session(fake_provider, make_agent):
    long = "BEGIN " + "detail " * 2000 + " END"
    fake_provider.handler = Router(parent=[delegate("write a lot"), text("ok")],
                                   children={"write a lot": [text(long)]})
    agent = make_agent(config=config(max_answer_chars=1000))
    [entry] = tool_result(agent.run_conversation("go"))["results"]
    assert entry["answer"].startswith("BEGIN") and entry["answer"].endswith("END")
    assert len(entry["answer"]) < 1200 and entry["session_id"] in entry["full_answer"]
    with SessionDB() as db:
        assert db.get_active_messages(entry["session_id"])[-1]["content"] == long


# ---- control: timeout, provider errors, interrupts ----------------------------------------------


def test_timeout_and_provider_error_are_reported_and_the_parent_goes_on(fake_provider, make_agent):
    fake_provider.handler = Router(
        parent=[delegate("slow one", "broken one", "fine one"), text("Reported what worked.")],
        children={"slow one": [tool_calls([("todo", {})], content="Step one found 7 files"),
                               slow(text("too late"), 60)],
                  "broken one": [error(400, "model 'nope' does not exist", type="invalid_request_error")],
                  "fine one": [text("fine answer")]})
    agent = make_agent(config=config(child_timeout=1.5))

    result = agent.run_conversation("go")

    assert result["completed"] and result["final_response"] == "Reported what worked."
    slow_r, broken, fine = tool_result(result)["results"]
    assert slow_r["status"] == "timeout" and slow_r["answer"] == "Step one found 7 files"
    assert "child_timeout" in slow_r["error"]
    assert broken["status"] == "failed" and "does not exist" in broken["error"]
    assert fine["status"] == "completed" and fine["answer"] == "fine answer"
    with SessionDB() as db:
        assert [c["status"] for c in db.list_children(agent.session_id)] == ["timeout", "failed", "completed"]


def test_interrupting_the_parent_interrupts_every_child(fake_provider, make_agent):
    fake_provider.handler = Router(parent=[delegate("wait a", "wait b")],
                                   children={"wait a": [slow(text("never a"), 60)],
                                             "wait b": [slow(text("never b"), 60)]})
    agent = make_agent()
    box: dict = {}
    runner = threading.Thread(target=lambda: box.update(r=agent.run_conversation("go")))
    runner.start()
    assert fake_provider.wait_for_requests(3, timeout=20)  # the parent's call and both children's
    agent.interrupt("stop")
    runner.join(timeout=30)
    assert not runner.is_alive()

    result = box["r"]
    assert result["interrupted"] and not result["completed"]
    out = tool_result(result)
    assert [r["status"] for r in out["results"]] == ["interrupted", "interrupted"]
    assert len(fake_provider.requests) == 3  # nobody asked the model anything after the stop
    with SessionDB() as db:
        assert [c["status"] for c in db.list_children(agent.session_id)] == ["interrupted"] * 2

    fake_provider.handler = None  # the parent works normally afterwards
    fake_provider.queue(text("back again"))
    assert agent.run_conversation("hello?")["final_response"] == "back again"


# ---- what a child may do ------------------------------------------------------------------------


def test_a_childs_dangerous_command_is_denied_unless_the_user_allowed_it(fake_provider, make_agent, tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    command = "rm -r scratch"
    asked: list[str] = []

    def approve(cmd: str, reason: str) -> str:
        asked.append(cmd)
        return "always"

    def child_runs_rm(body: dict) -> Reply:
        return tool_calls([("terminal", {"command": command})])

    router = Router(parent=[delegate("clean up"), text("child was refused")],
                    children={"clean up": [child_runs_rm, text("could not clean")]})
    fake_provider.handler = router
    agent = make_agent(approval_callback=approve)

    [entry] = tool_result(agent.run_conversation("clean"))["results"]
    child_tool = [m for m in fake_provider.requests[-2]["messages"] if m["role"] == "tool"]
    assert "command denied" in child_tool[0]["content"] and scratch.exists()
    assert asked == [] and entry["answer"] == "could not clean"  # nobody was asked for the child

    # the user allows the command for this session (an "always" answer to the parent) ...
    fake_provider.reset()
    fake_provider.handler = Router(
        parent=[tool_calls([("terminal", {"command": "rm -r scratch/none-such"})]), text("parent ran it")],
        children={})
    scratch_child = tmp_path / "scratch" / "none-such"
    scratch_child.mkdir()
    agent.run_conversation("remove the empty folder yourself")
    assert asked == ["rm -r scratch/none-such"] and not scratch_child.exists()
    # ... and now a child's same-risk command in the same session runs without a question
    fake_provider.handler = Router(
        parent=[delegate("clean up again"), text("done")],
        children={"clean up again": [tool_calls([("terminal", {"command": "rm -r scratch/none-such"})]),
                                     text("cleaned")]})
    scratch_child.mkdir()
    [entry] = tool_result(agent.run_conversation("and again through a subagent"))["results"]
    assert entry["answer"] == "cleaned" and not scratch_child.exists() and len(asked) == 1


def test_a_task_may_narrow_toolsets_and_asking_for_more_starts_nothing(fake_provider, make_agent):
    fake_provider.handler = Router(
        parent=[tool_calls([("delegate_task", {"goal": "read only", "toolsets": ["file"]})]),
                tool_calls([("delegate_task", {"tasks": [{"goal": "a"},
                                                         {"goal": "b", "toolsets": ["memory"]}]})]),
                text("finished")],
        children={"read only": [text("read it")], "a": [text("a")]})
    agent = make_agent(enabled_toolsets=["terminal", "file", "delegation"])

    result = agent.run_conversation("go")

    assert result["completed"] and result["final_response"] == "finished"
    child_bodies = [b for b in fake_provider.requests if is_child(b)]
    assert len(child_bodies) == 1  # the second call started no child at all
    assert {t["function"]["name"] for t in child_bodies[0]["tools"]} == {
        "read_file", "write_file", "patch", "search_files"}
    tool_msgs = [m["content"] for m in result["messages"] if m["role"] == "tool"]
    assert "'memory' not available to subagents" in tool_msgs[1] and "terminal, file" in tool_msgs[1]


@pytest.mark.parametrize("args, message", [
    ({"tasks": [{"goal": f"g{i}"} for i in range(4)]}, "4 tasks, but at most 3"),
    ({"tasks": []}, "tasks is empty"),
    ({"tasks": [{"context": "no goal"}]}, "task 1: has no goal"),
    ({"tasks": "do everything"}, "'tasks' must be an array"),
])
def test_bad_calls_are_tool_errors_and_the_turn_goes_on(fake_provider, make_agent, args, message):
    fake_provider.handler = Router(parent=[tool_calls([("delegate_task", args)]), text("fine, myself")],
                                   children={})
    result = make_agent().run_conversation("go")
    assert result["completed"] and result["final_response"] == "fine, myself"
    assert len(fake_provider.requests) == 2 and not any(is_child(b) for b in fake_provider.requests)
    error_text = next(m["content"] for m in result["messages"] if m["role"] == "tool")
    assert message in json.loads(error_text)["error"]


def test_tasks_sent_as_json_text_run(fake_provider, make_agent):
    fake_provider.handler = Router(
        parent=[tool_calls([("delegate_task", {"tasks": json.dumps([{"goal": "x"}, {"goal": "y"}])})]),
                text("ok")],
        children={"x": [text("ex")], "y": [text("why")]})
    out = tool_result(make_agent().run_conversation("go"))
    assert [r["answer"] for r in out["results"]] == ["ex", "why"]


def test_depth_is_limited_by_max_depth(fake_provider, make_agent):
    fake_provider.handler = Router(
        parent=[delegate("middle"), text("top done")],
        children={"middle": [delegate("bottom"), text("middle done")],
                  "bottom": [delegate("deeper"), text("bottom done")],
                  "deeper": [text("never")]})
    agent = make_agent(config=config(max_depth=2))

    result = agent.run_conversation("go")

    assert tool_result(result)["results"][0]["answer"] == "middle done"
    by_goal = {goal_of(b): b for b in fake_provider.requests if is_child(b)}
    assert set(by_goal) == {"middle", "bottom"}  # "deeper" never ran
    names = {g: {t["function"]["name"] for t in b["tools"]} for g, b in by_goal.items()}
    assert "delegate_task" in names["middle"] and "delegate_task" not in names["bottom"]
    bottom_tool = [m["content"] for b in fake_provider.requests if is_child(b) and goal_of(b) == "bottom"
                   for m in b["messages"] if m["role"] == "tool"]
    assert any("unknown tool 'delegate_task'" in c for c in bottom_tool)
    with SessionDB() as db:
        [middle] = db.list_children(agent.session_id)
        [bottom] = db.list_children(middle["session_id"])
        assert bottom["goal"] == "bottom" and bottom["status"] == "completed"


def test_max_depth_zero_turns_delegation_off(fake_provider, make_agent):
    fake_provider.handler = Router(parent=[delegate("x"), text("ok")], children={"x": [text("no")]})
    result = make_agent(config=config(max_depth=0)).run_conversation("go")
    assert "delegation.max_depth is 0" in tool_result(result)["error"]
    assert not any(is_child(b) for b in fake_provider.requests)


# ---- models ---------------------------------------------------------------------------------------


def test_children_use_delegation_model_and_base_url_when_set(fake_provider, make_agent):
    second = FakeProvider().start()
    try:
        second.handler = Router(parent=[], children={"cheap": [text("cheap answer")]})
        fake_provider.handler = Router(parent=[delegate("cheap"), text("ok")], children={})
        agent = make_agent(config=config(base_url=second.base_url, model="small-model", api_key="child-key"))
        [entry] = tool_result(agent.run_conversation("go"))["results"]
        assert entry["answer"] == "cheap answer"
        assert not any(is_child(b) for b in fake_provider.requests)
        [body] = second.requests
        assert body["model"] == "small-model"
        assert second.request_headers[0]["authorization"] == "Bearer child-key"
    finally:
        second.stop()


def test_without_delegation_settings_children_use_the_parents_provider(fake_provider, make_agent):
    fake_provider.handler = Router(parent=[delegate("same"), text("ok")], children={"same": [text("s")]})
    make_agent(model="parent-model").run_conversation("go")
    child = next(b for b in fake_provider.requests if is_child(b))
    assert child["model"] == "parent-model"
    idx = fake_provider.requests.index(child)
    assert fake_provider.request_headers[idx]["authorization"] == "Bearer test-key"


# ---- the store ----------------------------------------------------------------------------------


def test_delegation_records_go_with_their_sessions(tmp_path):
    with SessionDB(tmp_path / "s.db") as db:
        db.create_session("P")
        for i, sid in enumerate(("C1", "C2"), 1):
            db.create_session(sid, source="subagent", parent_session_id="P")
        db.create_session("C3", source="subagent", parent_session_id="P")  # its parent died mid-batch
        db.record_delegation("P", "C2", 2, "second", "failed", started_at=1.0, duration=0.5, error="boom")
        db.record_delegation("P", "C1", 1, "first", "completed", started_at=1.0, duration=2.0, api_calls=3,
                             prompt_tokens=100, completion_tokens=20)
        rows = db.list_children("P")
        assert [(r["session_id"], r["status"]) for r in rows][:2] == [("C1", "completed"), ("C2", "failed")]
        assert rows[2]["session_id"] == "C3" and rows[2]["status"] is None
        assert rows[0]["prompt_tokens"] == 100 and rows[1]["error"] == "boom"
        with pytest.raises(Exception):
            db.record_delegation("P", "missing-child", 1, "x", "completed", started_at=1.0, duration=1.0)
        db.delete_session("C2")
        assert [r["session_id"] for r in db.list_children("P")] == ["C1", "C3"]
        db.delete_session("P")  # its records go; the children's sessions stay (their own transcripts)
        assert [(r["session_id"], r["status"]) for r in db.list_children("P")] == [("C1", None), ("C3", None)]
        assert db.integrity_check() == []


def test_a_parent_already_interrupted_starts_no_child(fake_provider, make_agent):
    from agent.delegation import Task, run_children
    from tools.registry import ToolContext

    agent = make_agent()
    stop = threading.Event()
    stop.set()
    ctx = ToolContext(cwd=agent.cwd, session_id=agent.session_id, interrupt_event=stop,
                      session_db=agent.session_db, config=agent.config, agent=agent)
    results = run_children(agent, [Task("a"), Task("b")], ctx)
    assert [(r.index, r.status) for r in results] == [(1, "interrupted"), (2, "interrupted")]
    assert fake_provider.requests == []
    with SessionDB() as db:
        assert db.list_children(agent.session_id) == []


def test_a_child_has_its_own_iteration_budget(fake_provider, make_agent):
    fake_provider.handler = Router(
        parent=[delegate("loop forever"), text("it gave up")],
        children={"loop forever": [tool_calls([("todo", {})], content="still looking")]})
    agent = make_agent(config=config(max_iterations=2), max_iterations=10)
    result = agent.run_conversation("go")
    [entry] = tool_result(result)["results"]
    assert entry["status"] == "failed" and entry["api_calls"] == 2
    assert "delegation.max_iterations" in entry["error"] and entry["answer"] == "still looking"
    assert result["completed"] and result["final_response"] == "it gave up"
