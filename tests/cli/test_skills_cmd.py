"""`hermes skills ...`, `hermes doctor` on a broken skill, and `/<skill>` plus the review in one-shot
runs, as real subprocesses against the loopback provider."""
from __future__ import annotations

import json

from tests.cli.conftest import hermes_env, run_hermes
from tests.fake_provider import text, tool_calls
from tests.test_skill_review import Script, busy_turn
from tests.test_skills_loader import write_skill


def test_list_show_install_remove_history_revert(hermes_home, tmp_path):
    env = hermes_env(NO_COLOR="1", TERM="dumb")
    write_skill(hermes_home / "skills", "bad", "name: [oops")
    res = run_hermes("skills", "list", env=env)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines()[0] == "software-development:"
    assert "  debugging " in res.stdout and "[bundled]" in res.stdout
    assert "skipped:" in res.stderr and "bad/SKILL.md" in res.stderr and "not valid YAML" in res.stderr
    res = run_hermes("skills", "list", "--json", env=env)
    listed = json.loads(res.stdout)
    assert {s["name"] for s in listed} == {"code-review", "debugging", "release-checklist"}
    assert "skipped:" in res.stderr and "bad/SKILL.md" in res.stderr and "not valid YAML" in res.stderr

    src = write_skill(tmp_path / "dl", "pdf-tools", "name: pdf-tools\ndescription: Work with PDFs.",
                      files={"scripts/x.py": "print(1)\n"})
    res = run_hermes("skills", "install", str(src), "--category", "docs", env=env)
    assert res.returncode == 0 and "installed pdf-tools" in res.stdout, res.stderr
    shown = run_hermes("skills", "show", "pdf-tools", env=env).stdout
    assert "description: Work with PDFs." in shown and "files: scripts/x.py" in shown
    again = run_hermes("skills", "install", str(src), env=env)
    assert again.returncode == 1 and again.stderr.startswith("hermes: error:") and "--force" in again.stderr
    assert run_hermes("skills", "remove", "pdf-tools", "--yes", env=env).returncode == 0
    assert not (hermes_home / "skills/docs/pdf-tools").exists()
    hist = run_hermes("skills", "history", "pdf-tools", env=env).stdout
    assert "1  " in hist and "before install by cli  (did not exist)" in hist and "before delete by cli" in hist
    res = run_hermes("skills", "revert", "pdf-tools", env=env)
    assert res.returncode == 0 and "back to version 2" in res.stdout
    assert (hermes_home / "skills/docs/pdf-tools/scripts/x.py").is_file()
    for args, words in ((("skills", "show", "pdf-tool"), "did you mean pdf-tools"),
                        (("skills", "history", "nothing"), "no skill named 'nothing'"),
                        (("skills", "revert", "pdf-tools", "42"), "no saved version 42")):
        res = run_hermes(*args, env=env)
        assert res.returncode == 1 and res.stderr.count("\n") == 1 and words in res.stderr, res.stderr


def test_doctor_names_a_broken_skill(hermes, hermes_home):
    write_skill(hermes_home / "skills", "ok", "name: ok\ndescription: Fine.")
    write_skill(hermes_home / "skills", "devops/broken", "name: broken\ndescription: [x")
    res = hermes("doctor")
    line = next(ln for ln in res.stdout.splitlines() if "skills:" in ln)
    assert line.startswith("✗ skills: 1 skill loaded, 1 skipped:") and "devops/broken/SKILL.md" in line
    assert res.returncode == 1


def test_one_shot_invokes_a_skill_and_leaves_other_slashes_alone(hermes, fake_provider, hermes_home):
    write_skill(hermes_home / "skills", "deploy", "name: deploy\ndescription: Deploy to staging.",
                body="Run make deploy, then check /health.\n", files={"references/hosts.md": "x\n"})
    fake_provider.queue(text("Deployed."), text("It is a file."))
    res = hermes("-z", "/deploy the api service")
    assert res.returncode == 0 and res.stdout == "Deployed.\n", res.stderr
    sent = fake_provider.requests[0]["messages"]
    assert "Run make deploy" not in sent[0]["content"]  # the system prompt is untouched
    user = sent[-1]["content"]
    assert user.startswith('[The user invoked the skill "deploy" with /deploy.')
    assert "Run make deploy, then check /health." in user and user.endswith("the api service")
    assert "references/hosts.md" in user
    res = hermes("chat", "-q", "/etc/hosts: what is it?")
    assert res.returncode == 0
    assert fake_provider.requests[1]["messages"][-1]["content"] == "/etc/hosts: what is it?"


def test_one_shot_review_finishes_after_the_answer_before_exit(hermes, fake_provider, hermes_home):
    script = Script(fake_provider)
    script.main += busy_turn(10, "All done.")
    body = "---\nname: batch-steps\ndescription: Run many small steps in order.\n---\n1. plan\n2. do\n"
    script.review += [tool_calls([("skill_manage", {"action": "create", "name": "batch-steps",
                                                    "content": body, "category": "workflow"})]),
                      text("created")]
    res = hermes("-z", "do the ten steps")
    assert res.returncode == 0, res.stderr
    assert res.stdout == "All done.\n"
    assert "Skill review: created 'batch-steps'" in res.stderr
    assert (hermes_home / "skills/workflow/batch-steps/SKILL.md").read_text() == body
    assert len(script.review_requests) == 2


def test_an_alias_bomb_is_skipped_turns_still_work_and_doctor_names_it(fake_provider, hermes_home):
    """Issue 20 item 6, end to end under a 3 GB address-space limit: the skill is never expanded."""
    import resource
    import subprocess
    import sys

    from tests.cli.conftest import ROOT
    from tests.test_skills_loader import alias_bomb

    write_skill(hermes_home / "skills", "tools/bomb", alias_bomb())
    env = hermes_env(fake_provider)

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    def hermes(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "hermes_cli.main", *args], env=env, cwd=ROOT,
                              capture_output=True, text=True, timeout=120, preexec_fn=limited)

    fake_provider.queue(text("still here"))
    res = hermes("-z", "hello")
    assert res.returncode == 0 and res.stdout == "still here\n", res.stderr[-2000:]
    assert "MemoryError" not in res.stderr
    doc = hermes("doctor")
    line = next(ln for ln in doc.stdout.splitlines() if "skills:" in ln)
    assert "tools/bomb/SKILL.md" in line and "anchors and aliases" in line, doc.stdout
