"""Tools that change things act only with consent where the agent is built to ask (issue 15 item 10):
the embedded model's default, the REPL asking, one-shot runs refusing; read-only tools run freely."""
from __future__ import annotations

import json

import pytest

from hermes_core.config import HermesConfig
from hermes_cli.agent_factory import mutation_policy
from run_agent import AIAgent
from tests.fake_provider import text, tool_calls


def _tool_results(fp) -> list[str]:
    return [m["content"] for m in fp.requests[-1]["messages"] if m["role"] == "tool"]


def test_ask_policy_asks_for_writes_and_shell_but_not_for_reads(make_agent, fake_provider, tmp_path):
    (tmp_path / "a.txt").write_text("alpha\n")
    asked = []
    fake_provider.queue(
        tool_calls([("read_file", {"path": "a.txt"}), ("write_file", {"path": "file.txt", "content": "hi"}),
                    ("terminal", {"command": "touch ran.txt"})]),
        text("done"))
    agent = make_agent(mutating_tools="ask", approval_callback=lambda c, r: asked.append(c) or "deny")
    assert agent.run_conversation("Say hello in one short sentence")["final_response"] == "done"
    read, write, shell = _tool_results(fake_provider)
    assert "alpha" in read
    assert "not approved" in write and "not approved" in shell
    assert not (tmp_path / "file.txt").exists() and not (tmp_path / "ran.txt").exists()
    assert asked == ["write_file path='file.txt' content='hi'", "terminal command='touch ran.txt'"]


def test_an_approved_change_runs_and_always_covers_that_call_only(make_agent, fake_provider, tmp_path):
    asked = []
    fake_provider.queue(tool_calls([("terminal", {"command": "touch one.txt"})]), text("ok"),
                        tool_calls([("terminal", {"command": "touch one.txt"})]), text("ok"),
                        tool_calls([("terminal", {"command": "touch two.txt"})]), text("ok"))
    answers = iter(["always", "deny"])
    agent = make_agent(mutating_tools="ask", approval_callback=lambda c, r: asked.append(c) or next(answers))
    for _ in range(3):
        agent.run_conversation("go")
    assert (tmp_path / "one.txt").exists() and not (tmp_path / "two.txt").exists()
    assert asked == ["terminal command='touch one.txt'", "terminal command='touch two.txt'"]


def test_deny_policy_refuses_without_asking_and_yolo_allows(make_agent, fake_provider, tmp_path):
    asked = []
    fake_provider.queue(tool_calls([("write_file", {"path": "file.txt", "content": "hi"})]), text("no"))
    agent = make_agent(mutating_tools="deny", approval_callback=lambda c, r: asked.append(c) or "once")
    agent.run_conversation("write it")
    (result,) = _tool_results(fake_provider)
    assert "refused" in json.loads(result)["error"] and "--yolo" in result
    assert asked == [] and not (tmp_path / "file.txt").exists()
    fake_provider.queue(tool_calls([("write_file", {"path": "file.txt", "content": "hi"})]), text("yes"))
    make_agent(mutating_tools="deny", yolo=True).run_conversation("write it")
    assert (tmp_path / "file.txt").read_text() == "hi"


def test_the_embedded_model_asks_by_default(fake_provider, tmp_path):
    # provider "local" means the 135M model: its tool calls are the model's guesses, not the user's wish
    import run_agent

    agent = AIAgent(provider="local", config=HermesConfig(), cwd=str(tmp_path), skip_context_files=True,
                    skip_memory=True, quiet_mode=True)
    agent.client = run_agent.OpenAI(base_url=fake_provider.base_url, api_key="x")  # scripted stand-in
    fake_provider.queue(tool_calls([("write_file", {"path": "file.txt", "content": "hi"})]), text("hello"))
    assert agent.run_conversation("Say hello in one short sentence")["final_response"] == "hello"
    assert "not approved" in _tool_results(fake_provider)[0]
    assert not (tmp_path / "file.txt").exists()
    remote = AIAgent(base_url=fake_provider.base_url, api_key="k", config=HermesConfig(), cwd=str(tmp_path))
    assert remote.mutating_tools == "allow"


