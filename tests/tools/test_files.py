"""File tools against a real temp directory."""

from __future__ import annotations

import pytest

from tools.registry import ToolContext, ToolError, dispatch


@pytest.fixture
def ctx(tmp_path):
    return ToolContext(cwd=tmp_path)


def call(ctx, tool, **args):
    return dispatch(tool, args, ctx)


# --- read_file -----------------------------------------------------------------------------


def test_read_numbers_lines(ctx, tmp_path):
    (tmp_path / "a.txt").write_text("alpha\nbeta\ngamma\n")
    assert call(ctx, "read_file", path="a.txt") == "    1|alpha\n    2|beta\n    3|gamma"


def test_read_offset_limit_and_continuation_hint(ctx, tmp_path):
    (tmp_path / "big.txt").write_text("".join(f"line {i}\n" for i in range(1, 31)))
    out = call(ctx, "read_file", path="big.txt", offset=11, limit=5)
    lines = out.splitlines()
    assert lines[0] == "   11|line 11"
    assert lines[4] == "   15|line 15"
    assert "lines 11-15 of 30" in lines[5] and "offset=16" in lines[5]
    tail = call(ctx, "read_file", path="big.txt", offset=26)
    assert tail.splitlines()[-1] == "   30|line 30"
    assert "more" not in tail
    assert "only 30 lines" in call(ctx, "read_file", path="big.txt", offset=99)


def test_read_default_limit_is_500(ctx, tmp_path):
    (tmp_path / "long.txt").write_text("x\n" * 700)
    out = call(ctx, "read_file", path="long.txt")
    assert "  500|x" in out and "  501|x" not in out
    assert "200 more" in out and "offset=501" in out


def test_read_truncates_very_long_lines(ctx, tmp_path):
    (tmp_path / "min.js").write_text("z" * 10_000 + "\n")
    out = call(ctx, "read_file", path="min.js")
    assert "line truncated, 10,000 chars" in out and len(out) < 3000


def test_read_empty_file(ctx, tmp_path):
    (tmp_path / "e.txt").write_text("")
    assert "empty" in call(ctx, "read_file", path="e.txt")


