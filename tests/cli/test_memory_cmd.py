"""Memory, toolsets and the prompt breakdown from the real `hermes` command (subprocesses)."""
from __future__ import annotations

import json
import sys

from tests.conftest import write_config
from tests.fake_provider import text, tool_calls


def memory_file(home, name="MEMORY.md"):
    return home / "memories" / name


def test_z_saves_memory_and_the_next_session_sees_it(hermes, fake_provider, hermes_home):
    fake_provider.queue(
        tool_calls([("memory", {"target": "user", "action": "add", "content": "Name: Ada; prefers tea"})]),
        text("Noted, Ada."))
    out = hermes("-z", "I am Ada and I like tea")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "Noted, Ada."
    assert memory_file(hermes_home, "USER.md").read_text() == "Name: Ada; prefers tea\n"
    fake_provider.queue(text("Hello Ada"))
    assert hermes("-z", "who am I?").returncode == 0
    system = fake_provider.requests[-1]["messages"][0]["content"]
    assert "Name: Ada; prefers tea" in system


def test_memory_show_edit_clear(hermes, hermes_home, tmp_path):
    memory_file(hermes_home).parent.mkdir()
    memory_file(hermes_home).write_text("Repo uses tabs\n§\nCI runs on push")
    out = hermes("memory", "show")
    assert out.returncode == 0
    assert "Repo uses tabs" in out.stdout and "(32/2,200 chars)" in out.stdout and "user —" in out.stdout
    data = json.loads(hermes("memory", "show", "memory", "--json").stdout)
    assert [e["text"] for e in data["memory"]["entries"]] == ["Repo uses tabs", "CI runs on push"]

    editor = tmp_path / "editor.py"
    editor.write_text("import sys, pathlib\np = pathlib.Path(sys.argv[1])\n"
                      "p.write_text(p.read_text() + '\\n§\\nAdded in the editor')\n")
    out = hermes("memory", "edit", "memory", env={**hermes.env, "EDITOR": f"{sys.executable} {editor}"})
    assert out.returncode == 0, out.stderr
    assert "3 entries" in out.stdout
    assert memory_file(hermes_home).read_text().endswith("§\nAdded in the editor\n")

    out = hermes("memory", "clear")  # no terminal to ask: refuses, keeps the file
    assert out.returncode == 1 and "--yes" in out.stderr and "3 entries" in out.stderr
    assert "Repo uses tabs" in memory_file(hermes_home).read_text()
    out = hermes("memory", "clear", "memory", "--yes")
    assert out.returncode == 0 and "Cleared MEMORY.md (3 entries)" in out.stdout
    assert memory_file(hermes_home).read_text() == ""


def test_edit_that_breaks_the_format_leaves_the_file_alone(hermes, hermes_home, tmp_path):
    memory_file(hermes_home).parent.mkdir()
    memory_file(hermes_home).write_text("one\n§\ntwo")
    editor = tmp_path / "editor.py"
    editor.write_text("import sys, pathlib\npathlib.Path(sys.argv[1]).write_text('one\\n§ \\ntwo')\n")
    out = hermes("memory", "edit", env={**hermes.env, "EDITOR": f"{sys.executable} {editor}"})
    assert out.returncode == 1 and "line 2" in out.stderr and "your edit is in" in out.stderr
    assert memory_file(hermes_home).read_text() == "one\n§\ntwo"


def test_show_names_an_unreadable_file(hermes, hermes_home):
    memory_file(hermes_home, "USER.md").parent.mkdir()
    memory_file(hermes_home, "USER.md").write_bytes(b"\xff\xfe\x00")
    out = hermes("memory", "show")
    assert out.returncode == 1 and "USER.md" in out.stderr and "hermes memory edit user" in out.stderr
    assert "memory —" in out.stdout  # the readable store is still shown


def test_unknown_toolset_is_a_clear_start_up_error(hermes, fake_provider, hermes_home):
    out = hermes("-t", "terminal,bogus", "-z", "hi")
    assert out.returncode == 2
    assert "unknown toolset 'bogus'" in out.stderr and "valid toolsets: terminal, file" in out.stderr
    write_config(hermes_home, "toolsets: [filez]\n")
    out = hermes("-z", "hi")
    assert out.returncode == 2 and "`toolsets`" in out.stderr and "'filez'" in out.stderr
    assert fake_provider.requests == []


def test_toolsets_from_flag_and_config(hermes, fake_provider, hermes_home):
    hermes("-t", "file", "-z", "hi")
    assert {t["function"]["name"] for t in fake_provider.requests[-1]["tools"]} == {
        "read_file", "write_file", "patch", "search_files"}
    write_config(hermes_home, "toolsets:\n  disabled: [terminal, file]\n")
    hermes("-z", "hi")
    names = {t["function"]["name"] for t in fake_provider.requests[-1]["tools"]}
    assert "terminal" not in names and "read_file" not in names and "todo" in names


def test_config_show_prompt_prints_the_breakdown(hermes, hermes_home):
    (hermes_home / "SOUL.md").write_text("You are a terse assistant. " * 20)
    out = hermes("config", "show", "--prompt")
    assert out.returncode == 0, out.stderr
    rows = {line.split()[0]: line.split()[1] for line in out.stdout.splitlines()[1:]}
    assert int(rows["identity"]) > 100 and "tools:terminal" in rows and "tools:memory" in rows
    assert "target 4,000" in out.stdout
    assert not (hermes_home / "state.db").exists()  # a preview stores nothing
