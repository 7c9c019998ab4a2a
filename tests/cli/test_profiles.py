"""Profiles (issue 25): `hermes -p NAME`, HERMES_PROFILE and `hermes profile use` run in
HERMES_HOME/profiles/NAME with its own config and sessions; `hermes profile
list|create|use|delete|show`. Real `hermes` subprocesses against the loopback provider."""
from __future__ import annotations

import json

import pytest

from hermes_core.profiles import ProfileError, take_flag
from tests.cli.conftest import hermes_env, run_hermes
from tests.fake_provider import text


def _sessions(env: dict) -> list[dict]:
    res = run_hermes("sessions", "list", "--json", env=env)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_profiles_keep_their_own_config_and_sessions(fake_provider, hermes_home):
    env = hermes_env(fake_provider)
    made = run_hermes("profile", "create", "work", env=env)
    assert made.returncode == 0, made.stderr
    work = hermes_home / "profiles" / "work"
    assert work.is_dir() and (work.stat().st_mode & 0o077) == 0
    (work / "config.yaml").write_text("model:\n  default: work-model\n")
    fake_provider.queue(text("from work"), text("from root"))
    res = run_hermes("-p", "work", "-z", "hi from work", env=env)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "from work"
    assert fake_provider.requests[-1]["model"] == "work-model"
    res = run_hermes("-z", "hi from root", env={**env, "HERMES_MODEL": "root-model"})
    assert res.returncode == 0 and fake_provider.requests[-1]["model"] == "root-model"
    assert (work / "state.db").is_file() and (hermes_home / "state.db").is_file()
    assert len(_sessions({**env, "HERMES_PROFILE": "work"})) == 1
    assert len(_sessions(env)) == 1

    listed = json.loads(run_hermes("profile", "list", "--json", env=env).stdout)
    assert [(r["name"], r["active"], r["default"]) for r in listed] == [
        ("default", True, True), ("work", False, False)]
    shown = run_hermes("-p", "work", "profile", "show", env=env)
    assert "path:     " + str(work) in shown.stdout and "work-model" in shown.stdout


def test_use_sets_the_default_and_delete_falls_back_to_the_root(fake_provider, hermes_home):
    env = hermes_env(fake_provider)
    assert run_hermes("profile", "create", "home", env=env).returncode == 0
    assert run_hermes("profile", "use", "home", env=env).returncode == 0
    listed = run_hermes("profile", "list", env=env).stdout
    assert "* home" in listed and "(default)" in listed.splitlines()[1]
    fake_provider.queue(text("ok"))
    assert run_hermes("-z", "hi", env=env).returncode == 0
    assert (hermes_home / "profiles" / "home" / "state.db").is_file()
    assert not (hermes_home / "state.db").exists()
    # -p and HERMES_PROFILE beat the sticky default
    assert "* default" in run_hermes("-p", "default", "profile", "list", env=env).stdout

    refused = run_hermes("profile", "delete", "home", env=env)
    assert refused.returncode == 2 and "rerun with --yes" in refused.stderr
    assert run_hermes("profile", "delete", "home", "--yes", env=env).returncode == 0
    assert not (hermes_home / "profiles" / "home").exists()
    assert "* default" in run_hermes("profile", "list", env=env).stdout


def test_an_unknown_or_bad_profile_is_one_line_and_touches_nothing(fake_provider, hermes_home):
    env = hermes_env(fake_provider)
    res = run_hermes("-p", "nope", "-z", "hi", env=env)
    assert res.returncode == 2 and res.stderr.count("\n") == 1
    assert "profile 'nope' does not exist" in res.stderr
    assert "hermes profile create nope" in res.stderr
    res = run_hermes("profile", "create", "../evil", env=env)
    assert res.returncode == 2 and "invalid profile name" in res.stderr
    assert fake_provider.requests == [] and not (hermes_home / "profiles").exists()


def test_the_profile_flag_is_taken_only_before_the_command():
    assert take_flag(["-p", "work", "chat"]) == ("work", ["chat"])
    assert take_flag(["--profile=w", "-z", "-p"]) == ("w", ["-z", "-p"])
    assert take_flag(["-m", "-p", "-z", "x"]) == (None, ["-m", "-p", "-z", "x"])
    assert take_flag(["cron", "create", "-p", "do it"]) == (None, ["cron", "create", "-p", "do it"])
    assert take_flag(["-pwork"]) == ("work", [])
    with pytest.raises(ProfileError):
        take_flag(["-p"])
