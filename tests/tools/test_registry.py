"""Registry: definitions shape, toolset filtering, availability, dispatch errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tools.registry import (
    ToolContext,
    ToolError,
    ToolSpec,
    UnknownToolsetError,
    check_toolset_requirements,
    dispatch,
    get_tool_definitions,
    register,
    register_toolset,
    toolset_names,
    toolset_tools,
    unregister,
    unregister_toolset,
)

BUILTIN = {"terminal", "read_file", "write_file", "patch", "search_files", "todo", "memory"}


@pytest.fixture
def ctx(tmp_path):
    return ToolContext(cwd=tmp_path)


@pytest.fixture
def echo_tool():
    """A throwaway tool with typed parameters, removed again after the test."""

    def handler(args, ctx):
        return json.dumps(args, sort_keys=True)

    register(ToolSpec(
        "t_echo", "echo args back",
        {"type": "object", "properties": {
            "text": {"type": "string"}, "n": {"type": "integer"}, "flag": {"type": "boolean"},
            "items": {"type": "array"}, "mode": {"type": "string", "enum": ["a", "b"]},
        }, "required": ["text"]},
        handler, "testing",
    ))
    yield "t_echo"
    unregister("t_echo")


def names(defs):
    return {d["function"]["name"] for d in defs}


def test_definitions_are_openai_shaped():
    defs = get_tool_definitions()
    assert BUILTIN <= names(defs)
    for d in defs:
        assert d["type"] == "function"
        fn = d["function"]
        assert set(fn) == {"name", "description", "parameters"}
        assert fn["description"]
        assert fn["parameters"]["type"] == "object"
        json.dumps(d)  # must be serialisable as-is


def test_fresh_list_each_call():
    a, b = get_tool_definitions(), get_tool_definitions()
    assert a == b and a is not b
    a.clear()
    assert BUILTIN <= names(get_tool_definitions())


def test_filter_by_toolsets():
    assert names(get_tool_definitions(enabled_toolsets=["file"])) == {
        "read_file", "write_file", "patch", "search_files"}
    assert names(get_tool_definitions(enabled_toolsets=["terminal", "todo"])) == {
        "terminal", "process", "todo"}  # process: background commands (issue 27)
    without = names(get_tool_definitions(disabled_toolsets=["terminal"]))
    assert "terminal" not in without and "read_file" in without
    assert names(get_tool_definitions(enabled_toolsets=["file"], disabled_toolsets=["file"])) == set()
    assert names(get_tool_definitions(enabled_toolsets=[])) == set()


def test_unavailable_tools_are_hidden_and_explained(ctx):
    before = check_toolset_requirements()  # built-ins unusable here (send_message: no platform)
    assert "ghost" not in before
    register(ToolSpec("t_gone", "needs a thing", {"type": "object", "properties": {}},
                      lambda a, c: "ran", "ghost", check=lambda: "the thing is not installed"))
    try:
        assert "t_gone" not in names(get_tool_definitions())
        assert check_toolset_requirements() == {**before,
                                                "ghost": "t_gone: the thing is not installed"}
        with pytest.raises(ToolError, match="unavailable: the thing is not installed"):
            dispatch("t_gone", {}, ctx)
    finally:
        unregister("t_gone")
    assert check_toolset_requirements() == before


def test_crashing_check_counts_as_unavailable():
    def boom():
        raise RuntimeError("kaput")

    register(ToolSpec("t_boom", "x", {"type": "object", "properties": {}}, lambda a, c: "", "boomset", boom))
    try:
        assert "t_boom" not in names(get_tool_definitions())
        assert "kaput" in check_toolset_requirements()["boomset"]
    finally:
        unregister("t_boom")


def test_dispatch_unknown_tool_lists_available(ctx):
    with pytest.raises(ToolError) as err:
        dispatch("nope", {}, ctx)
    msg = str(err.value)
    assert "unknown tool 'nope'" in msg and "read_file" in msg and "terminal" in msg


def test_dispatch_missing_required(ctx, echo_tool):
    with pytest.raises(ToolError, match="missing required parameter 'text'"):
        dispatch(echo_tool, {"n": 1}, ctx)
    with pytest.raises(ToolError, match="'path'"):
        dispatch("read_file", {}, ctx)


@pytest.mark.parametrize("bad, param", [
    ({"text": 5}, "text"),
    ({"text": "x", "n": "many"}, "n"),
    ({"text": "x", "n": True}, "n"),
    ({"text": "x", "flag": "maybe"}, "flag"),
    ({"text": "x", "items": "a,b"}, "items"),
    ({"text": "x", "mode": "c"}, "mode"),
])
def test_dispatch_wrong_type_names_parameter(ctx, echo_tool, bad, param):
    with pytest.raises(ToolError, match=f"'{param}'"):
        dispatch(echo_tool, bad, ctx)


def test_dispatch_coerces_harmless_near_misses(ctx, echo_tool):
    out = json.loads(dispatch(echo_tool, {"text": "x", "n": "7", "flag": "true", "mode": None}, ctx))
    assert out == {"text": "x", "n": 7, "flag": True}


def test_dispatch_accepts_json_string_args_and_rejects_junk(ctx, echo_tool):
    assert json.loads(dispatch(echo_tool, '{"text": "hi"}', ctx)) == {"text": "hi"}
    with pytest.raises(ToolError, match="not valid JSON"):
        dispatch(echo_tool, "{text: hi", ctx)
    with pytest.raises(ToolError, match="JSON object"):
        dispatch(echo_tool, ["hi"], ctx)


def test_handler_exceptions_become_tool_errors(ctx):
    def handler(args, ctx):
        raise ValueError("bad input")

    register(ToolSpec("t_raise", "x", {"type": "object", "properties": {}}, handler, "testing"))
    try:
        with pytest.raises(ToolError, match="t_raise failed: ValueError: bad input"):
            dispatch("t_raise", {}, ctx)
    finally:
        unregister("t_raise")


def test_import_is_lazy_about_builtin_tools():
    """Importing the registry must not import the tool modules (start-up cost)."""
    code = (
        "import sys, tools.registry as r\n"
        "assert 'tools.terminal' not in sys.modules and 'tools.files' not in sys.modules\n"
        "r.get_tool_definitions()\n"
        "assert 'tools.terminal' in sys.modules and 'tools.files' in sys.modules\n"
        "assert 'tools.approval' not in sys.modules\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_a_new_agent_imports_no_browser_code_nor_asyncio_until_a_browser_tool_runs(tmp_path):
    """The opt-in browser toolset and the platform plugins register with every agent; their
    implementations (and asyncio, ~16 ms) are imported when first used (``deferred``), not by an
    agent that never runs them. Its check and handlers still reach the real code on first use."""
    code = (
        "import sys, run_agent\n"
        "from tools.registry import check_toolset_requirements, dispatch, get_tool_definitions\n"
        "a = run_agent.AIAgent(base_url='http://127.0.0.1:9/v1', api_key='k', model='m',\n"
        "                      quiet_mode=True)\n"
        "assert 'tools.browser.tools' not in sys.modules, 'browser code imported'\n"
        "assert 'asyncio' not in sys.modules, 'asyncio imported'\n"
        "reasons = check_toolset_requirements()\n"
        "assert 'tools.browser.tools' in sys.modules\n"
        "names = [d['function']['name'] for d in get_tool_definitions(['browser'])]\n"
        "assert 'check failed' not in reasons.get('browser', ''), reasons\n"
        "print('browser' in reasons, 'browser_navigate' in names)\n"
    )
    env = {**os.environ, "HERMES_HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    unavailable, offered = out.stdout.split()
    assert unavailable != offered  # the real check decided: either explained or offered


def test_toolsets_are_named_and_list_their_tools():
    sets = toolset_tools()
    assert list(sets)[:4] == ["terminal", "file", "todo", "memory"]
    assert sets["file"] == ["read_file", "write_file", "patch", "search_files"]
    assert names(get_tool_definitions(enabled_toolsets=["all"])) >= BUILTIN
    assert get_tool_definitions(enabled_toolsets=["none"]) == []


@pytest.mark.parametrize("kw", [{"enabled_toolsets": ["terminal", "filez"]}, {"disabled_toolsets": ["memroy"]}])
def test_an_unknown_toolset_is_an_error_listing_the_valid_ones(kw):
    with pytest.raises(UnknownToolsetError) as err:
        get_tool_definitions(**kw)
    msg = str(err.value)
    assert "unknown toolset" in msg and "valid toolsets: terminal, file, todo, memory" in msg and "'none'" in msg


def test_a_declared_toolset_is_valid_before_its_tools_exist():
    with pytest.raises(UnknownToolsetError):
        get_tool_definitions(enabled_toolsets=["mcp-later"])
    register_toolset("mcp-later", "an MCP server not connected yet")
    try:
        assert "mcp-later" in toolset_names()
        assert get_tool_definitions(enabled_toolsets=["mcp-later"]) == []
    finally:
        unregister_toolset("mcp-later")
    assert "mcp-later" not in toolset_names()


def test_agent_rejects_a_misspelt_toolset_and_config_toolsets_apply(make_agent, hermes_home):
    from hermes_core.config import ConfigError
    from tests.conftest import write_config

    with pytest.raises(UnknownToolsetError, match="'terminl'"):
        make_agent(disabled_toolsets=["terminl"])
    write_config(hermes_home, "toolsets: [file]\n")
    assert names(make_agent().tools) == {"read_file", "write_file", "patch", "search_files"}
    assert names(make_agent(enabled_toolsets=["todo"]).tools) == {"todo"}  # the argument wins
    write_config(hermes_home, "toolsets:\n  disabled: [nonesuch]\n")
    with pytest.raises(ConfigError, match="nonesuch"):
        make_agent()


def test_definitions_come_in_default_toolset_order_whatever_registered_first():
    register(ToolSpec("t_late_terminal", "x", {"type": "object", "properties": {}}, lambda a, c: "",
                      "terminal"))
    try:
        order = [d["function"]["name"] for d in get_tool_definitions()]
        assert order.index("t_late_terminal") < order.index("read_file") < order.index("todo")
        assert order.index("memory") < order.index("delegate_task")
    finally:
        unregister("t_late_terminal")


def test_a_check_shared_by_several_tools_runs_once_for_both_lists_of_a_new_agent(make_agent):
    calls = []

    def shared() -> None:
        calls.append(1)  # e.g. the browser tools: ten tools, one check reading config.yaml

    for n in ("t_one", "t_two", "t_three"):
        register(ToolSpec(n, "x", {"type": "object", "properties": {}}, lambda a, c: "", "shared",
                          check=shared))
    try:
        agent = make_agent(enabled_toolsets=["shared"])
        assert {"t_one", "t_two", "t_three"} <= {t["function"]["name"] for t in agent.tools}
        assert len(calls) == 1  # was 6: three tools, checked for the definitions and the reasons
        assert "t_one" in names(get_tool_definitions()) and len(calls) == 2  # a pass checks again
    finally:
        for n in ("t_one", "t_two", "t_three"):
            unregister(n)
