"""The skill tools driven by a model (the loopback provider scripts the calls) through a real agent:
the index in the prompt, skills_list, skill_view (SKILL.md, a file, unknown names, escapes) and
skill_manage, and the prompt budget of the toolset."""
from __future__ import annotations

import json

from hermes_core.tokens import estimate_text_tokens
from tests.fake_provider import text, tool_calls
from tests.test_skills_loader import write_skill
from tools.registry import get_tool_definitions


def tool_results(request: dict) -> list[dict]:
    return [json.loads(m["content"]) for m in request["messages"] if m["role"] == "tool"]


def system_prompt(request: dict) -> str:
    return request["messages"][0]["content"]


def test_schemas_and_bundled_index_within_their_prompt_budget(make_agent, fake_provider):
    defs = [d for d in get_tool_definitions(enabled_toolsets=["skills"])]
    assert sorted(d["function"]["name"] for d in defs) == ["skill_manage", "skill_view", "skills_list"]
    assert sum(len(json.dumps(d)) for d in defs) / 4 <= 450
    agent = make_agent()
    agent.chat("hi")
    prompt = system_prompt(fake_provider.requests[0])
    part = prompt[prompt.index("## Skills"):].split("\n\n")[0]
    assert "- debugging: Find the root cause" in part and estimate_text_tokens(part) <= 150


def test_the_model_lists_views_and_follows_a_skill(make_agent, fake_provider, hermes_home):
    write_skill(hermes_home / "skills", "devops/deploy",
                "name: deploy\ndescription: Deploy to staging.\nmetadata:\n  hermes:\n    tags: [ops]",
                body="Run make deploy.\nSee references/hosts.md.\n",
                files={"references/hosts.md": "staging: 10.0.0.2\n", "assets/logo.png": b"\x89PNG\x00\x01"})
    fake_provider.queue(
        tool_calls([("skills_list", {"category": "devops"}), ("skill_view", {"name": "deploy"}),
                    ("skill_view", {"name": "deploy", "file_path": "references/hosts.md"}),
                    ("skill_view", {"name": "deploy", "file_path": "assets/logo.png"}),
                    ("skill_view", {"name": "deploy", "file_path": "../../config.yaml"}),
                    ("skill_view", {"name": "deploi"}),
                    ("skills_list", {"category": "nope"})]),
        text("deployed"))
    agent = make_agent()
    assert agent.chat("deploy please") == "deployed"
    listed, viewed, hosts, logo, escape, unknown, bad_cat = tool_results(fake_provider.requests[1])
    assert listed["skills"] == [{"name": "deploy", "category": "devops", "description": "Deploy to staging."}]
    assert "Run make deploy." in viewed["content"] and viewed["files"] == ["assets/logo.png",
                                                                           "references/hosts.md"]
    assert hosts["content"] == "staging: 10.0.0.2\n"
    assert "binary file" in logo["content"]
    assert "relative path inside" in escape["error"]
    assert "no skill named 'deploi'; did you mean deploy?" in unknown["error"]
    assert "no category 'nope'; categories: devops, software-development" in bad_cat["error"]
    assert "devops:\n- deploy: Deploy to staging." in system_prompt(fake_provider.requests[0])


def test_the_agent_writes_a_skill_and_the_session_prompt_stays_byte_stable(make_agent, fake_provider,
                                                                            hermes_home):
    body = "---\nname: flaky-tests\ndescription: Tame flaky pytest tests.\n---\n1. Run with -p no:randomly\n"
    fake_provider.queue(
        tool_calls([("skill_manage", {"action": "create", "name": "flaky-tests", "content": body,
                                      "category": "testing"})]),
        text("saved"),
        tool_calls([("skill_manage", {"action": "patch", "name": "flaky-tests",
                                      "old_string": "-p no:randomly", "new_string": "-p no:randomly -x"}),
                    ("skill_manage", {"action": "create", "name": "flaky-test",
                                      "content": body.replace("flaky-tests", "flaky-test")}),
                    ("skill_manage", {"action": "patch", "name": "flaky-tests", "old_string": "1.",
                                      "new_string": "1)", "file_path": "../SKILL.md"}),
                    ("skill_manage", {"action": "delete", "name": "code-review"}),
                    ("skill_manage", {"action": "write_file", "name": "flaky-tests"})]),
        text("patched"))
    agent = make_agent()
    assert agent.chat("remember how to tame flaky tests") == "saved"
    created = tool_results(fake_provider.requests[1])[0]
    assert created["ok"] and created["path"].endswith("skills/testing/flaky-tests")
    assert agent.chat("improve it") == "patched"
    patched, dup, escape, deleted, missing = tool_results(fake_provider.requests[3])[1:]
    assert patched["ok"] and "hermes skills history flaky-tests" in patched["message"]
    assert "already covers this" in dup["error"] and "action='patch', name='flaky-tests'" in dup["error"]
    assert "relative path inside" in escape["error"]
    assert deleted["ok"]  # the user's own agent may remove a starter skill; its history keeps it
    assert missing["error"] == "skill_manage: write_file needs file_path"
    assert "-p no:randomly -x" in (hermes_home / "skills/testing/flaky-tests/SKILL.md").read_text()
    prompts = {system_prompt(r) for r in fake_provider.requests}
    assert len(prompts) == 1 and "flaky-tests" not in prompts.pop()  # built once per session
    agent.new_session()
    agent.chat("new session")
    fresh = system_prompt(fake_provider.requests[-1])
    assert "testing:\n- flaky-tests: Tame flaky pytest tests." in fresh and "code-review" not in fresh
