"""End to end on the embedded model: `hermes` with nothing configured answers, and its tool calls run
only with the user's consent (asked in the REPL, refused in one-shot runs), always in a scratch directory."""
from __future__ import annotations

import pytest

from tests.cli.conftest import hermes_env, run_hermes
from tests.local_model import needs_model, sigill_preload


pytestmark = needs_model
SLOW = pytest.mark.timeout(900)  # a few runs of the model on a busy machine


def _must_call_tools() -> None:
    """Deterministic runs: greedy sampling (the embedded model's default) and the first reply of
    the turn bound by the grammar to a tool call (config model.tool_choice: required)."""
    from hermes_core.config import hermes_home
    from tests.conftest import write_config

    write_config(hermes_home(), "model:\n  tool_choice: required\n")


def _tool_rows() -> tuple[list[dict], list[dict]]:
    """Tool calls and results of the newest session."""
    from hermes_state import SessionDB

    with SessionDB() as db:
        session = db.list_sessions(limit=1)[0]
        msgs = db.get_messages(session["id"])
    calls = [m for m in msgs if m["role"] == "assistant" and m.get("tool_calls")]
    return calls, [m for m in msgs if m["role"] == "tool"]


def test_unconfigured_hermes_answers_on_the_embedded_model(hermes_home):
    res = run_hermes("-z", "Say hello.", "-t", "none", env=hermes_env(), timeout=240)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() and "[called" not in res.stdout
    notices = [line for line in res.stderr.splitlines() if "embedded local model" in line]
    assert len(notices) == 1 and "hermes setup" in notices[0] and "OPENAI_BASE_URL" in notices[0]


@SLOW
def test_one_shot_refuses_the_embedded_models_changes_without_yolo(hermes_home, tmp_path):
    # issue 15 item 10: the 135M model wrote files and ran shell commands nobody asked for. In a
    # one-shot run there is no one to ask, so changes are refused (--yolo allows them). The scratch
    # directory is the working directory: whatever the model picks, nothing may appear in it.
    work = tmp_path / "work"
    work.mkdir()
    _must_call_tools()
    res = run_hermes("chat", "-q", "Run the shell command: echo hello", "-t", "terminal",
                     "--max-turns", "1", env=hermes_env(), timeout=240, cwd=work)
    assert "Traceback" not in res.stderr
    assert "[called" not in res.stdout  # never a tool call printed as the answer
    assert "✗ terminal" in res.stderr and "refused" in res.stderr, res.stderr[-500:]
    assert res.returncode == 1 and "no final answer" in res.stderr  # --max-turns 1: the call was the turn
    calls, results = _tool_rows()
    assert calls and calls[0]["tool_calls"][0]["function"]["name"] == "terminal"
    assert results and "refused" in results[0]["content"] and '"exit_code"' not in results[0]["content"]
    assert list(work.iterdir()) == []


def _repl_attempt(work) -> str | None:
    """One REPL run: the message, then /quit typed ahead. The question when the model called the
    tool (answered "once"), None when it answered without calling it (the REPL just quits)."""
    import sys

    import pexpect

    from tests.cli.conftest import strip_ansi

    child = pexpect.spawn(sys.executable, ["-m", "hermes_cli.main", "-t", "terminal", "--max-turns", "1"],
                          env=hermes_env(HERMES_APPROVAL_TIMEOUT="60"), cwd=str(work), encoding="utf-8",
                          timeout=240, dimensions=(40, 160))
    try:
        child.expect("❯")
        child.send("Run the shell command: echo hello\r")
        child.send("/quit\r")  # typed ahead: quits at once if no question comes
        if child.expect([r"\[o\]nce / \[a\]lways / \[d\]eny", pexpect.EOF]) == 1:
            assert "[called" not in strip_ansi(child.before)
            return None
        question = strip_ansi(child.before)
        child.send("o\r")
        child.expect(r"[✓✗] terminal")
        if child.expect(["❯", pexpect.EOF]) == 0:
            assert "[called" not in strip_ansi(child.before)
            child.sendcontrol("d")
            child.expect(pexpect.EOF, timeout=30)
        return question
    finally:
        if child.isalive():
            child.terminate(force=True)


@SLOW
def test_the_repl_asks_before_the_embedded_model_runs_a_tool(hermes_home, tmp_path):
    # the grammar-constrained handler emits the call (the model picks its arguments, so it runs in a
    # scratch directory); the user approves it once, then it really runs: consent, not --yolo
    work = tmp_path / "work"
    work.mkdir()
    _must_call_tools()
    question = _repl_attempt(work)
    assert question is not None, "the model never called the tool"
    assert "needs your approval" in question and "terminal command=" in question
    assert "this exact command" in question
    calls, results = _tool_rows()
    assert calls and calls[0]["tool_calls"][0]["function"]["name"] == "terminal"
    assert results and ('"exit_code"' in results[0]["content"] or "terminal:" in results[0]["content"])
    assert "not approved" not in results[0]["content"]


def test_a_crashing_model_ends_the_one_shot_run_with_one_clear_line(hermes_home, tmp_path):
    # issue 19: on a CPU the build does not suit, llama.cpp dies of SIGILL. In its own child that
    # is one failed request: the message is kept, the error says what happened and what to do.
    env = hermes_env(LD_PRELOAD=sigill_preload(tmp_path))
    res = run_hermes("-z", "Say hello.", "-t", "none", env=env, timeout=120)
    assert res.returncode == 1, (res.stdout, res.stderr)
    assert "Illegal instruction" not in res.stderr and "Traceback" not in res.stderr
    errors = [ln for ln in res.stderr.splitlines() if "The embedded model stopped" in ln]
    assert len(errors) == 1, res.stderr
    assert "killed by SIGILL" in errors[0] and "hermes setup" in errors[0]
    from hermes_state import SessionDB

    with SessionDB() as db:
        session = db.list_sessions(limit=1)[0]
        users = [m["content"] for m in db.get_messages(session["id"]) if m["role"] == "user"]
    assert users == ["Say hello."]


def test_doctor_reports_a_crashing_model_with_its_signal(hermes_home, tmp_path):
    env = hermes_env(LD_PRELOAD=sigill_preload(tmp_path))
    res = run_hermes("doctor", env=env, timeout=180)
    line = next(ln for ln in res.stdout.splitlines() if "local model:" in ln)
    assert "killed by SIGILL" in line and "all good" not in line, res.stdout
    assert res.returncode != 0
