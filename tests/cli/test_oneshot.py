"""`hermes -z` / `hermes chat -q`: stdout/stderr split and exit codes, as real subprocesses."""
from __future__ import annotations

from tests.cli.conftest import hermes_env, run_hermes
from tests.fake_provider import error, text, tool_calls


def test_z_prints_only_the_answer(hermes, fake_provider):
    fake_provider.queue(text("The answer is 42."))
    res = hermes("-z", "what is the answer?")
    assert res.returncode == 0, res.stderr
    assert res.stdout == "The answer is 42.\n"
    assert "Traceback" not in res.stderr
    assert fake_provider.requests[0]["messages"][-1]["content"] == "what is the answer?"


def test_q_answer_on_stdout_tool_progress_on_stderr(hermes, fake_provider, tmp_path):
    note = tmp_path / "note.txt"
    note.write_text("the secret word is pineapple\n")
    fake_provider.queue(tool_calls([("read_file", {"path": str(note)})]), text("It says pineapple."))
    res = hermes("chat", "-q", "what does note.txt say?")
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "It says pineapple."
    line = next(ln for ln in res.stderr.splitlines() if "✓ read_file" in ln)
    shown = line.split("✓ read_file", 1)[1].split()[0]  # the path, cut with "…" when it is long
    assert shown == str(note) or (shown.endswith("…") and str(note).startswith(shown[:-1]))
    assert "read_file" not in res.stdout
    tool_msg = [m for m in fake_provider.requests[-1]["messages"] if m["role"] == "tool"][0]
    assert "pineapple" in tool_msg["content"]


def test_flags_reach_the_provider(hermes, fake_provider):
    res = hermes("-z", "hi", "-m", "my-model", "-t", "todo", "--max-turns", "3")
    assert res.returncode == 0, res.stderr
    body = fake_provider.requests[0]
    assert body["model"] == "my-model"
    names = {t["function"]["name"] for t in body.get("tools") or []}
    assert names and all("todo" in n for n in names)


def test_base_url_flag_beats_the_environment(fake_provider):
    env = hermes_env(None, OPENAI_BASE_URL="http://127.0.0.1:9/v1", OPENAI_API_KEY="test")
    res = run_hermes("-z", "hi", "--base-url", fake_provider.base_url, env=env)
    assert res.returncode == 0, res.stderr
    assert res.stdout == "ok\n"


def test_provider_error_is_one_line_and_nonzero(hermes, fake_provider):
    for args in (("-z", "hi"), ("chat", "-q", "hi")):
        fake_provider.queue(error(401, "Invalid API key", type="invalid_request_error", code="invalid_api_key"))
        res = hermes(*args)
        assert res.returncode != 0
        assert res.stdout == ""
        errors = [line for line in res.stderr.splitlines() if line.startswith("hermes: error:")]
        assert len(errors) == 1, res.stderr
        assert "Traceback" not in res.stderr


def test_unreachable_provider_is_one_line(hermes_home):
    env = hermes_env(None, OPENAI_BASE_URL="http://127.0.0.1:9/v1", OPENAI_API_KEY="test")
    res = run_hermes("-z", "hi", env=env)
    assert res.returncode != 0
    assert res.stdout == ""
    assert "Traceback" not in res.stderr
    assert res.stderr.count("hermes: error:") == 1


def test_continue_and_resume(hermes, fake_provider):
    fake_provider.queue(text("first answer"))
    assert hermes("-z", "remember the colour teal").returncode == 0
    fake_provider.queue(text("teal"))
    res = hermes("-z", "which colour?", "-c")
    assert res.returncode == 0, res.stderr
    contents = [m.get("content") for m in fake_provider.requests[-1]["messages"]]
    assert "remember the colour teal" in contents and "first answer" in contents

    res = hermes("-z", "hi", "-r", "no-such-session")
    assert res.returncode == 1
    assert res.stderr.strip().startswith("hermes: error: no session matches")


def test_stdin_message_when_not_a_terminal(hermes, fake_provider):
    fake_provider.queue(text("piped answer"))
    res = hermes(input="question from a pipe\n")
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "piped answer"
    assert fake_provider.requests[0]["messages"][-1]["content"].strip() == "question from a pipe"


def test_dangerous_command_without_a_terminal_is_denied(hermes, fake_provider, tmp_path):
    victim = tmp_path / "somedir"
    victim.mkdir()
    fake_provider.queue(tool_calls([("terminal", {"command": f"rm -rf {victim}"})]), text("not deleted"))
    res = hermes("chat", "-q", "delete it")
    assert res.returncode == 0, res.stderr
    assert victim.is_dir()
    assert "--yolo" in res.stderr

    fake_provider.queue(tool_calls([("terminal", {"command": f"rm -rf {victim}"})]), text("deleted"))
    res = hermes("chat", "-q", "delete it", "--yolo")
    assert res.returncode == 0, res.stderr
    assert not victim.exists()


def test_junk_config_is_one_line_exit_2(hermes, hermes_home, fake_provider):
    (hermes_home / "config.yaml").write_text("model: [unclosed\n  : :\n")
    for args in (("-z", "hi"), ("chat", "-q", "hi"), ("config", "show")):
        res = hermes(*args)
        assert res.returncode == 2, (args, res.stderr)
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("hermes: error:") and "config.yaml" in lines[0]
    assert fake_provider.requests == []

    (hermes_home / "config.yaml").write_text("compression:\n  threshold: lots\n")
    res = hermes("-z", "hi")
    assert res.returncode == 2
    assert "compression.threshold" in res.stderr and res.stderr.count("\n") == 1

    (hermes_home / "config.yaml").write_bytes(b"model: \xff\xfe\n")
    res = hermes("-z", "hi")
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "UTF-8" in res.stderr


def test_debug_shows_the_traceback(hermes, hermes_home):
    (hermes_home / "config.yaml").write_text("- just\n- a list\n")
    res = hermes("-z", "hi", "--debug")
    assert res.returncode == 2
    assert "Traceback" in res.stderr and "hermes: error:" in res.stderr


def test_bad_turn_limits_and_empty_messages_are_refused(hermes, fake_provider):
    for args in (("-z", "hi", "--max-turns", "0"), ("-z", "hi", "--max-turns", "-1"), ("-z", "hi", "--max-turns", "x")):
        res = hermes(*args)
        assert res.returncode == 2 and "--max-turns" in res.stderr, (args, res.stderr)
    res = hermes("-z", "   ")
    assert res.returncode == 1 and res.stderr.strip().splitlines() == [
        "hermes: error: the message is empty; give the question after -q or -z"]
    assert fake_provider.requests == []
