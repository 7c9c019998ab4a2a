"""Skills, the pure parts: SKILL.md parsing and validation, close names and near duplicates, the
prompt index within its budget, what a turn did with skills, and `/<skill>` parsing."""
from __future__ import annotations

import json

import pytest

from tools.skills import activity, index, invoke, similar
from tools.skills import format as fmt
from hermes_core.tokens import estimate_text_tokens
from hermes_cli import slash

GOOD = "---\nname: deploy-app\ndescription: Deploy the app to staging.\n---\n# Deploy\n1. build\n"


def test_front_matter_of_the_agent_skills_format_with_hermes_metadata():
    text = ("---\nname: axolotl\ndescription: >\n  Fine-tune models\n  with axolotl.\nversion: 1.2.0\n"
            "license: MIT\nplatforms: [linux, macos]\nmetadata:\n  hermes:\n    tags: [ml, training]\n"
            "    related_skills: [vllm]\nauthor: someone\n---\nBody here\n")
    meta, body = fmt.parse(text)
    assert (meta.name, meta.description) == ("axolotl", "Fine-tune models with axolotl.")
    assert meta.tags == ["ml", "training"] and meta.related == ["vllm"]
    assert meta.platforms == ["linux", "macos"] and meta.raw["author"] == "someone"
    assert body == "Body here\n"
    assert fmt.runs_here(meta, "linux") and fmt.runs_here(meta, "darwin")
    assert not fmt.runs_here(meta, "win32")
    assert fmt.runs_here(fmt.parse("---\nname: x\nplatforms: [cli]\n---\n")[0], "win32")  # unknown: ignored


@pytest.mark.parametrize("text, words", [
    ("no front matter\n", "no front matter"),
    ("---\nname: x\n", "not closed"),
    ("---\nname: [unclosed\ndescription: y\n---\nbody\n", "not valid YAML at line"),
    ("---\n- a\n- b\n---\nbody\n", "must be a mapping"),
])
def test_broken_front_matter_is_a_clear_error(text, words):
    with pytest.raises(fmt.SkillFormatError, match=words):
        fmt.parse(text)


@pytest.mark.parametrize("text, name, words", [
    (GOOD, "deploy-app", None),
    (GOOD, "other", "must match"),
    (GOOD.replace("name: deploy-app", "name: ../evil"), None, "invalid name"),
    (GOOD.replace("name: deploy-app", "name: Deploy"), None, "invalid name"),
    (GOOD.replace("name: deploy-app", "name: " + "a" * 65), None, "limit is 64"),
    (GOOD.replace("description: Deploy the app to staging.", "description: " + "d" * 1025), None,
     "limit is 1024"),
    (GOOD.replace("description: Deploy the app to staging.\n", ""), None, "no description"),
    ("---\nname: deploy-app\ndescription: x\n---\n  \n", None, "no instructions"),
    (GOOD + "x" * fmt.MAX_SKILL_BYTES, None, "the limit is"),
    (GOOD + "\x00", None, "NUL"),
])
def test_what_the_agent_may_write(text, name, words):
    if words is None:
        assert fmt.check_skill_text(text, name).name == "deploy-app"
    else:
        with pytest.raises(fmt.SkillFormatError, match=words):
            fmt.check_skill_text(text, name)


def test_names_and_text():
    assert fmt.name_problem("a.b_c-1") is None
    for bad in ("", "-x", ".hidden", "a/b", "../x", "A", "x y"):
        assert fmt.name_problem(bad)
    assert fmt.is_text("héllo\tworld\n".encode())
    assert not fmt.is_text(b"\x89PNG\r\n\x1a\n\x00\x00")
    assert not fmt.is_text(b"\xff\xfe bad utf8")


def test_close_names_and_near_duplicates():
    names = ["code-review", "debugging", "release-checklist"]
    assert similar.close_names("debuging", names) == ["debugging"]
    assert similar.close_names("review", names) == ["code-review"]
    assert similar.close_names("zzz", names) == []
    existing = [("code-review", "Review a change before it merges."), ("debugging", "Find bugs.")]
    assert similar.near_duplicate("code_review", "anything", existing)[0] == "code-review"
    assert similar.near_duplicate("code-reviews", "anything", existing)[0] == "code-review"
    assert similar.near_duplicate("pr-check", "Review a change before it merges!", existing) == \
        ("code-review", "its description says nearly the same")
    assert similar.near_duplicate("docker-build", "Build the docker image.", existing) is None
    deploy = [("deploy-staging", "Deploy the app to staging.")]
    assert similar.near_duplicate("ship", "Deploy the app to the staging servers.", deploy)
    assert similar.near_duplicate("deploy-prod", "Deploy the app to production.", deploy) is None


