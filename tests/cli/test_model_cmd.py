"""`hermes model` and `/model` (issue 25): the endpoint's own list (OpenAI's /v1/models,
Anthropic's models list), a choice saved to config.yaml, a session switch that takes the new
model's window. Real `hermes` subprocesses and a real ChatSession against the loopback servers."""
from __future__ import annotations

import io
from types import SimpleNamespace

from hermes_core.config import load_config
from tests.cli.conftest import hermes_env, run_hermes
from tests.fake_provider import text


def test_list_then_save_then_use(fake_provider, hermes_home):
    fake_provider.models = ["small-model", "big-model"]
    env = hermes_env(fake_provider)
    listed = run_hermes("model", env=env)
    assert listed.returncode == 0, listed.stderr
    assert "1. small-model" in listed.stdout and "2. big-model" in listed.stdout
    saved = run_hermes("model", "big-model", env=env)
    assert saved.returncode == 0, saved.stderr
    assert "model.default = 'big-model'" in saved.stdout
    assert "* " in run_hermes("model", env=env).stdout.split("big-model")[0].splitlines()[-1]
    fake_provider.queue(text("hi"))
    assert run_hermes("-z", "hi", env=env).returncode == 0
    assert fake_provider.requests[-1]["model"] == "big-model"
    odd = run_hermes("model", "nope-model", env=env)
    assert odd.returncode == 0 and "does not list nope-model" in odd.stderr


def test_anthropic_models_list_with_windows(fake_anthropic, hermes_home):
    env = hermes_env(None, ANTHROPIC_BASE_URL=fake_anthropic.base_url,
                     ANTHROPIC_API_KEY="sk-ant-test")
    res = run_hermes("--provider", "anthropic", "model", "claude-fake-1", env=env)
    assert res.returncode == 0, res.stderr
    assert "model.provider = 'anthropic'" in res.stdout
    listed = run_hermes("model", env=env)
    assert "* " in listed.stdout and "claude-fake-1  (200,000 tokens)" in listed.stdout


def test_slash_model_lists_and_switches_with_the_window(fake_provider, hermes_home):
    from hermes_cli.agent_factory import build_agent
    from hermes_cli.chat import ChatSession
    from hermes_cli.render import Renderer
    from hermes_state import SessionDB

    fake_provider.models = ["fake-model", "claude-like-model"]
    args = SimpleNamespace(model="fake-model", provider=None, base_url=fake_provider.base_url,
                           api_key="test", toolsets=None, resume=None, continue_last=False,
                           max_turns=None, yolo=False, debug=False)
    out = io.StringIO()
    db = SessionDB()
    chat = ChatSession(lambda sid: build_agent(args, load_config(), session_db=db, session_id=sid),
                       Renderer(out=out, spinner=False), db=db)
    chat.handle_line("/model")
    assert "1. fake-model" in out.getvalue() and "2. claude-like-model" in out.getvalue()
    chat.handle_line("/model claude-like-model")
    assert "200,000-token window" in out.getvalue()
    assert chat.agent.context_compressor.context_length == 200_000
    fake_provider.queue(text("switched"))
    chat.handle_line("hello")
    assert fake_provider.requests[-1]["model"] == "claude-like-model"


def test_doctor_asks_anthropic_its_own_way(fake_anthropic, hermes_home):
    env = hermes_env(None, ANTHROPIC_BASE_URL=fake_anthropic.base_url,
                     ANTHROPIC_API_KEY="sk-ant-test", HERMES_PROVIDER="anthropic")
    res = run_hermes("doctor", env=env)
    line = next(x for x in res.stdout.splitlines() if x[2:].startswith("provider:"))
    assert line.startswith("✓") and "1 model listed" in line, line


def spawn_model(fake_provider):
    import sys

    import pexpect

    fake_provider.models = ["small-model", "big-model", "huge-model"]
    child = pexpect.spawn(sys.executable, ["-m", "hermes_cli.main", "model"],
                          env=hermes_env(fake_provider), encoding="utf-8", timeout=60,
                          dimensions=(40, 120))
    child.expect("Number or name")
    assert "1. small-model" in child.before and "3. huge-model" in child.before
    return child


def saved_model(hermes_home):
    path = hermes_home / "config.yaml"
    return load_config(path).model.default if path.exists() else None


def test_interactive_pick_in_a_terminal_reasks_on_bad_input(fake_provider, hermes_home):
    import pexpect

    child = spawn_model(fake_provider)
    for bad in ("9", "bigg-model"):  # out of range, then a name the list does not hold
        child.sendline(bad)
        child.expect("is not one of the list: give a number from 1 to 3")
        child.expect("Number or name")
        assert saved_model(hermes_home) is None
    child.sendline("2")
    child.expect("model.default = 'big-model'")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert saved_model(hermes_home) == "big-model"


def test_interactive_pick_gives_up_without_saving(fake_provider, hermes_home):
    import pexpect

    child = spawn_model(fake_provider)
    for bad in ("0", "abc", "4"):
        child.sendline(bad)
    child.expect("hermes: error: no model picked after 3 answers")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1
    assert saved_model(hermes_home) is None


def test_pick_answer_is_a_listed_number_or_name():
    from hermes_cli.model_cmd import pick_answer

    ids = ["a-1", "b-2"]
    assert [pick_answer(x, ids) for x in ("1", " 2 ", "b-2", "0", "3", "-1", "zz", "2.0")] == [
        "a-1", "b-2", "b-2", None, None, None, None, None]
