"""The interactive chat driven in a real pseudo-terminal (pexpect) against the loopback provider."""
from __future__ import annotations

import sys

import pexpect
import pytest

from tests.cli.conftest import ROOT, hermes_env, strip_ansi
from tests.fake_provider import slow, text, tool_calls

PROMPT = "❯"


class Repl:
    """A running `hermes` in a pty; `say` types a line, `wait` reads up to a pattern."""

    def __init__(self, fp, *args: str, dimensions: tuple[int, int] = (40, 160), **env: str) -> None:
        self.fp = fp
        self.child = pexpect.spawn(sys.executable, ["-m", "hermes_cli.main", *args],
                                   env=hermes_env(fp, **env), cwd=str(ROOT), encoding="utf-8",
                                   timeout=30, dimensions=dimensions)
        self.out = ""
        self.wait(PROMPT)

    def wait(self, pattern: str, timeout: float = 30) -> str:
        self.child.expect(pattern, timeout=timeout)
        seen = strip_ansi(self.child.before + self.child.after)
        self.out += seen
        return seen

    def say(self, line: str, until: str = None) -> str:
        """Type a line; return the output up to `until` (then the next prompt)."""
        self.child.send(line + "\r")
        got = self.wait(until) if until else ""
        return got + self.wait(PROMPT)

    def quit(self) -> int:
        self.child.sendcontrol("d")
        self.child.expect(pexpect.EOF, timeout=20)
        self.out += strip_ansi(self.child.before or "")
        self.child.close()
        return self.child.exitstatus


@pytest.fixture
def repl(fake_provider):
    r = Repl(fake_provider, HERMES_APPROVAL_TIMEOUT="20")
    yield r
    if r.child.isalive():
        r.child.terminate(force=True)


def test_message_usage_new_and_unknown_command(repl, fake_provider, hermes_home):
    fake_provider.queue(text("Hello from the **fake** model"))
    repl.say("hi there", until="fake")
    assert len(fake_provider.requests) == 1
    assert fake_provider.requests[0]["messages"][-1]["content"] == "hi there"

    out = repl.say("/usage", until="Compactions: 0")
    assert "1 model calls" in out and "full)" in out

    out = repl.say("/usag", until="Did you mean")
    assert "/usage" in out
    out = repl.say("/frobnicate", until="Unknown command")
    assert len(fake_provider.requests) == 1  # unknown commands never reach the model

    out = repl.say("/new", until="New session")
    fake_provider.queue(text("fresh start"))
    repl.say("second", until="fresh start")
    assert [m["role"] for m in fake_provider.requests[-1]["messages"] if m["role"] != "system"] == ["user"]

    assert repl.quit() == 0
    assert "Session" in repl.out and "saved" in repl.out
    assert (hermes_home / ".hermes_history").read_text().count("hi there") == 1


def test_compress_summarises_the_middle(repl, fake_provider):
    for i in range(4):
        fake_provider.queue(text(f"answer number {i} " + "words " * 40))
        repl.say(f"question number {i} " + "filler " * 40, until=f"answer number {i}")
    fake_provider.queue(text("## Goal\nAnswer numbered questions.\n## Current state\nFour questions answered."))
    out = repl.say("/compress", until="tokens")
    assert "Compressed" in out
    assert len(fake_provider.requests) == 5  # the summary call
    repl.say("/usage", until="Compactions: 1")


def test_ctrl_c_interrupts_a_slow_reply_and_the_session_goes_on(repl, fake_provider):
    fake_provider.queue(slow(text("too late"), 30))
    repl.child.send("tell me slowly\r")
    assert fake_provider.wait_for_requests(1, timeout=15)
    repl.child.sendintr()
    repl.wait("Interrupted")
    repl.wait(PROMPT)
    fake_provider.queue(text("back in business"))
    repl.say("are you there?", until="back in business")
    last = fake_provider.requests[-1]["messages"]
    assert last[-1]["content"] == "are you there?"
    assert "too late" not in repl.out


def test_dangerous_command_denied_at_the_prompt(repl, fake_provider, tmp_path):
    victim = tmp_path / "somedir"
    victim.mkdir()
    (victim / "keep.txt").write_text("precious")
    fake_provider.queue(tool_calls([("terminal", {"command": f"rm -rf {victim}"})]), text("I could not delete it."))
    repl.child.send("please delete somedir\r")
    repl.wait(r"Allow\? \[o\]nce / \[a\]lways / \[d\]eny")
    repl.child.send("d\r")
    repl.wait("Denied")
    repl.wait("could not delete")
    repl.wait(PROMPT)
    assert victim.is_dir() and (victim / "keep.txt").read_text() == "precious"
    tool_msgs = [m for m in fake_provider.requests[-1]["messages"] if m["role"] == "tool"]
    assert tool_msgs and "denied" in tool_msgs[-1]["content"]


