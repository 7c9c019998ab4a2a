"""terminal tool: real bash commands in a temp dir."""

from __future__ import annotations

import json
import threading

import pytest

from tools.registry import ToolContext, ToolError, dispatch


@pytest.fixture
def ctx(tmp_path):
    return ToolContext(cwd=tmp_path)


def run(ctx, command, **extra):
    return json.loads(dispatch("terminal", {"command": command, **extra}, ctx))


def test_echo_and_stderr_combined(ctx):
    out = run(ctx, "echo hello; echo oops >&2")
    assert out["exit_code"] == 0
    assert out["output"] == "hello\noops\n"


def test_exit_codes(ctx):
    assert run(ctx, "exit 7")["exit_code"] == 7
    assert run(ctx, "false")["exit_code"] == 1
    assert run(ctx, "definitely-not-a-command-xyz")["exit_code"] == 127


def test_runs_in_cwd_and_workdir(ctx, tmp_path):
    (tmp_path / "sub").mkdir()
    assert run(ctx, "pwd")["output"].strip() == str(tmp_path)
    assert run(ctx, "pwd", workdir="sub")["output"].strip() == str(tmp_path / "sub")
    assert run(ctx, "pwd", workdir=str(tmp_path / "sub"))["output"].strip() == str(tmp_path / "sub")
    with pytest.raises(ToolError, match="does not exist"):
        run(ctx, "pwd", workdir="missing")


def test_stdin_is_closed(ctx):
    out = run(ctx, "cat; echo done")
    assert out["output"].strip() == "done"


@pytest.mark.timeout(30)
def test_timeout_kills_process_group(ctx, tmp_path):
    marker = tmp_path / "late"
    out = run(ctx, f"echo started; (sleep 3; touch {marker}) & sleep 30", timeout=1)
    assert out["exit_code"] is None
    assert "timed out after 1 s" in out["status"]
    assert "started" in out["output"]  # partial output is kept
    # the background child was in the same group and must be gone too
    check = run(ctx, f"sleep 4; test -e {marker} && echo exists || echo absent")
    assert check["output"].strip() == "absent"


@pytest.mark.timeout(30)
def test_ctx_timeout_is_default(tmp_path):
    ctx = ToolContext(cwd=tmp_path, timeout=1)
    out = run(ctx, "sleep 30")
    assert "timed out after 1 s" in out["status"]


@pytest.mark.timeout(30)
def test_interrupt_event_kills(tmp_path):
    event = threading.Event()
    ctx = ToolContext(cwd=tmp_path, interrupt_event=event)
    timer = threading.Timer(0.5, event.set)
    timer.start()
    try:
        out = run(ctx, "echo begin; sleep 30; echo never")
    finally:
        timer.cancel()
    assert out["exit_code"] is None
    assert "interrupted" in out["status"]
    assert "begin" in out["output"] and "never" not in out["output"]


def test_already_interrupted_does_not_run(tmp_path):
    event = threading.Event()
    event.set()
    ctx = ToolContext(cwd=tmp_path, interrupt_event=event)
    out = run(ctx, f"touch {tmp_path / 'ran'}")
    assert "not run" in out["status"]
    assert not (tmp_path / "ran").exists()


def test_huge_output_is_capped_with_note(ctx):
    out = run(ctx, "head -c 2000000 /dev/zero | tr '\\0' a; echo; echo THE-END")
    text = out["output"]
    assert len(text) < ctx.max_output_chars + 200
    assert "characters cut from the middle" in text
    assert text.startswith("aaaa")
    assert text.rstrip().endswith("THE-END")
    cut = int(text.split("[... ")[1].split(" characters")[0].replace(",", ""))
    assert 1_900_000 < cut < 2_000_010


def test_moderate_output_cap_counts_exactly(tmp_path):
    ctx = ToolContext(cwd=tmp_path, max_output_chars=100)
    out = run(ctx, "printf '%0150d' 0")  # 150 chars, below the collector's raw buffer
    assert "[... 50 characters cut from the middle ...]" in out["output"]


