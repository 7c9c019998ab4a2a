"""execute_code: a real child Python process whose tool calls come back through the RPC."""
from __future__ import annotations

import json
import textwrap

import pytest

from hermes_core.config import parse_config
from tools.registry import ToolContext, ToolError, dispatch
from tests.fake_provider import text, tool_calls


def ctx_for(tmp_path, cfg: dict | None = None, **kw) -> ToolContext:
    return ToolContext(cwd=tmp_path, config=parse_config(cfg or {}), session_id="x", **kw)


def run(ctx, code: str, **args) -> dict:
    return json.loads(dispatch("execute_code", {"code": textwrap.dedent(code), **args}, ctx))


def test_a_script_calls_tools_and_only_its_prints_come_back(tmp_path):
    for i in range(3):
        (tmp_path / f"f{i}.txt").write_text("x\n" * (i + 1))
    out = run(ctx_for(tmp_path), """
        from hermes_tools import read_file, search_files, terminal, write_file
        names = search_files("f*.txt", target="files").split()
        counts = {n: len(read_file(n).splitlines()) for n in sorted(names)}
        write_file("total.txt", str(sum(counts.values())))
        print(counts, terminal("cat total.txt")["output"])
    """)
    assert out["exit_code"] == 0 and out["tool_calls"] == 6
    assert out["output"] == "{'f0.txt': 1, 'f1.txt': 2, 'f2.txt': 3} 6\n"
    assert (tmp_path / "total.txt").read_text() == "6"


def test_policy_confinement_and_approvals_apply_inside_the_script(tmp_path):
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    outside.write_text("secret-ish")
    ctx = ctx_for(tmp_path, confine_to=tmp_path)
    out = run(ctx, f"""
        from hermes_tools import ToolError, read_file, terminal
        for call in (lambda: read_file({str(outside)!r}), lambda: terminal("rm -rf ./x")):
            try:
                call()
            except ToolError as exc:
                print("refused:", exc)
    """)
    assert "outside the working directory" in out["output"]
    assert "command denied" in out["output"]
    assert "secret-ish" not in out["output"]


def test_consent_is_asked_through_the_agents_callback(tmp_path):
    asked: list[str] = []

    def answer(question: str, why: str) -> str:  # the script itself yes, its write no
        asked.append(question)
        return "once" if question.startswith("execute_code") else "deny"

    ctx = ctx_for(tmp_path, mutations="ask", approval_callback=answer)
    out = run(ctx, """
        from hermes_tools import ToolError, write_file
        try:
            write_file("a.txt", "x")
        except ToolError as exc:
            print("no:", exc)
    """)
    assert [q.split()[0] for q in asked] == ["execute_code", "write_file"]
    assert "no: not approved" in out["output"]
    assert not (tmp_path / "a.txt").exists()


def test_errors_time_and_output_limits(tmp_path):
    ctx = ctx_for(tmp_path, {"code_execution": {"max_output_chars": 1000, "max_tool_calls": 2}})
    failed = run(ctx, "x = 1\nraise ValueError('bad input')\n")
    assert failed["exit_code"] == 1 and "ValueError: bad input" in failed["output"]
    assert 'File "<execute_code>", line 2' in failed["output"]
    assert "child.py" not in failed["output"]  # the script's frames only
    flood = run(ctx, "print('y' * 100_000)")
    assert len(flood["output"]) < 1200 and "cut from the middle" in flood["output"]
    slow = run(ctx, "import time; print('start', flush=True); time.sleep(60)", timeout=1)
    assert slow["exit_code"] is None and "timed out after 1 s" in slow["status"]
    assert "start" in slow["output"]
    limited = run(ctx, """
        from hermes_tools import ToolError, terminal
        for i in range(4):
            try:
                terminal("true")
            except ToolError as exc:
                print(exc)
    """)
    assert limited["tool_calls"] == 2 and "tool call limit reached" in limited["output"]
    assert "2 tool call(s) refused" in limited["note"]


def test_unknown_tools_and_no_recursion(tmp_path):
    out = run(ctx_for(tmp_path), """
        import hermes_tools
        print(sorted(hermes_tools.TOOLS)[:3], "execute_code" in hermes_tools.TOOLS)
        try:
            from hermes_tools import no_such_tool
        except ImportError as exc:
            print("import:", exc)
    """)
    assert "False" in out["output"] and "import:" in out["output"]
    with pytest.raises(ToolError, match="empty"):
        dispatch("execute_code", {"code": "  "}, ctx_for(tmp_path))


def test_the_agent_offers_it_and_the_gateway_does_not(make_agent):
    from agent.tool_policy import gateway_toolsets

    names = [t["function"]["name"] for t in make_agent().tools]
    assert "execute_code" in names and "process" in names
    enabled, _ = gateway_toolsets(parse_config({}).gateway)
    assert "code_execution" not in enabled and "terminal" not in enabled


def test_a_turn_reads_twenty_files_in_one_tool_call(make_agent, fake_provider, tmp_path):
    """The bench's shape: one execute_code call instead of twenty read_file calls."""
    for i in range(20):
        (tmp_path / f"m{i:02d}.py").write_text("line\n" * (i + 1))
    script = textwrap.dedent("""
        from hermes_tools import read_file, search_files
        files = sorted(search_files("m*.py", target="files").split())
        print(sum(len(read_file(f).splitlines()) for f in files), "lines in", len(files), "files")
    """)
    fake_provider.queue(tool_calls([("execute_code", {"code": script})]), text("210 lines."))
    result = make_agent().run_conversation("How many lines do the 20 files have?")
    assert result["api_calls"] == 2
    tool_msg = json.loads(result["messages"][2]["content"])
    assert tool_msg["output"] == "210 lines in 20 files\n" and tool_msg["tool_calls"] == 21