def test_ctrl_c_twice_at_an_empty_prompt_quits(fake_provider):
    r = Repl(fake_provider)
    r.child.sendintr()
    r.wait("Ctrl\\+C again")
    r.child.sendintr()  # at once: the prompt stayed up, so this is its key press, not a signal
    r.child.expect(pexpect.EOF, timeout=20)
    r.child.close()
    assert r.child.exitstatus == 0
    assert fake_provider.requests == []


def test_typing_between_two_ctrl_c_disarms_quitting(repl, fake_provider):
    repl.child.sendintr()
    repl.wait("Ctrl\\+C again")
    repl.child.send("oops")
    repl.child.sendintr()  # clears the line: what was typed disarmed quitting
    repl.child.sendintr()  # arms again
    repl.wait("Ctrl\\+C again")
    fake_provider.queue(text("still here"))
    repl.say("hello", until="still here")
    assert fake_provider.requests[-1]["messages"][-1]["content"] == "hello"
    assert repl.quit() == 0


def test_unanswered_approval_is_denied_after_the_timeout(fake_provider, tmp_path):
    r = Repl(fake_provider, HERMES_APPROVAL_TIMEOUT="1")
    victim = tmp_path / "somedir"
    victim.mkdir()
    fake_provider.queue(tool_calls([("terminal", {"command": f"rm -rf {victim}"})]), text("left alone"))
    r.child.send("delete somedir\r")
    r.wait("Allow")
    r.wait("No answer within 1s: denied")
    r.wait("left alone")
    r.wait(PROMPT)
    assert victim.is_dir()
    assert r.quit() == 0


def test_multiline_input_help_and_ctrl_c_clears_the_line(repl, fake_provider):
    out = repl.say("/help", until="/quit")
    assert "/resume" in out and "/compress" in out
    repl.child.send("typed by mistake")
    repl.child.sendintr()  # clears the line, does not quit
    fake_provider.queue(text("two lines received"))
    repl.child.send("line one\x1b\rline two\r")  # Esc+Enter inserts a newline, Enter sends
    repl.wait("two lines received")
    repl.wait(PROMPT)
    assert fake_provider.requests[-1]["messages"][-1]["content"] == "line one\nline two"
    assert len(fake_provider.requests) == 1
    assert repl.quit() == 0


def test_setup_wizard_in_a_terminal(fake_provider, hermes_home):
    import yaml

    child = pexpect.spawn(sys.executable, ["-m", "hermes_cli.main", "setup"], env=hermes_env(None),
                          cwd=str(ROOT), encoding="utf-8", timeout=30)
    child.expect("Choose 1, 2 or 3")
    child.sendline("2")
    child.expect("Base URL")
    child.sendline(fake_provider.base_url)
    child.expect("API key")  # before the models list is asked for: the endpoint may need it
    child.sendline("sk-wizard-0123456789abcdef")
    child.expect(r"Model name \[fake-model\]")  # the one the endpoint lists is offered
    child.sendline("wizard-model")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    cfg = yaml.safe_load((hermes_home / "config.yaml").read_text())
    assert cfg["model"] == {"provider": "custom", "base_url": fake_provider.base_url, "default": "wizard-model"}
    env_file = hermes_home / ".env"
    assert (env_file.stat().st_mode & 0o777) == 0o600
    assert "sk-wizard-0123456789abcdef" in env_file.read_text()
    assert "sk-wizard-0123456789abcdef" not in strip_ansi(child.before or "")


def test_ctrl_c_at_the_approval_prompt_denies_and_interrupts(repl, fake_provider, tmp_path):
    victim = tmp_path / "somedir"
    victim.mkdir()
    fake_provider.queue(tool_calls([("terminal", {"command": f"rm -rf {victim}"})]))
    repl.child.send("delete somedir\r")
    repl.wait("Allow")
    repl.child.sendintr()
    repl.wait("Interrupted")
    repl.wait(PROMPT)
    assert victim.is_dir()
    assert len(fake_provider.requests) == 1  # the turn stopped: no call after the denied tool
    fake_provider.queue(text("still here"))
    repl.say("hello again", until="still here")
    assert repl.quit() == 0
