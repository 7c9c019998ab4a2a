"""Skills in the interactive chat, in a real pseudo-terminal: /help and slash completion list them,
`/<skill> text` sends the message with the skill attached, and the background review's one line
appears at the prompt after the answer."""
from __future__ import annotations

from tests.cli.test_repl import PROMPT, Repl
from tests.fake_provider import text, tool_calls
from tests.test_skill_review import Script, busy_turn


def test_help_completion_and_invocation(fake_provider):
    repl = Repl(fake_provider, HERMES_APPROVAL_TIMEOUT="20")
    try:
        out = repl.say("/help", until="Ctrl\\+D quits")
        assert "Skills (your message is sent with the skill attached):" in out
        assert "/debugging [text]" in out and "/release-checklist [text]" in out
        repl.child.send("/debu")
        repl.wait("Find the root cause")  # the completion menu shows the skill's description
        repl.child.sendintr()  # clear the line
        fake_provider.queue(text("Found it: a None."))
        out = repl.say("/debugging the parser crashes on empty input", until="Found it")
        assert "Using skill debugging." in out
        user = fake_provider.requests[0]["messages"][-1]["content"]
        assert "# Debugging routine" in user and user.endswith("the parser crashes on empty input")
        assert "Debugging routine" not in fake_provider.requests[0]["messages"][0]["content"]
        out = repl.say("/frobnicate", until="Unknown command")
        assert len(fake_provider.requests) == 1
        assert repl.quit() == 0
    finally:
        if repl.child.isalive():
            repl.child.terminate(force=True)


def test_the_review_line_appears_after_the_answer(fake_provider, hermes_home):
    script = Script(fake_provider)
    script.main += busy_turn(10, "Ten steps done.")
    body = "---\nname: ten-steps\ndescription: Do ten small steps in order.\n---\n1. plan\n"
    script.review += [tool_calls([("skill_manage", {"action": "create", "name": "ten-steps", "content": body})]),
                      text("created")]
    repl = Repl(fake_provider, HERMES_APPROVAL_TIMEOUT="20")
    try:
        repl.child.send("do the ten steps\r")
        repl.wait("Ten steps done")
        # from the review thread: above the prompt, or before it when the review beat the redraw
        repl.wait("Skill review: created 'ten-steps'")
        repl.wait(PROMPT)
        assert (hermes_home / "skills/ten-steps/SKILL.md").read_text() == body
        out = repl.say("/help", until="Ctrl\\+D quits")
        assert "/ten-steps [text]" in out
        assert repl.quit() == 0
    finally:
        if repl.child.isalive():
            repl.child.terminate(force=True)