def test_read_refuses_binary(ctx, tmp_path):
    (tmp_path / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with pytest.raises(ToolError, match="binary"):
        call(ctx, "read_file", path="img.png")
    (tmp_path / "latin.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    with pytest.raises(ToolError, match="not UTF-8"):
        call(ctx, "read_file", path="latin.txt")


def test_read_missing_suggests_similar(ctx, tmp_path):
    (tmp_path / "config.yaml").write_text("a: 1\n")
    with pytest.raises(ToolError) as err:
        call(ctx, "read_file", path="config.yml")
    assert "not found" in str(err.value) and "config.yaml" in str(err.value)
    with pytest.raises(ToolError, match="does not exist"):
        call(ctx, "read_file", path="nodir/x.txt")


def test_read_directory_is_an_error(ctx, tmp_path):
    (tmp_path / "d").mkdir()
    with pytest.raises(ToolError, match="directory"):
        call(ctx, "read_file", path="d")


def test_outside_cwd_is_noted(tmp_path):
    inside = tmp_path / "work"
    inside.mkdir()
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("hi\n")
    ctx = ToolContext(cwd=inside)
    out = call(ctx, "read_file", path=str(outside))
    assert f"(note: {outside} is outside the working directory {inside})" in out
    assert "    1|hi" in out
    out = call(ctx, "read_file", path="../elsewhere.txt")
    assert "outside the working directory" in out
    (inside / "in.txt").write_text("x\n")
    assert "note" not in call(ctx, "read_file", path="in.txt")
    assert "outside" in call(ctx, "write_file", path="../new.txt", content="x")


# --- write_file ----------------------------------------------------------------------------


def test_write_creates_parents_and_reports_bytes(ctx, tmp_path):
    out = call(ctx, "write_file", path="deep/er/f.txt", content="héllo\n")
    assert (tmp_path / "deep/er/f.txt").read_text(encoding="utf-8") == "héllo\n"
    assert "7 bytes" in out and "created" in out
    out = call(ctx, "write_file", path="deep/er/f.txt", content="")
    assert "overwrote" in out and "0 bytes" in out
    assert (tmp_path / "deep/er/f.txt").read_text() == ""


# --- patch ---------------------------------------------------------------------------------


def test_patch_unique_returns_diff(ctx, tmp_path):
    f = tmp_path / "m.py"
    f.write_text("def f():\n    return 1\n\ndef g():\n    return 2\n")
    out = call(ctx, "patch", path="m.py", old_string="    return 2", new_string="    return 3")
    assert f.read_text() == "def f():\n    return 1\n\ndef g():\n    return 3\n"
    assert "--- a/m.py" in out and "+++ b/m.py" in out
    assert "-    return 2" in out and "+    return 3" in out


def test_patch_ambiguous(ctx, tmp_path):
    f = tmp_path / "m.py"
    f.write_text("x = 1\nx = 1\nx = 1\n")
    with pytest.raises(ToolError) as err:
        call(ctx, "patch", path="m.py", old_string="x = 1", new_string="x = 2")
    assert "3 places" in str(err.value) and "context" in str(err.value)
    assert f.read_text() == "x = 1\nx = 1\nx = 1\n"
    out = call(ctx, "patch", path="m.py", old_string="x = 1", new_string="x = 2", replace_all=True)
    assert f.read_text() == "x = 2\nx = 2\nx = 2\n"
    assert "3 occurrences" in out


def test_patch_not_found_shows_closest(ctx, tmp_path):
    f = tmp_path / "m.py"
    f.write_text("import os\n\ndef handler(event, context):\n    pass\n")
    with pytest.raises(ToolError) as err:
        call(ctx, "patch", path="m.py", old_string="def handler(evt, context):", new_string="x")
    msg = str(err.value)
    assert "not found" in msg and "line 3" in msg and "def handler(event, context):" in msg


def test_patch_guards(ctx, tmp_path):
    (tmp_path / "m.txt").write_text("abc\n")
    with pytest.raises(ToolError, match="empty"):
        call(ctx, "patch", path="m.txt", old_string="", new_string="x")
    with pytest.raises(ToolError, match="identical"):
        call(ctx, "patch", path="m.txt", old_string="abc", new_string="abc")
    with pytest.raises(ToolError, match="not found"):
        call(ctx, "patch", path="nope.txt", old_string="a", new_string="b")


def test_patch_keeps_crlf(ctx, tmp_path):
    f = tmp_path / "w.txt"
    f.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    call(ctx, "patch", path="w.txt", old_string="one\ntwo", new_string="one\n2")
    assert f.read_bytes() == b"one\r\n2\r\nthree\r\n"


# --- search_files --------------------------------------------------------------------------


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src/app.py").write_text("import os\n\ndef main():\n    print('TODO: fix')\n")
    (tmp_path / "src/util.py").write_text("# TODO later\nX = 1\n")
    (tmp_path / "README.md").write_text("TODO: docs\n")
    (tmp_path / "blob.bin").write_bytes(b"TODO\x00\x01\x02")
    for skipped in (".git", "node_modules", ".venv"):
        (tmp_path / skipped).mkdir()
        (tmp_path / skipped / "x.py").write_text("TODO hidden\n")
    return tmp_path


def test_search_content(ctx, tree):
    out = call(ctx, "search_files", pattern=r"TODO")
    lines = sorted(out.splitlines())
    assert lines == [
        "README.md:1: TODO: docs",
        "src/app.py:4: print('TODO: fix')",
        "src/util.py:1: # TODO later",
    ]


def test_search_content_glob_path_and_regex(ctx, tree):
    assert call(ctx, "search_files", pattern="TODO", glob="*.md") == "README.md:1: TODO: docs"
    out = call(ctx, "search_files", pattern=r"^def \w+\(", path="src")
    assert out == "src/app.py:3: def main():"
    assert call(ctx, "search_files", pattern="todo", path="README.md", ignore_case=True) == "README.md:1: TODO: docs"
    assert "no matches" in call(ctx, "search_files", pattern="nothing-like-this")
    with pytest.raises(ToolError, match="invalid regex"):
        call(ctx, "search_files", pattern="(unclosed")


def test_search_max_results(ctx, tree):
    out = call(ctx, "search_files", pattern="TODO", max_results=2)
    lines = out.splitlines()
    assert len(lines) == 3 and "stopped at 2" in lines[-1]


def test_search_file_names(ctx, tree):
    out = call(ctx, "search_files", pattern="*.py", target="files")
    assert sorted(out.splitlines()) == ["src/app.py", "src/util.py"]
    assert call(ctx, "search_files", pattern="util", target="files") == "src/util.py"
    assert "no files" in call(ctx, "search_files", pattern="*.rs", target="files")


def test_search_outside_cwd_is_noted(tmp_path, tree):
    ctx = ToolContext(cwd=tmp_path / "src")
    out = call(ctx, "search_files", pattern="docs", path=str(tmp_path))
    assert "outside the working directory" in out
    assert f"{tmp_path / 'README.md'}:1: TODO: docs" in out


# --- writes to sensitive places ask first ----------------------------------------------------


@pytest.fixture
def fake_home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    return home


def test_write_to_ssh_without_approval_is_denied_and_nothing_is_written(ctx, fake_home):
    with pytest.raises(ToolError, match="denied.*~/.ssh"):
        call(ctx, "write_file", path=str(fake_home / ".ssh" / "authorized_keys"), content="ssh-rsa AAAA attacker")
    assert not (fake_home / ".ssh" / "authorized_keys").exists()


def test_write_and_patch_of_shell_startup_ask_the_user(tmp_path, fake_home):
    asked = []
    ctx = ToolContext(cwd=tmp_path, approval_callback=lambda cmd, why: asked.append((cmd, why)) or "once")
    rc = fake_home / ".bashrc"
    assert "wrote" in call(ctx, "write_file", path=str(rc), content="export A=1\n")
    deny = ToolContext(cwd=tmp_path, approval_callback=lambda cmd, why: "deny")
    with pytest.raises(ToolError, match="denied"):
        call(deny, "patch", path=str(rc), old_string="A=1", new_string="A=2")
    assert rc.read_text() == "export A=1\n"
    assert len(asked) == 1 and "bashrc" in asked[0][1]


def test_ordinary_writes_need_no_approval(ctx, fake_home):
    # ctx has no approval callback: anything that needed approval would be denied
    assert "wrote" in call(ctx, "write_file", path=str(fake_home / "notes.txt"), content="x")
    assert "wrote" in call(ctx, "write_file", path=str(fake_home / ".config" / "app.toml"), content="x")