def test_mutation_policy_per_surface():
    assert mutation_policy("local", yolo=False, interactive=True) == "ask"  # the REPL asks
    assert mutation_policy("local", yolo=False, interactive=False) == "deny"  # hermes -z / chat -q
    assert mutation_policy("local", yolo=True, interactive=False) == "allow"
    assert mutation_policy("openai", yolo=False, interactive=False) == "allow"
    with pytest.raises(ValueError, match="mutating_tools"):
        AIAgent(base_url="http://127.0.0.1:9/v1", api_key="k", config=HermesConfig(), mutating_tools="maybe")


def test_tools_that_change_things_are_the_ones_gated(tmp_path):
    from tools.registry import ToolContext, ToolError, dispatch

    (tmp_path / "a.txt").write_text("alpha\n")
    ctx = ToolContext(cwd=tmp_path, mutations="deny")
    calls = {"write_file": {"path": "b.txt", "content": "x"}, "terminal": {"command": "true"},
             "patch": {"path": "a.txt", "old_string": "alpha", "new_string": "beta"}}
    for name, args in calls.items():
        with pytest.raises(ToolError, match="refused"):
            dispatch(name, args, ctx)
    assert "alpha" in dispatch("read_file", {"path": "a.txt"}, ctx)
    assert "a.txt" in dispatch("search_files", {"pattern": "alpha"}, ctx)
    dispatch("todo", {"todos": [{"id": "1", "content": "x", "status": "pending"}]}, ctx)
    assert (tmp_path / "a.txt").read_text() == "alpha\n" and not (tmp_path / "b.txt").exists()


def test_every_change_asks_on_the_embedded_model_and_reads_do_not(fake_provider, hermes_home, tmp_path):
    """Issue 20 item 8: skill_manage, memory add, cronjob create and delegation changed things
    where write_file was refused; each action that changes state is marked in the registry."""
    import run_agent
    from hermes_state import SessionDB

    skill = "---\nname: notes-helper\ndescription: Take notes.\n---\nWrite them down.\n"
    fake_provider.queue(tool_calls([
        ("skill_manage", {"action": "create", "name": "notes-helper", "content": skill}),
        ("memory", {"action": "add", "target": "user", "content": "Likes tea."}),
        ("memory", {"action": "read", "target": "user"}),
        ("cronjob", {"action": "create", "schedule": "every 1h", "prompt": "check the news"}),
        ("cronjob", {"action": "list"}),
        ("delegate_task", {"goal": "write a file", "context": "anything"}),
        ("skills_list", {}),
    ]), text("hello"))
    asked = []
    db = SessionDB(tmp_path / "state.db")
    try:
        agent = AIAgent(provider="local", config=HermesConfig(), cwd=str(tmp_path), skip_context_files=True,
                        quiet_mode=True, session_db=db,
                        enabled_toolsets=["file", "memory", "skills", "cronjob", "delegation"],
                        approval_callback=lambda q, r: asked.append(q.split()[0:2]) or "deny")
        agent.client = run_agent.OpenAI(base_url=fake_provider.base_url, api_key="x")
        assert agent.run_conversation("hi")["final_response"] == "hello"
        assert db.list_cron_jobs() == []
    finally:
        db.close()
    create, add, read, cron_create, cron_list, delegate, listing = _tool_results(fake_provider)
    for refused in (create, add, cron_create, delegate):
        assert "not approved" in refused, refused
    assert "entries" in read and '"jobs": []' in cron_list and "not approved" not in listing
    assert sorted(a[0] for a in asked) == ["cronjob", "delegate_task", "memory", "skill_manage"]
    assert not (hermes_home / "skills" / "notes-helper").exists()
    assert not (hermes_home / "memories" / "USER.md").exists()


def test_the_registry_marks_what_changes_state():
    from tools.registry import mutates

    changes = [("write_file", {}), ("patch", {}), ("terminal", {}), ("delegate_task", {}),
               ("skill_manage", {"action": "patch"}), ("memory", {"action": "remove"}),
               ("memory", {"operations": [{"action": "read"}, {"action": "add"}]}),
               ("cronjob", {"action": "pause"}), ("cronjob", {"action": "run"})]
    reads = [("read_file", {}), ("search_files", {}), ("session_search", {}), ("skills_list", {}),
             ("skill_view", {}), ("todo", {}), ("memory", {"action": "read"}),
             ("memory", {"operations": [{"action": "read"}]}), ("cronjob", {"action": "list"})]
    for name, args in changes:
        assert mutates(name, args), name
    for name, args in reads:
        assert not mutates(name, args), name