def test_dangerous_without_callback_is_denied_and_not_run(ctx, tmp_path):
    victim = tmp_path / "sentinel_dir"
    victim.mkdir()
    (victim / "keep.txt").write_text("precious")
    with pytest.raises(ToolError) as err:
        run(ctx, "rm -rf sentinel_dir")
    msg = str(err.value)
    assert msg.startswith("command denied: recursive delete")
    assert "ask the user" in msg
    assert (victim / "keep.txt").read_text() == "precious"


def test_callback_deny_once_always(tmp_path):
    answers = []
    asked = []

    def cb(command, reason):
        asked.append(command)
        return answers.pop(0)

    ctx = ToolContext(cwd=tmp_path, approval_callback=cb)
    for name in ("a", "b", "c", "d"):
        (tmp_path / name).mkdir()

    answers.append("deny")
    with pytest.raises(ToolError, match="command denied"):
        run(ctx, "rm -rf a")
    assert (tmp_path / "a").exists()

    answers.append("once")
    assert run(ctx, "rm -rf a")["exit_code"] == 0
    assert not (tmp_path / "a").exists()

    answers.append("always")
    assert run(ctx, "rm -rf b")["exit_code"] == 0
    (tmp_path / "b").mkdir()
    assert run(ctx, "rm -rf b")["exit_code"] == 0  # the same command: no second question
    assert not (tmp_path / "b").exists()
    answers.append("deny")  # "always" covered that exact command only, not every recursive delete
    with pytest.raises(ToolError, match="command denied"):
        run(ctx, "rm -r c")
    assert (tmp_path / "c").exists()
    assert asked == ["rm -rf a", "rm -rf a", "rm -rf b", "rm -r c"]


def test_yolo_runs_dangerous(tmp_path):
    (tmp_path / "d").mkdir()
    ctx = ToolContext(cwd=tmp_path, yolo=True)
    assert run(ctx, "rm -rf d")["exit_code"] == 0
    assert not (tmp_path / "d").exists()


@pytest.mark.parametrize("cmd", [
    "rm -rf /",
    "rm -rf / --no-preserve-root",
    ":(){ :|:& };:",
    "bomb() { bomb | bomb & }; bomb",
])
def test_blocked_never_runs_even_with_yolo(tmp_path, cmd):
    marker = tmp_path / "ran"
    asked = []
    ctx = ToolContext(cwd=tmp_path, yolo=True,
                      approval_callback=lambda c, r: asked.append(c) or "always")
    with pytest.raises(ToolError, match="command blocked"):
        run(ctx, f"touch {marker}; {cmd}")
    assert not marker.exists()
    assert asked == []


def test_empty_command(ctx):
    with pytest.raises(ToolError, match="empty"):
        run(ctx, "   ")


def test_ansi_is_stripped(ctx):
    assert run(ctx, r"printf '\033[31mred\033[0m\n'")["output"] == "red\n"


def test_the_shell_gets_no_provider_or_platform_secrets(tmp_path, monkeypatch):
    # issue 15 item 4: `env` in the agent's shell used to print every key Hermes was started with
    from hermes_core.config import parse_config

    secret_env = {
        "OPENAI_API_KEY": "sk-openai-secret-1", "OPENROUTER_API_KEY": "sk-or-secret-22",
        "API_SERVER_KEY": "api-server-secret-3", "TELEGRAM_BOT_TOKEN": "123:telegram-secret",
        "HERMES_AUX_COMPRESSION_API_KEY": "aux-secret-4444", "GITHUB_TOKEN": "ghp_secret_55555",
        "DB_PASSWORD": "hunter2hunter2", "AWS_SECRET_ACCESS_KEY": "aws-secret-666666",
        "INNOCENT_LOOKING": "cfg-model-key-777",  # holds the configured model key: dropped by value
    }
    for name, value in secret_env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("KEEP_ME", "visible")
    cfg = parse_config({"model": {"api_key": "cfg-model-key-777"}})
    out = run(ToolContext(cwd=tmp_path, config=cfg), "env")["output"]
    for name, value in secret_env.items():
        assert f"{name}=" not in out and value not in out
    assert "KEEP_ME=visible" in out and "PATH=" in out and "HOME=" in out
