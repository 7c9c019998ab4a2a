"""delegate_task's pure parts: argument checks, toolset narrowing, outcomes, the bounded result."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from hermes_core.config import DelegationConfig, parse_config
from agent.delegation import (COMPLETED, FAILED, INTERRUPTED, TIMEOUT, ChildResult, DelegationError,
                              Task, child_provider, child_system_prompt, child_toolsets, last_text,
                              outcome, toolsets_of)
from agent.delegation_tool import SCHEMA, cut_answer, format_results, parse_tasks
from tools.registry import ToolError, dispatch, get_tool_definitions, get_toolset, validate_args


# ---- the schema ---------------------------------------------------------------------------


def test_schema_stays_within_its_prompt_budget():
    definition = next(d for d in get_tool_definitions() if d["function"]["name"] == "delegate_task")
    assert len(json.dumps(definition)) / 4 <= 300
    assert get_toolset("delegate_task") == "delegation"


# ---- parse_tasks ----------------------------------------------------------------------------


def test_one_goal_with_context_and_toolsets():
    [t] = parse_tasks({"goal": "count lines", "context": "in src/", "toolsets": ["file"]}, 3)
    assert t == Task(goal="count lines", context="in src/", toolsets=("file",))


def test_tasks_get_the_shared_context_before_their_own():
    tasks = parse_tasks({"context": "repo at /r", "tasks": [{"goal": "a", "context": "only a"},
                                                             {"goal": "b"}]}, 3)
    assert [t.goal for t in tasks] == ["a", "b"]
    assert tasks[0].context == "repo at /r\n\nonly a" and tasks[1].context == "repo at /r"
    assert tasks[1].toolsets is None


def test_tasks_sent_as_json_text_are_accepted_by_the_registry_and_the_tool():
    text = json.dumps([{"goal": "a"}, {"goal": "b", "toolsets": "file, terminal"}])
    args = validate_args("delegate_task", SCHEMA, {"tasks": text})
    assert isinstance(args["tasks"], list)
    tasks = parse_tasks({"tasks": text}, 3)  # the tool alone copes too
    assert [t.goal for t in tasks] == ["a", "b"] and tasks[1].toolsets == ("file", "terminal")


def test_tasks_as_text_that_is_not_a_json_list_is_a_clear_error():
    with pytest.raises(ToolError, match="'tasks' must be an array"):
        validate_args("delegate_task", SCHEMA, {"tasks": "first do a, then b"})
    with pytest.raises(ToolError, match="not JSON"):
        parse_tasks({"tasks": "first do a, then b"}, 3)
    with pytest.raises(ToolError, match="'tasks' must be an array"):
        validate_args("delegate_task", SCHEMA, {"tasks": '{"goal": "x"}'})  # JSON, but an object


@pytest.mark.parametrize("args, message", [
    ({}, "nothing to delegate"),
    ({"goal": "   "}, "nothing to delegate"),
    ({"context": "only context"}, "nothing to delegate"),
    ({"tasks": []}, "tasks is empty; give 1 to 3"),
    ({"tasks": [{"goal": "a"}, {"context": "no goal here"}]}, "task 2: has no goal"),
    ({"tasks": [{"goal": ""}]}, "task 1: has no goal"),
    ({"tasks": ["just a string"]}, "task 1: must be an object"),
    ({"tasks": [{"goal": 42}]}, "task 1: goal must be a string"),
    ({"tasks": [{"goal": "a", "context": ["x"]}]}, "task 1: context must be a string"),
    ({"tasks": [{"goal": "a", "toolsets": [1, 2]}]}, "task 1: toolsets must be a list"),
    ({"goal": "a", "tasks": [{"goal": "b"}]}, "not both"),
    ({"goal": "x" * 20_001}, "at most 20,000"),
    ({"goal": "a", "context": "y" * 100_001}, "name the files to read instead"),
])
def test_bad_input_is_a_tool_error_that_says_what_to_fix(args, message):
    with pytest.raises(ToolError, match=message):
        parse_tasks(args, 3)


def test_more_tasks_than_allowed_is_an_error_naming_the_limit_never_a_truncation():
    tasks = [{"goal": f"g{i}"} for i in range(5)]
    with pytest.raises(ToolError) as err:
        parse_tasks({"tasks": tasks}, 3)
    assert "5 tasks" in str(err.value) and "at most 3" in str(err.value)
    assert "delegation.max_concurrent_children" in str(err.value)
    assert len(parse_tasks({"tasks": tasks}, 5)) == 5


def test_the_tool_outside_an_agent_says_so(tmp_path):
    from tools.registry import ToolContext

    with pytest.raises(ToolError, match="no agent to delegate from"):
        dispatch("delegate_task", {"goal": "x"}, ToolContext(cwd=tmp_path))


# ---- toolsets --------------------------------------------------------------------------------


def test_children_lose_delegation_memory_cronjob_and_interactive_toolsets():
    parent = ["terminal", "file", "memory", "delegation", "cronjob", "clarify", "todo", "mcp-git"]
    assert child_toolsets(parent, None, can_delegate=False) == ["terminal", "file", "todo", "mcp-git"]
    assert "delegation" in child_toolsets(parent, None, can_delegate=True)
    assert "memory" not in child_toolsets(parent, None, can_delegate=True)


def test_a_task_may_narrow_its_toolsets_but_never_widen_them():
    parent = ["terminal", "file", "todo"]
    assert child_toolsets(parent, ["file"], can_delegate=False) == ["file"]
    assert child_toolsets(parent, [], can_delegate=False) == []  # no tools at all: allowed
    with pytest.raises(DelegationError, match="'web' not available.*terminal, file, todo"):
        child_toolsets(parent, ["file", "web"], can_delegate=False)
    with pytest.raises(DelegationError, match="'memory'"):
        child_toolsets(parent + ["memory"], ["memory"], can_delegate=False)


def test_toolsets_of_keeps_the_order_of_the_offered_tools():
    defs = [{"function": {"name": n}} for n in ("terminal", "read_file", "write_file", "todo", "nope")]
    assert toolsets_of(defs, get_toolset) == ["terminal", "file", "todo"]


# ---- prompt and provider ----------------------------------------------------------------------


def test_the_child_prompt_is_its_task_and_context_only():
    prompt = child_system_prompt(Task("Find the bug", "It is in parser.py"), "/work")
    assert "## Task\nFind the bug" in prompt and "## Context\nIt is in parser.py" in prompt
    assert "/work" in prompt and len(prompt) < 1000
    assert "## Context" not in child_system_prompt(Task("x", "  "), "/w")


def _parent(**kw):
    base = dict(provider="custom", base_url="http://parent/v1", api_key="parent-key", model="big")
    return SimpleNamespace(**{**base, **kw})


def test_children_use_the_parents_provider_unless_delegation_says_otherwise(monkeypatch):
    monkeypatch.delenv("HERMES_DELEGATION_API_KEY", raising=False)
    assert child_provider(_parent(), DelegationConfig()) == {
        "provider": "custom", "base_url": "http://parent/v1", "api_key": "parent-key", "model": "big"}
    assert child_provider(_parent(), DelegationConfig(model="small"))["model"] == "small"
    own = child_provider(_parent(), DelegationConfig(base_url="http://cheap/v1"))
    assert own["base_url"] == "http://cheap/v1" and own["api_key"] is None  # never the parent's key
    assert own["model"] == "big"
    monkeypatch.setenv("HERMES_DELEGATION_API_KEY", "from-env")
    assert child_provider(_parent(), DelegationConfig(base_url="http://cheap/v1"))["api_key"] == "from-env"
    assert child_provider(_parent(), DelegationConfig(api_key="cfg"))["api_key"] == "cfg"


def test_delegation_config_defaults_and_validation():
    cfg = parse_config({}).delegation
    assert (cfg.max_concurrent_children, cfg.max_iterations, cfg.max_depth) == (3, 50, 1)
    assert parse_config({"delegation": {"max_concurrent_children": 5, "future_key": 1}}).delegation \
        .max_concurrent_children == 5
    from hermes_core.config import ConfigError

    with pytest.raises(ConfigError, match="delegation.max_concurrent_children"):
        parse_config({"delegation": {"max_concurrent_children": 0}})


# ---- outcomes and the result -----------------------------------------------------------------


def test_outcome_of_each_ending():
    done = {"completed": True, "final_response": "42"}
    assert outcome(done, None, None) == (COMPLETED, "42", None)
    assert outcome(done, INTERRUPTED, None)[0] == COMPLETED  # finished before the stop landed
    partial = {"completed": False, "interrupted": True,
               "messages": [{"role": "user", "content": "go"},
                            {"role": "assistant", "content": "Found 3 files so far", "tool_calls": []},
                            {"role": "tool", "content": "..."}]}
    assert outcome(partial, TIMEOUT, None)[:2] == (TIMEOUT, "Found 3 files so far")
    assert outcome(partial, INTERRUPTED, None)[:2] == (INTERRUPTED, "Found 3 files so far")
    failed = {"completed": False, "failed": True, "error": "The provider refused the request (400)"}
    assert outcome(failed, None, None) == (FAILED, "", "The provider refused the request (400)")
    assert outcome(None, None, RuntimeError("boom")) == (FAILED, "", "RuntimeError: boom")
    out_of_calls = {"completed": False, "failed": False, "error": "Stopped after 50 model calls ... "
                    "Say 'continue' to go on.", "messages": partial["messages"]}
    status, answer, why = outcome(out_of_calls, None, None)
    assert (status, answer) == (FAILED, "Found 3 files so far") and "delegation.max_iterations" in why
    filler = {"role": "assistant", "content": "(no reply: the previous turn did not complete)"}
    assert last_text([filler]) == ""


def test_long_answers_keep_head_and_tail_and_name_where_the_rest_is():
    long = "HEAD " + "x" * 10_000 + " TAIL"
    cut, was_cut = cut_answer(long, 1000)
    assert was_cut and cut.startswith("HEAD") and cut.endswith("TAIL") and len(cut) < 1100
    assert cut_answer("short", 1000) == ("short", False)
    results = [ChildResult(1, "a", COMPLETED, answer=long, session_id="S1", api_calls=2, duration=1.234,
                           prompt_tokens=10, completion_tokens=5),
               ChildResult(2, "b", FAILED, error="provider said no", session_id="S2")]
    out = json.loads(format_results(results, 1000))
    assert out["summary"] == "1 completed, 1 failed"
    first, second = out["results"]
    assert first["task"] == 1 and "S1" in first["full_answer"] and "10,010 characters" in first["full_answer"]
    assert first["tokens"] == {"prompt": 10, "completion": 5} and first["duration_s"] == 1.23
    assert second["status"] == FAILED and second["error"] == "provider said no"
    assert "full_answer" not in second
