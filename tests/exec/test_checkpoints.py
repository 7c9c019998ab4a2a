"""Checkpoints: a shadow git repo per working dir, taken before each turn's first change;
/rollback, `hermes checkpoints list|diff|restore`."""
from __future__ import annotations

import hashlib
import io
import subprocess
from pathlib import Path

import pytest

from hermes_core.config import parse_config
from tests.cli.conftest import hermes_env, run_hermes
from tests.fake_provider import text, tool_calls
from tools.checkpoints.store import ShadowRepo, exclude_lines, parse_log
from tools.registry import ToolContext, dispatch


def shadow(hermes_home: Path, work: Path, **kw) -> ShadowRepo:
    return ShadowRepo(hermes_home, work, **kw)


def tree_of(repo: ShadowRepo, commit: str) -> dict[str, str]:
    """path -> content of a checkpoint."""
    names = repo.git("ls-tree", "-r", "--name-only", commit).split()
    return {n: repo.git("show", f"{commit}:{n}") for n in names}


def digest(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            h.update(str(p).encode() + p.read_bytes())
    return h.hexdigest()


@pytest.fixture
def work(tmp_path):
    w = tmp_path / "work"
    w.mkdir()
    (w / "a.txt").write_text("original\n")
    return w


def test_one_checkpoint_before_the_first_change_of_each_turn(make_agent, fake_provider, work,
                                                              hermes_home):
    fake_provider.queue(
        tool_calls([("write_file", {"path": "a.txt", "content": "first change\n"})]),
        tool_calls([("patch", {"path": "a.txt", "old_string": "first", "new_string": "1st"}),
                    ("write_file", {"path": "b.txt", "content": "new\n"})]),
        text("done"),
        tool_calls([("write_file", {"path": "a.txt", "content": "turn two\n"})]), text("done"))
    agent = make_agent(cwd=str(work))
    agent.run_conversation("change things")
    repo = shadow(hermes_home, work)
    items = repo.list()
    assert len(items) == 1 and "before a file change (a.txt)" in items[0].message
    assert agent.session_id in items[0].message
    assert tree_of(repo, items[0].commit) == {"a.txt": "original\n"}
    agent.run_conversation("again")
    items = repo.list()
    assert len(items) == 2
    assert tree_of(repo, items[0].commit) == {"a.txt": "1st change\n", "b.txt": "new\n"}


def test_shell_commands_in_the_working_dir_count_as_a_change(work, hermes_home, tmp_path):
    ctx = ToolContext(cwd=work, config=parse_config({}), session_id="t")
    dispatch("terminal", {"command": "echo changed > a.txt"}, ctx)
    repo = shadow(hermes_home, work)
    assert [c.message for c in repo.list()] == ["before a shell command [session t]"]
    assert tree_of(repo, repo.list()[0].commit)["a.txt"] == "original\n"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ctx.turn = {}
    dispatch("terminal", {"command": "true", "workdir": str(elsewhere)}, ctx)
    assert len(repo.list()) == 1  # outside the working dir: nothing to checkpoint
    off = ToolContext(cwd=work, config=parse_config({"checkpoints": {"enabled": False}}))
    dispatch("write_file", {"path": "a.txt", "content": "x"}, off)
    assert len(repo.list()) == 1


def test_the_users_git_is_untouched_and_ignores_are_honoured(work, hermes_home):
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    subprocess.run(["git", "-C", str(work), "add", "a.txt"], check=True)
    (work / ".gitignore").write_text("build/\n")
    (work / "build").mkdir()
    (work / "build" / "out.bin").write_text("artefact")
    before = digest(work / ".git")
    repo = shadow(hermes_home, work)
    first = repo.snapshot("one")
    assert digest(work / ".git") == before
    assert set(tree_of(repo, first.commit)) == {".gitignore", "a.txt"}
    assert repo.snapshot("nothing changed").commit == first.commit


def test_hermes_home_inside_the_working_dir_is_never_copied(tmp_path):
    home = tmp_path / "hermes_home"
    assert "/hermes_home/" in exclude_lines(tmp_path, home)
    (home / ".env").parent.mkdir(exist_ok=True)
    (home / ".env").write_text("KEY=secret")
    (tmp_path / "code.py").write_text("print(1)")
    repo = ShadowRepo(home, tmp_path)
    names = set(tree_of(repo, repo.snapshot("x").commit))
    assert names == {"code.py"}


def test_big_directories_are_not_checkpointed(work, hermes_home):
    for i in range(5):
        (work / f"f{i}").write_text("x")
    ctx = ToolContext(cwd=work, config=parse_config({"checkpoints": {"max_files": 3}}))
    dispatch("write_file", {"path": "a.txt", "content": "y"}, ctx)
    assert shadow(hermes_home, work).list() == []
    ctx = ToolContext(cwd=work, config=parse_config({"checkpoints": {"max_bytes": 5}}))
    dispatch("write_file", {"path": "a.txt", "content": "much more than five bytes"}, ctx)
    assert shadow(hermes_home, work).list() == []


def test_restore_previews_saves_the_present_and_is_itself_a_checkpoint(work, hermes_home):
    repo = shadow(hermes_home, work)
    first = repo.snapshot("first")
    (work / "a.txt").write_text("edited\n")
    (work / "sub").mkdir()
    (work / "sub" / "new.txt").write_text("added later\n")
    preview = repo.diff("1")
    assert "-edited\n+original" in preview and "sub/new.txt" in preview
    assert (work / "a.txt").read_text() == "edited\n"  # a preview changes nothing
    before, after = repo.restore(first.short)
    assert (work / "a.txt").read_text() == "original\n" and not (work / "sub").exists()
    assert after.message.startswith(f"restored {first.short}")
    assert tree_of(repo, before.commit)["sub/new.txt"] == "added later\n"
    repo.restore(before.short)  # the restore can be undone
    assert (work / "sub" / "new.txt").read_text() == "added later\n"
    assert [c.message.split()[0] for c in repo.list()][:2] == ["restored", "restored"]


def test_parse_log_is_tolerant():
    items = parse_log("abc\x1f12\x1fone\njunk\n")
    assert [(c.commit, c.when, c.message) for c in items] == [("abc", 12, "one")]


def test_hermes_checkpoints_list_diff_restore(work, hermes_home):
    repo = shadow(hermes_home, work)
    repo.snapshot("before a file change (a.txt)")
    (work / "a.txt").write_text("changed\n")
    env = hermes_env()
    listed = run_hermes("checkpoints", "list", "--dir", str(work), env=env)
    assert listed.returncode == 0 and "before a file change" in listed.stdout
    diff = run_hermes("checkpoints", "diff", "1", "--dir", str(work), env=env)
    assert "-changed\n+original" in diff.stdout
    refused = run_hermes("checkpoints", "restore", "1", "--dir", str(work), env=env)
    assert refused.returncode == 1 and "add --yes" in refused.stderr
    assert (work / "a.txt").read_text() == "changed\n"
    done = run_hermes("checkpoints", "restore", "1", "--yes", "--dir", str(work), env=env)
    assert done.returncode == 0 and "undoes this" in done.stdout
    assert (work / "a.txt").read_text() == "original\n"
    bad = run_hermes("checkpoints", "diff", "zzzz", "--dir", str(work), env=env)
    assert bad.returncode == 1 and "names no checkpoint" in bad.stderr


def test_slash_rollback_lists_previews_and_asks(make_agent, work, hermes_home):
    from hermes_cli.chat import ChatSession
    from hermes_cli.render import Renderer

    repo = shadow(hermes_home, work)
    repo.snapshot("first")
    (work / "a.txt").write_text("mistake\n")
    out = io.StringIO()
    answers = ["deny", "once"]
    chat = ChatSession(lambda sid: make_agent(cwd=str(work)), Renderer(out=out, spinner=False),
                       ask_approval=lambda q, why: answers.pop(0))
    chat.handle_line("/rollback")
    assert "Checkpoints of" in out.getvalue() and "first" in out.getvalue()
    chat.handle_line("/rollback 1")
    assert "-mistake" in out.getvalue() and "Not restored." in out.getvalue()
    assert (work / "a.txt").read_text() == "mistake\n"
    chat.handle_line("/rollback 1")
    assert (work / "a.txt").read_text() == "original\n" and "Restored" in out.getvalue()
    chat.handle_line("/rollback 1")
    assert "Nothing to restore" in out.getvalue()
