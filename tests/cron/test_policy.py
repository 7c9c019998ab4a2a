"""Job owners and run policies (issue 20 items 1-2), the pure decisions of ``cron.policy``."""
from __future__ import annotations

import pytest

from cron.delivery import parse_targets
from cron.policy import (RunPolicy, creator_policy, delivery_problem, run_limits, visible,
                         workdir_problem)


def test_who_sees_a_job():
    job = {"owner": "telegram:1"}
    assert visible(job, None) and visible(job, "telegram:1") and not visible(job, "telegram:2")
    assert visible({"owner": None}, None) and not visible({"owner": None}, "telegram:1")


def test_a_policy_is_recorded_for_everyone_but_the_terminal(tmp_path):
    assert creator_policy("cli", None, None, "allow") is None
    confined = creator_policy("telegram", ["file", "todo"], tmp_path, "ask")
    assert confined == RunPolicy(("file", "todo"), str(tmp_path.resolve()), "ask")
    assert RunPolicy.from_json(confined.as_json()) == confined
    assert creator_policy("cli", None, tmp_path, None).confine_to == str(tmp_path.resolve())
    assert RunPolicy.from_json(None) is None and RunPolicy.from_json({"mutations": "yes"}).mutations is None


def test_workdir_and_delivery_rules(tmp_path):
    policy = RunPolicy(("file",), str(tmp_path), None)
    assert workdir_problem(str(tmp_path / "a" / "b"), policy) is None
    assert "outside the working directory" in workdir_problem("/etc", policy)
    assert "outside" in workdir_problem(str(tmp_path / ".." / "x"), policy)
    assert workdir_problem("/etc", None) is None
    origin = {"platform": "telegram", "chat_id": "42"}
    for ok in ("origin", "local", "telegram:42", "origin,local"):
        assert delivery_problem(parse_targets(ok, origin), origin, "telegram:42") is None, ok
    for bad in ("telegram:-1001", "telegram:43", "origin,telegram:7"):
        assert "only to this chat" in delivery_problem(parse_targets(bad, origin), origin, "telegram:42")
    assert delivery_problem(parse_targets("telegram:-1001", origin), origin, None) is None


def test_run_limits(tmp_path):
    known, never = ["terminal", "file", "cronjob", "delegation"], ("cronjob", "delegation")
    policy = RunPolicy(("file", "cronjob", "mcp-gone"), str(tmp_path), "allow")
    limits = run_limits(policy, None, known, never)
    assert limits == {"enabled_toolsets": ["file"], "disabled_toolsets": ["cronjob", "delegation"],
                      "confine_to": str(tmp_path), "cwd": str(tmp_path), "mutating_tools": "allow"}
    assert run_limits(None, "/w", known, never) == {"disabled_toolsets": ["cronjob", "delegation"],
                                                    "cwd": "/w"}
    with pytest.raises(ValueError, match="outside"):
        run_limits(policy, "/etc", known, never)