def _entries(n: int) -> list[tuple]:
    return [(f"cat{i % 7}" if i % 5 else None, f"skill-{i:04d}", f"Does thing number {i} well. " * 3)
            for i in range(n)]


def test_index_groups_by_category_and_is_deterministic():
    entries = [("devops", "deploy", "Deploy it.\nSecond line ignored? no: one line."),
               (None, "notes", "Take notes."), ("devops", "backup", "Back up the database.")]
    text = index.render(entries)
    assert text == index.render(list(reversed(entries)))
    lines = text.splitlines()
    assert lines[2:] == ["devops:", "- backup: Back up the database.",
                         "- deploy: Deploy it. Second line ignored? no: one line.", "other:", "- notes: Take notes."]
    assert index.render([]) == "" and index.render(entries, budget=0) == ""


@pytest.mark.parametrize("n", [10, 200, 1000])
def test_index_stays_within_its_budget(n):
    budget = 1000
    text = index.render(_entries(n), budget)
    assert estimate_text_tokens(text) <= budget
    assert text.startswith(index.HEAD)
    if n == 10:
        assert "- skill-0003: Does thing number 3" in text  # descriptions while they fit
    else:
        assert "Does thing" not in text and "skills_list" in text  # names only past the budget
    if n == 1000:
        shown = sum(text.count(f"skill-{i:04d}") for i in range(n))
        assert f"(and {n - shown} more: skills_list(category) lists them)" in text
        assert 0 < shown < n


def test_a_tiny_budget_gives_no_index_rather_than_one_over_budget():
    assert index.render(_entries(50), budget=10) == ""


def _call(cid, name, args):
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def test_activity_of_a_turn():
    msgs = [
        {"role": "user", "content": "earlier"},
        {"role": "assistant", "tool_calls": [_call("0", "terminal", {"command": "ls"})]},
        {"role": "tool", "tool_call_id": "0", "content": "x"},
        {"role": "user", "content": "now"},
        {"role": "assistant", "content": None, "tool_calls": [
            _call("1", "skill_view", {"name": "debugging"}), _call("2", "terminal", {"command": "pytest"}),
            _call("3", "skill_manage", {"action": "patch", "name": "debugging"}),
            _call("4", "skill_manage", {"action": "create", "name": "dup"})]},
        {"role": "tool", "tool_call_id": "1", "content": "{}"},
        {"role": "tool", "tool_call_id": "2", "content": "ok"},
        {"role": "tool", "tool_call_id": "3", "content": json.dumps({"ok": True, "message": "patched"})},
        {"role": "tool", "tool_call_id": "4", "content": json.dumps({"error": "exists"})},
        {"role": "assistant", "tool_calls": [_call("5", "skill_view", {"name": "debugging"}),
                                             _call("6", "read_file", {"path": "a"})]},
        {"role": "tool", "tool_call_id": "5", "content": "{}"},
        {"role": "tool", "tool_call_id": "6", "content": "{}"},
        {"role": "assistant", "content": "done"},
    ]
    turn = activity.activity(activity.last_turn(msgs))
    assert turn.tool_calls == 6 and turn.calls_after_write == 3
    assert turn.viewed == ["debugging"] and turn.written == [("patch", "debugging")]
    assert activity.outcome_line(turn.written).startswith("Skill review: patched 'debugging'")
    assert activity.outcome_line([]) is None
    digest = activity.digest(msgs, limit=250)
    assert digest.startswith("[... earlier messages left out ...]") and digest.endswith("ASSISTANT: done")
    assert len(digest) <= 250 + 40


def test_slash_invocation_parsing():
    assert invoke.split("/code-review look at HEAD") == ("code-review", "look at HEAD")
    assert invoke.split("/code_review@hermes_bot\nmulti\nline") == ("code_review", "multi\nline")
    assert invoke.split("/deploy") == ("deploy", "")
    assert invoke.split("//deploy literal") is None
    assert invoke.split("/etc/hosts is odd") is None
    assert invoke.split("hello /deploy") is None


def test_skills_in_slash_completion_and_help():
    skills = [("deploy", "Deploy it."), ("help", "a skill shadowed by the command")]
    assert ("/deploy", "Deploy it.") in slash.completions("/de", skills)
    assert [c for c, _ in slash.completions("/he", skills)] == ["/help"]
    lines = slash.help_lines(skills)
    assert any("/deploy [text]" in line and "Deploy it." in line for line in lines)
    assert not any("shadowed" in line for line in lines)
    many = [(f"s{i}", "d") for i in range(40)]
    assert any("and 10 more" in line for line in slash.help_lines(many))
