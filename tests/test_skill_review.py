"""The background skill review with a real agent and the loopback provider scripting both the user's
turn and the review's calls: when it runs, what it may touch, that it never delays the answer,
never runs twice at once for a session and is not stored as a session."""
from __future__ import annotations

import json
import threading

import pytest

from tools.skills import history
from agent import skill_review as review
from tests.conftest import write_config
from tests.fake_provider import error, text, tool_calls
from tests.test_skills_loader import write_skill


class Script:
    """Replies for the user's turns and for the review, told apart by the review's instructions."""

    def __init__(self, fp) -> None:
        self.main: list = []
        self.review: list = []
        self.review_requests: list[dict] = []
        self.gate: threading.Event | None = None  # set: the review's first reply waits for it
        fp.handler = self

    def __call__(self, body: dict):
        if review.INSTRUCTIONS in body["messages"][0]["content"]:
            self.review_requests.append(body)
            if self.gate is not None and len(self.review_requests) == 1:
                assert self.gate.wait(30)
            return self.review.pop(0)
        return self.main.pop(0)


def busy_turn(n: int, answer: str = "done", view: str | None = None) -> list:
    calls = [("todo", {"todos": [{"id": str(i), "content": f"step {i}"}]}) for i in range(n)]
    if view:
        calls[0] = ("skill_view", {"name": view})
    return [tool_calls(calls), text(answer)]


@pytest.fixture
def deploy(hermes_home):
    return write_skill(hermes_home / "skills", "devops/deploy", "name: deploy\ndescription: Deploy to staging.",
                       body="1. make deploy\n")


def test_a_tool_heavy_turn_is_reviewed_after_the_answer(make_agent, fake_provider, hermes_home, deploy):
    script = Script(fake_provider)
    script.main += busy_turn(10, "deployed", view="deploy")
    script.review += [tool_calls([("skill_manage", {"action": "patch", "name": "deploy",
                                                    "old_string": "1. make deploy",
                                                    "new_string": "1. make deploy\n2. curl /health"})]),
                      text("patched deploy")]
    script.gate = threading.Event()
    agent = make_agent()
    seen: list[str] = []
    res = agent.run_conversation("deploy it")
    assert res["final_response"] == "deployed"
    started = review.after_turn(agent, res, seen.append)
    assert started is not None and started.is_alive()  # the answer is out; the review is still waiting
    assert review.after_turn(agent, res) is None  # one at a time per session
    script.gate.set()
    started.join(30)
    assert seen == [started.outcome] and started.outcome.startswith("Skill review: patched 'deploy'")
    assert "2. curl /health" in (deploy / "SKILL.md").read_text()
    assert [v.by for v in history.versions(hermes_home / "skills", "deploy")] == ["review"]

    first = script.review_requests[0]
    assert sorted(t["function"]["name"] for t in first["tools"]) == ["skill_manage", "skill_view", "skills_list"]
    asked = first["messages"][-1]["content"]
    assert asked.startswith("Skills this conversation used: deploy. Prefer patching one of them.")
    assert "USER: deploy it" in asked and "ASSISTANT: deployed" in asked
    assert agent.session_db.count_sessions() == 1  # the review is not a session


def test_the_count_runs_across_turns_and_resets_on_a_skill_write(make_agent, fake_provider, hermes_home):
    write_config(hermes_home, "skills: {creation_nudge_interval: 5}\n")
    script = Script(fake_provider)
    agent = make_agent(config=None)
    for n in (3, 1):
        script.main += busy_turn(n)
        assert review.after_turn(agent, agent.run_conversation("work")) is None
    body = "---\nname: mine\ndescription: My way of working.\n---\n1. work\n"
    script.main += [tool_calls([("todo", {}), ("skill_manage", {"action": "create", "name": "mine",
                                                                "content": body}), ("todo", {})]),
                    text("saved")]
    assert review.after_turn(agent, agent.run_conversation("save it")) is None  # 4 + 3, but a write: 1
    script.main += busy_turn(4)
    script.review += [text("nothing to save")]
    started = review.after_turn(agent, agent.run_conversation("more work"))  # 1 + 4 = 5
    assert started is not None
    started.join(30)
    assert started.outcome is None and started.error is None and started.written == []
    script.main += busy_turn(4)
    assert review.after_turn(agent, agent.run_conversation("again")) is None  # the count restarted


def test_bundled_skills_are_never_edited_by_the_review(make_agent, fake_provider, hermes_home):
    script = Script(fake_provider)
    script.main += busy_turn(10, view="debugging")
    script.review += [tool_calls([("skill_manage", {"action": "patch", "name": "debugging",
                                                    "old_string": "**Reproduce.**", "new_string": "Repro"})]),
                      text("could not")]
    agent = make_agent()
    res = agent.run_conversation("debug this")
    before = (hermes_home / "skills/software-development/debugging/SKILL.md").read_text()
    started = review.after_turn(agent, res, lambda line: pytest.fail(line))
    started.join(30)
    answer = json.loads(script.review_requests[1]["messages"][-1]["content"])
    assert "bundled skill" in answer["error"]
    assert started.outcome is None
    assert (hermes_home / "skills/software-development/debugging/SKILL.md").read_text() == before


def test_off_switch_failures_and_turns_that_did_not_finish(make_agent, fake_provider, hermes_home):
    script = Script(fake_provider)
    script.main += busy_turn(12)
    script.review += [error(400, "model does not support tools")]
    agent = make_agent()
    started = review.after_turn(agent, agent.run_conversation("work"))
    started.join(30)
    assert started.outcome is None and "does not support tools" in started.error  # logged, nothing shown
    script.main += busy_turn(12)
    res = agent.run_conversation("work")
    assert review.after_turn(agent, dict(res, completed=False)) is None
    assert review.after_turn(agent, dict(res, interrupted=True)) is None

    write_config(hermes_home, "skills: {auto_create: false}\n")
    off = make_agent(config=None)
    script.main += busy_turn(12)
    assert review.after_turn(off, off.run_conversation("work")) is None
    no_skills = make_agent(enabled_toolsets=["todo"])
    script.main += busy_turn(12)
    assert review.after_turn(no_skills, no_skills.run_conversation("work")) is None
    assert script.review == []
